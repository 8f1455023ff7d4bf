"""HTTP GET and TCP probes of a flow's dependencies, against the pods of a target Job's task.

A probe only ever reaches a pod's own address or loopback: `refusal` says why any other address
is not probed (a host-network pod's address is its node's, link-local holds cloud metadata
services, and so on), so a JobFlow cannot make the controller reach into the network around
the cluster. A probe passes when every replica of the task is a Running pod that answers
(HTTP status 200-399, or an accepted TCP connection) within `TIMEOUT_SECONDS`.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from typing import Final

from controller.jobflow.decide.probes import NetworkProbe, ProbeOutcome
from shared.wire import WireObject, labels_of, spec_of, status_of

TIMEOUT_SECONDS: Final = 2.0


def refusal(address: str, host_network: bool) -> str | None:
    """None when a probe may reach `address` (a pod's `status.podIP`), else why not."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return f"{address!r} is not an IP address"
    if ip.is_loopback:
        return None
    if host_network:
        return f"{address} is a host-network pod's address (its node's), not a pod address"
    if ip.is_unspecified or ip.is_multicast or ip.is_link_local or ip.is_reserved:
        return f"{address} is not a pod address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return refusal(str(ip.ipv4_mapped), host_network)
    return None


def replicas_of(job: WireObject, task: str) -> int:
    for entry in spec_of(job).get("tasks") or []:
        if isinstance(entry, dict) and entry.get("name") == task:
            return int(entry.get("replicas") or 0)
    return 0


def _answers(probe: NetworkProbe, address: str) -> str | None:
    """None when the pod at `address` answers the probe, else what went wrong."""
    where = f"{address}:{probe.port}"
    target = f"GET http://{where}{probe.path}" if probe.is_http else f"TCP {where}"
    try:
        if probe.is_http:
            connection = http.client.HTTPConnection(address, probe.port, timeout=TIMEOUT_SECONDS)
            try:
                headers = dict([probe.header]) if probe.header else {}
                connection.request("GET", probe.path or "/", headers=headers)
                code = connection.getresponse().status
            finally:
                connection.close()
            if 200 <= code < 400:
                return None
            return f"{target} answered {code}"
        with socket.create_connection((address, probe.port), timeout=TIMEOUT_SECONDS):
            return None
    except (OSError, http.client.HTTPException) as exc:
        return f"{target}: {exc}"


def run_probe(probe: NetworkProbe, job: WireObject, pods: Iterable[WireObject]) -> ProbeOutcome:
    """Probe every pod of the task; `pods` are the target Job's pods."""
    what = f"probe of task {probe.task} of job {probe.target_job}"
    replicas = replicas_of(job, probe.task)
    if replicas == 0:
        return ProbeOutcome(False, f"{what}: job {probe.target_job} has no task {probe.task}")
    running = [
        pod
        for pod in pods
        if labels_of(pod).get("volcano.sh/task-spec") == probe.task
        and status_of(pod).get("phase") == "Running"
        and status_of(pod).get("podIP")
    ]
    if len(running) < replicas:
        return ProbeOutcome(False, f"{what}: {len(running)} of {replicas} pods running")
    for pod in running:
        address = str(status_of(pod)["podIP"])
        refused = refusal(address, bool(spec_of(pod).get("hostNetwork")))
        if refused is not None:
            return ProbeOutcome(False, f"{what}: not probed: {refused}")
        problem = _answers(probe, address)
        if problem is not None:
            return ProbeOutcome(False, f"{what}: {problem}")
    return ProbeOutcome(True)


def run_probes(
    probes: Iterable[NetworkProbe],
    jobs: Mapping[str, WireObject],
    pods_of: Mapping[str, list[WireObject]],
) -> dict[NetworkProbe, ProbeOutcome]:
    """Each probe against its target Job's pods (`pods_of` by Job name)."""
    return {
        probe: run_probe(probe, jobs.get(probe.target_job, {}), pods_of.get(probe.target_job, []))
        for probe in probes
    }
