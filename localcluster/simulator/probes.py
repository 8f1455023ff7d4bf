"""Container probes: when each is due and what its results mean (pure `ProbeTracker`), and the
three handlers (httpGet, tcpSocket, exec) run from the node against the pod's address."""

from __future__ import annotations

import socket
import ssl
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx


@dataclass
class ProbeTracker:
    """One probe of one container run: thresholds as kubelet applies them."""

    spec: Mapping[str, Any]
    started_at: float
    next_at: float = 0.0
    successes: int = 0
    failures: int = 0
    result: bool | None = None  # None until the threshold decides

    def __post_init__(self) -> None:
        self.next_at = self.started_at + float(self.spec.get("initialDelaySeconds") or 0)

    @property
    def period(self) -> float:
        return float(self.spec.get("periodSeconds") or 10)

    @property
    def timeout(self) -> float:
        return float(self.spec.get("timeoutSeconds") or 1)

    def due(self, now: float) -> bool:
        return now >= self.next_at

    def record(self, ok: bool, now: float) -> bool | None:
        """Take one result; return the probe's verdict when it changes (else None)."""
        self.next_at = now + self.period
        if ok:
            self.successes += 1
            self.failures = 0
            if (
                self.successes >= int(self.spec.get("successThreshold") or 1)
                and self.result is not True
            ):
                self.result = True
                return True
        else:
            self.failures += 1
            self.successes = 0
            if (
                self.failures >= int(self.spec.get("failureThreshold") or 3)
                and self.result is not False
            ):
                self.result = False
                return False
        return None


def resolve_port(port: Any, containers: Sequence[Mapping[str, Any]]) -> int:
    """A probe's port: a number, or the name of a containerPort."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for container in containers:
        for declared in container.get("ports") or []:
            if declared.get("name") == port:
                return int(declared["containerPort"])
    raise ValueError(f'no container port named "{port}"')


def probe_ports(containers: Sequence[Mapping[str, Any]]) -> set[int]:
    """Every port the node must reach in the pod: declared ports and probe ports."""
    ports = {
        int(p["containerPort"])
        for c in containers
        for p in c.get("ports") or []
        if p.get("containerPort")
    }
    for container in containers:
        for kind in ("readinessProbe", "livenessProbe", "startupProbe"):
            handler = (container.get(kind) or {}).get("httpGet") or (container.get(kind) or {}).get(
                "tcpSocket"
            )
            if handler and "port" in handler:
                try:
                    ports.add(resolve_port(handler["port"], containers))
                except ValueError:
                    continue
    return ports


def run_probe(
    spec: Mapping[str, Any],
    pod_ip: str,
    containers: Sequence[Mapping[str, Any]],
    exec_prefix: Sequence[str],
) -> bool:
    timeout = float(spec.get("timeoutSeconds") or 1)
    try:
        if "httpGet" in spec:
            handler = spec["httpGet"]
            port = resolve_port(handler.get("port"), containers)
            scheme = str(handler.get("scheme") or "HTTP").lower()
            host = str(handler.get("host") or pod_ip)
            headers = {h["name"]: h["value"] for h in handler.get("httpHeaders") or []}
            url = f"{scheme}://{host}:{port}{handler.get('path') or '/'}"
            # kubelet does not verify a probe's certificate.
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            response = httpx.get(url, headers=headers, timeout=timeout, verify=context)
            return 200 <= response.status_code < 400
        if "tcpSocket" in spec:
            port = resolve_port(spec["tcpSocket"].get("port"), containers)
            with socket.create_connection(
                (str(spec["tcpSocket"].get("host") or pod_ip), port), timeout
            ):
                return True
        if "exec" in spec:
            command = [str(c) for c in spec["exec"].get("command") or []]
            done = subprocess.run(
                [*exec_prefix, *command], capture_output=True, timeout=timeout, check=False
            )
            return done.returncode == 0
    except (OSError, ValueError, httpx.HTTPError, subprocess.TimeoutExpired):
        return False
    return False
