"""Waiting for what `vcjob local up` started: an HTTP health endpoint, a child's readiness (or
the reason it will not get ready), kube-controller-manager's first ServiceAccount and the CRDs in
discovery. Every wait polls briefly, gives up after `STARTUP_TIMEOUT` with where to look, and
stops at once when `stop` is set."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from localcluster.children import PORT_TAKEN_MARKERS, Child, Readiness, log_tail
from localcluster.clusterdir import StartupError
from localcluster.simulator.client import ApiError, KubeClient

log = logging.getLogger("localcluster.up")

# Generous: on a busy laptop or a loaded CI machine kube-apiserver alone can take a minute.
STARTUP_TIMEOUT = 120.0


def check_alive(child: Child, stop: threading.Event) -> None:
    code = child.exited()
    if code is not None:
        raise StartupError(
            f"{child.name} exited with code {code} while starting:\n{log_tail(child.log_path)}"
        )
    if stop.is_set():
        raise StartupError("interrupted while starting")


def wait_http(
    child: Child,
    url: str,
    ca: Path | None,
    token: str | None,
    stop: threading.Event,
    *,
    faulty: bool = False,
) -> None:
    """Wait until `url` answers 200 (any answer at all through the fault proxy)."""
    name = child.name
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with httpx.Client(verify=str(ca) if ca else True, timeout=2.0, headers=headers) as http:
        while True:
            check_alive(child, stop)
            try:
                answer = http.get(url)
                if answer.status_code == 200 or faulty:
                    return
                reason = f"{answer.status_code} {answer.text[:200]}"
            except httpx.HTTPError as err:
                reason = str(err) or type(err).__name__
            if time.monotonic() > deadline:
                raise StartupError(
                    f"{name} was not ready within {STARTUP_TIMEOUT:.0f}s ({reason}); "
                    f"see {child.log_path}"
                )
            stop.wait(0.1)


def wait_for_service_account(
    client: KubeClient, stop: threading.Event, controller_manager_log: Path
) -> None:
    """Pods are refused until kube-controller-manager made the namespace's ServiceAccount."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while True:
        try:
            client.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
            return
        except ApiError as err:
            if err.code != 404 or time.monotonic() > deadline:
                raise StartupError(
                    "kube-controller-manager made no ServiceAccount `default` within "
                    f"{STARTUP_TIMEOUT:.0f}s: {err}; see "
                    f"{controller_manager_log}"
                ) from err
        stop.wait(0.1)


def wait_for_discovery(
    client: KubeClient, crds: Sequence[dict[str, Any]], stop: threading.Event
) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    for crd in crds:
        spec = crd["spec"]
        plural = spec["names"]["plural"]
        for version in (v["name"] for v in spec["versions"] if v.get("served", True)):
            path = f"/apis/{spec['group']}/{version}"
            while True:
                try:
                    listing = client.request("GET", path)
                    if any(r.get("name") == plural for r in listing.get("resources") or []):
                        break
                except ApiError as err:
                    if err.code != 404:
                        raise
                if time.monotonic() > deadline:
                    raise StartupError(
                        f"{plural}.{spec['group']}/{version} is not served "
                        f"after {STARTUP_TIMEOUT:.0f}s"
                    )
                stop.wait(0.1)


def wait_ready(
    child: Child,
    url: str,
    stop: threading.Event,
    children: dict[str, Child],
    echo: Callable[[str], None],
) -> Readiness:
    """Wait for the child's readiness endpoint. MISSING (with a warning) when the installed
    vcjob lacks the command, PORT_TAKEN when another process took one of its ports first; a
    child that exited leaves `children`."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    with httpx.Client(timeout=2.0) as http:
        while True:
            code = child.exited()
            if code is not None:
                children.pop(child.name)
                child.close()
                tail = log_tail(child.log_path, 15)
                if any(marker in tail for marker in PORT_TAKEN_MARKERS):
                    log.warning("port taken, retrying", extra={"component": child.name})
                    return Readiness.PORT_TAKEN
                if child.missing_command():
                    log.warning(
                        "component not available in this build",
                        extra={"component": child.name},
                    )
                    echo(f"warning: `vcjob {child.name}` is not available; going on without it")
                    return Readiness.MISSING
                raise StartupError(
                    f"{child.name} exited with code {code} while starting:\n"
                    + log_tail(child.log_path)
                )
            try:
                if http.get(url).status_code == 200:
                    return Readiness.READY
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise StartupError(
                    f"{child.name} was not ready within {STARTUP_TIMEOUT:.0f}s; "
                    f"see {child.log_path}"
                )
            if stop.wait(0.2):
                raise StartupError("interrupted while starting")
