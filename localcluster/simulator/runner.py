"""The node agent's I/O shell: caches fed by watches, and loops that carry out the pure decisions.

Three loops share the caches: the scheduler (woken by any change), the kubelet (a short tick, since
its steps are due at times) and the heartbeat (node Leases every 10 s, node status every 30 s).
Every API failure is logged and retried on the next round; nothing here assumes a call succeeded
until the server's answer says so.

It stays one module (a little over 500 lines): `Simulator` owns the caches and the three loops
that share them, and each loop is a short carrier of a pure decision made elsewhere (scheduling,
kubelet, nodes).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from localcluster.simulator import kubelet, nodes, scheduling, work
from localcluster.simulator.client import (
    EVENTS,
    JSON_PATCH,
    LEASES,
    NODES,
    PODGROUPS,
    PODS,
    QUEUES,
    STRATEGIC_MERGE_PATCH,
    ApiError,
    KubeClient,
)
from localcluster.simulator.informer import Informer, object_key
from localcluster.simulator.runtime import ProcessRuntime
from shared.labels import QUEUE_ALLOCATION_GATE_KEY
from shared.wire import deletion_timestamp, metadata, spec_of, status_of

log = logging.getLogger(__name__)

KUBELET_TICK = 0.1
SCHEDULER_IDLE_WAIT = 1.0
LEASE_RENEW_PERIOD = nodes.RENEW_INTERVAL_SECONDS
# kubelet reports status every 5 min while its Lease is renewed; more often keeps the conditions'
# lastHeartbeatTime recent for whoever reads them (`kubectl describe node`).
NODE_STATUS_PERIOD = 30.0
ASSUME_TIMEOUT = timedelta(seconds=30)
STEP_MESSAGES = {
    kubelet.Action.START: "pod started",
    kubelet.Action.FINISH: "pod finished",
    kubelet.Action.RESTART: "containers restarted",
    kubelet.Action.KILL: "containers killed",
    kubelet.Action.DELETE: "pod deleted",
}


def _now() -> datetime:
    return datetime.now(UTC)


def build_event(
    involved: Mapping[str, str],
    reason: str,
    message: str,
    component: str,
    now: datetime,
    kind: str = "Warning",
) -> dict[str, Any]:
    """A core/v1 Event about `involved` (apiVersion, kind, namespace, name, uid), as client-go's
    recorder writes one: named after the object and the time, reported by `component`."""
    at = kubelet.timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{involved['name']}.{int(now.timestamp() * 1e9):x}",
            "namespace": involved["namespace"],
        },
        "involvedObject": dict(involved),
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


def pod_reference(namespace: str, name: str, uid: str) -> dict[str, str]:
    return {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid}


def scheduled_event(
    binding: scheduling.Binding, uid: str, scheduler: str, now: datetime
) -> dict[str, Any]:
    """The `Scheduled` event `kubectl describe pod` shows, as kube-scheduler records it."""
    return build_event(
        pod_reference(binding.namespace, binding.pod, uid),
        "Scheduled",
        f"Successfully assigned {binding.namespace}/{binding.pod} to {binding.node}",
        scheduler,
        now,
        kind="Normal",
    )


def lift_queue_gate_patch() -> list[dict[str, Any]]:
    """JSON patch that removes the pod's scheduling gates if they are Volcano's queue gate alone:
    a gate someone else added meanwhile fails the `test`, and stays."""
    return [
        {
            "op": "test",
            "path": "/spec/schedulingGates",
            "value": [{"name": QUEUE_ALLOCATION_GATE_KEY}],
        },
        {"op": "remove", "path": "/spec/schedulingGates"},
    ]


def unschedulable_patch(failure: scheduling.PodSchedulingFailure, now: datetime) -> dict[str, Any]:
    """The strategic merge patch of `pods/status` setting `PodScheduled: False` (merged by type,
    so the pod's other conditions stay), for the pod of that UID only."""
    condition = {
        **failure.condition().as_wire(),
        "lastProbeTime": None,
        "lastTransitionTime": kubelet.timestamp(now),
    }
    patch: dict[str, Any] = {"status": {"conditions": [condition]}}
    if failure.uid:
        patch["metadata"] = {"uid": failure.uid}
    return patch


class Simulator:
    """Gang scheduler `volcano` + the kubelets of the nodes it manages, against one API server."""

    def __init__(
        self,
        client: KubeClient,
        *,
        default_runtime: timedelta,
        stop: threading.Event,
        scheduler_name: str = scheduling.GANG_SCHEDULER,
        gang_scheduling: bool = True,
        now: Callable[[], datetime] = _now,
        runtime: ProcessRuntime | None = None,
        kubelet_port: int = nodes.DEFAULT_KUBELET_PORT,
        node_address: str = nodes.NODE_ADDRESS,
    ) -> None:
        self._client = client
        self._runtime = runtime
        self._default_runtime = default_runtime
        self._stop = stop
        self._scheduler_name = scheduler_name
        self._now = now
        # The port the nodes advertise; the agent moves it when the one it was given is taken.
        self.kubelet_port = kubelet_port
        self._node_address = node_address
        self._wake = threading.Event()
        self.pods = Informer(client, PODS, stop, self._wake.set)
        self.nodes = Informer(client, NODES, stop, self._wake.set)
        self.podgroups = Informer(client, PODGROUPS, stop, self._wake.set)
        self.queues = Informer(client, QUEUES, stop, self._wake.set)
        self._assumed_bindings: dict[str, tuple[str, str, datetime]] = {}
        self._times: dict[str, kubelet.PodTimes] = {}
        # uid -> (monotonic time of the next try, the delay that led to it)
        self._status_retries: dict[str, tuple[float, float]] = {}
        self._scripts: dict[str, kubelet.Script] = {}
        self._work: dict[work.TaskKey, work.Progress] = {}
        self._threads = [
            threading.Thread(target=self._kubelet_loop, name="kubelet"),
            threading.Thread(target=self._heartbeat_loop, name="heartbeat"),
        ]
        # Without it another gang scheduler (Volcano's own) admits PodGroups and binds the
        # pods; the agent only runs what is bound to its nodes.
        self.gang_scheduling = gang_scheduling
        if gang_scheduling:
            self._threads.append(
                threading.Thread(target=self._loop, args=(self.schedule_once,), name="scheduler")
            )

    def start(self) -> None:
        for informer in (self.pods, self.nodes, self.podgroups, self.queues):
            informer.start()
        for thread in self._threads:
            thread.daemon = True
            thread.start()
        log.info(
            "node agent started",
            extra={
                "scheduler": self._scheduler_name if self.gang_scheduling else "external",
                "kubelet_port": self.kubelet_port,
            },
        )

    def join(self, timeout: float) -> None:
        """Wait for the loops (they notice `stop` within a tick); the informers' threads are
        daemons blocked in watches and end with the process."""
        for thread in self._threads:
            thread.join(timeout)

    def _synced(self) -> bool:
        return self.pods.synced.is_set() and self.nodes.synced.is_set()

    def _post_event(self, event: Mapping[str, Any]) -> None:
        """Best effort, one attempt: an event is not worth holding up the next decision."""
        namespace = str(event["metadata"]["namespace"])
        try:
            self._client.request("POST", EVENTS.path(namespace), body=event, attempts=1)
        except ApiError as err:
            log.debug(
                "event not recorded",
                extra={"object": event["involvedObject"].get("name"), "error": str(err)},
            )

    # -- scheduler --------------------------------------------------------------------------

    def _loop(self, step: Callable[[], None]) -> None:
        while not self._stop.is_set():
            self._wake.wait(SCHEDULER_IDLE_WAIT)
            self._wake.clear()
            if self._stop.is_set():
                return
            if not self._synced():
                continue
            try:
                step()
            except ApiError as err:
                log.warning("scheduling round failed", extra={"error": str(err)})
            except Exception:
                log.exception("scheduling round crashed")

    def _pod_views(self) -> list[scheduling.PodView]:
        views = []
        now = self._now()
        for pod in self.pods.snapshot():
            view = scheduling.pod_view(pod)
            key = object_key(pod)
            assumed = self._assumed_bindings.get(key)
            if assumed is not None:
                node, uid, since = assumed
                uid_now = str(metadata(pod).get("uid", ""))
                if view.node_name or uid_now != uid or now - since > ASSUME_TIMEOUT:
                    del self._assumed_bindings[key]
                else:
                    view = replace(view, node_name=node)
            views.append(view)
        live = {f"{v.namespace}/{v.name}" for v in views}
        for key in [k for k in self._assumed_bindings if k not in live]:
            del self._assumed_bindings[key]
        return views

    def schedule_once(self) -> None:
        node_views = [scheduling.node_view(n) for n in self.nodes.snapshot()]
        podgroup_views = (
            [scheduling.podgroup_view(g) for g in self.podgroups.snapshot()]
            if self.podgroups.synced.is_set()
            else []
        )
        queue_views = (
            [scheduling.queue_view(q) for q in self.queues.snapshot()]
            if self.queues.synced.is_set()
            else None
        )
        decisions = scheduling.schedule(
            node_views,
            self._pod_views(),
            podgroup_views,
            self._scheduler_name,
            queues=queue_views,
            now=kubelet.timestamp(self._now()),
        )
        for namespace, name in decisions.admit:
            log.info("podgroup admitted", extra={"namespace": namespace, "podgroup": name})
        for status in decisions.podgroup_status:
            self._write_podgroup_status(status)
        for event in decisions.events:
            self._record_podgroup_event(event)
        for queue_status in decisions.queue_status:
            self._write_queue_status(queue_status)
        for namespace, name in decisions.ungate:
            self._lift_queue_gate(namespace, name)
        for binding in decisions.bind:
            self._bind(binding)
        for failure in decisions.unschedulable_pods:
            self._mark_unschedulable(failure)

    def _lift_queue_gate(self, namespace: str, name: str) -> None:
        """Remove Volcano's queue allocation gate, as Volcano's scheduler does, only while it is
        the pod's one gate (the `test` fails the patch otherwise); the pod is placed once the
        watch brings it back ungated."""
        try:
            updated = self._client.patch(
                PODS, name, lift_queue_gate_patch(), namespace, content_type=JSON_PATCH
            )
        except ApiError as err:
            if not (err.not_found or err.code in (409, 422)):
                log.warning(
                    "lifting the queue gate failed",
                    extra={"namespace": namespace, "pod": name, "error": str(err)},
                )
            return
        self.pods.observe(updated)

    def _write_podgroup_status(self, status: scheduling.PodGroupStatus) -> None:
        """A plain update of the main resource, as Volcano's scheduler writes PodGroup status
        (the PodGroup CRD has no status subresource); a conflict waits for the next round."""
        current = self.podgroups.get(f"{status.namespace}/{status.name}")
        if current is None:
            return
        body = {**current, "status": status.as_status()}
        try:
            updated = self._client.replace(PODGROUPS, body, status.namespace)
        except ApiError as err:
            if not err.not_found:
                log.warning(
                    "podgroup status update failed",
                    extra={
                        "namespace": status.namespace,
                        "podgroup": status.name,
                        "error": str(err),
                    },
                )
            return
        self.podgroups.observe(updated)

    def _write_queue_status(self, update: scheduling.QueueStatus) -> None:
        """UpdateStatus of the whole Queue, as Volcano's scheduler writes `allocated`."""
        current = self.queues.get(update.name)
        if current is None:
            return
        body = {**current, "status": dict(update.status)}
        try:
            updated = self._client.request(
                "PUT", QUEUES.path(None, update.name, "status"), body=body
            )
        except ApiError as err:
            if not err.not_found:
                log.warning(
                    "queue status update failed", extra={"queue": update.name, "error": str(err)}
                )
            return
        self.queues.observe(updated)

    def _record_podgroup_event(self, event: scheduling.PodGroupEvent) -> None:
        """The Warning `kubectl describe podgroup` shows when a gang cannot be scheduled."""
        podgroup = self.podgroups.get(f"{event.namespace}/{event.name}") or {}
        involved = {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "namespace": event.namespace,
            "name": event.name,
            "uid": str(metadata(podgroup).get("uid", "")),
        }
        self._post_event(
            build_event(involved, event.reason, event.message, self._scheduler_name, self._now())
        )

    def _mark_unschedulable(self, failure: scheduling.PodSchedulingFailure) -> None:
        """`PodScheduled: False` with the reason on the pod's status, then the FailedScheduling
        event `kubectl describe pod` shows, as Volcano's scheduler reports a pod it cannot place."""
        now = self._now()
        try:
            updated = self._client.patch(
                PODS,
                failure.name,
                unschedulable_patch(failure, now),
                failure.namespace,
                subresource="status",
                content_type=STRATEGIC_MERGE_PATCH,
            )
        except ApiError as err:
            if not err.not_found:
                log.warning(
                    "pod condition update failed",
                    extra={"namespace": failure.namespace, "pod": failure.name, "error": str(err)},
                )
            return
        self.pods.observe(updated)
        log.info(
            "pod unschedulable",
            extra={"namespace": failure.namespace, "pod": failure.name, "why": failure.message},
        )
        involved = pod_reference(failure.namespace, failure.name, failure.uid)
        self._post_event(
            build_event(
                involved,
                scheduling.FAILED_SCHEDULING,
                failure.message,
                self._scheduler_name,
                now,
            )
        )

    def _bind(self, binding: scheduling.Binding) -> None:
        """POST the pod's `binding` subresource, as kube-scheduler's DefaultBinder does (the API
        server sets spec.nodeName and PodScheduled; nothing else may)."""
        key = f"{binding.namespace}/{binding.pod}"
        pod = self.pods.get(key) or {}
        uid = str(metadata(pod).get("uid", ""))
        self._assumed_bindings[key] = (binding.node, uid, self._now())
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": binding.pod, "namespace": binding.namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": binding.node},
        }
        try:
            self._client.request(
                "POST", PODS.path(binding.namespace, binding.pod, "binding"), body=body
            )
        except ApiError as err:
            self._assumed_bindings.pop(key, None)
            if not err.not_found:
                log.warning(
                    "binding failed",
                    extra={"namespace": binding.namespace, "pod": binding.pod, "error": str(err)},
                )
            return
        log.info(
            "pod bound",
            extra={"namespace": binding.namespace, "pod": binding.pod, "node": binding.node},
        )
        scheduler = str(spec_of(pod).get("schedulerName") or self._scheduler_name)
        self._post_event(scheduled_event(binding, uid, scheduler, self._now()))

    # -- kubelet ----------------------------------------------------------------------------

    def _kubelet_loop(self) -> None:
        while not self._stop.wait(KUBELET_TICK):
            if not self._synced():
                continue
            try:
                self.kubelet_once()
            except Exception:
                log.exception("kubelet round crashed")

    def _pod_times(self, pod: Mapping[str, Any], now: datetime) -> kubelet.PodTimes:
        uid = str(metadata(pod).get("uid") or object_key(pod))
        times = self._times.get(uid) or kubelet.PodTimes(bound_seen=now)
        if times.started is None and status_of(pod).get("startTime"):
            times = replace(times, started=kubelet.container_started_at(pod) or now)
        if times.terminating_seen is None and deletion_timestamp(pod):
            times = replace(times, terminating_seen=now)
        self._times[uid] = times
        return times

    def kubelet_once(self) -> None:
        """One pass of every managed node's kubelet over the pods bound to it (pods on nodes no
        kubelet of this agent serves are left to the node lifecycle controller and pod GC)."""
        now = self._now()
        node_cache = {
            str(n["metadata"]["name"]): n for n in self.nodes.snapshot() if nodes.managed(n)
        }
        seen: set[str] = set()
        pods = [
            p for p in self.pods.snapshot() if str(spec_of(p).get("nodeName") or "") in node_cache
        ]
        self._work, work_done = work.tick(self._work, pods, now)
        for pod in pods:
            node = node_cache[str(pod["spec"]["nodeName"])]
            uid = str(metadata(pod).get("uid") or object_key(pod))
            seen.add(uid)
            times = self._pod_times(pod, now)
            script = self._script(pod, uid)
            if self._runtime is not None and self._runtime.handles(pod):
                self._runtime.sync(pod, nodes.host_ip(node))
                continue
            if self._status_retries.get(uid, (0.0, 0.0))[0] > time.monotonic():
                continue
            step = kubelet.next_step(pod, times, script, nodes.host_ip(node), now)
            if step is None and uid in work_done:
                step = kubelet.Step(kubelet.Action.FINISH, kubelet.finish_status(pod, 0, now))
            if step is not None:
                self._carry_out(pod, uid, step, now)
        if self._runtime is not None:
            self._runtime.retain(seen)
        for uid in [u for u in self._times if u not in seen]:
            del self._times[uid]
            self._scripts.pop(uid, None)
            self._status_retries.pop(uid, None)

    def _script(self, pod: Mapping[str, Any], uid: str) -> kubelet.Script:
        """The pod's script, read once per pod (with one warning per bad annotation)."""
        script = self._scripts.get(uid)
        if script is None:
            script, problems = kubelet.script_for_pod(pod, self._default_runtime)
            for problem in problems:
                log.warning(
                    "pod annotation ignored", extra={"pod": object_key(pod), "problem": problem}
                )
            self._scripts[uid] = script
        return script

    def _carry_out(
        self, pod: Mapping[str, Any], uid: str, step: kubelet.Step, now: datetime
    ) -> None:
        meta = metadata(pod)
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        try:
            if step.action is kubelet.Action.DELETE:
                # As kubelet's status manager: once the containers are stopped, delete at once,
                # but only this pod (a pod re-created under the same name is not touched).
                self._client.delete(
                    PODS, name, namespace, grace_period_seconds=0, uid=str(meta.get("uid", ""))
                )
                log.info("pod deleted", extra={"namespace": namespace, "pod": name})
                return
            updated = self._client.patch(
                PODS, name, {"status": step.status}, namespace, subresource="status"
            )
        except ApiError as err:
            if not (err.not_found or err.code == 409):
                previous = self._status_retries.get(uid)
                delay = kubelet.status_retry_delay(previous[1] if previous else None)
                self._status_retries[uid] = (time.monotonic() + delay, delay)
                log.warning(
                    "pod update failed",
                    extra={
                        "namespace": namespace,
                        "pod": name,
                        "error": str(err),
                        "retry_in_seconds": delay,
                    },
                )
            return
        self._status_retries.pop(uid, None)
        if step.action in (kubelet.Action.START, kubelet.Action.RESTART):
            self._times[uid] = replace(self._times[uid], started=now)
        self.pods.observe(updated)
        phase = (step.status or {}).get("phase")
        log.info(
            STEP_MESSAGES[step.action], extra={"namespace": namespace, "pod": name, "phase": phase}
        )

    # -- heartbeat --------------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        """Renew every managed node's Lease each LEASE_RENEW_PERIOD and post its status each
        NODE_STATUS_PERIOD, both at once on start (a restarted agent brings its nodes back)."""
        while not self.nodes.synced.wait(0.2):
            if self._stop.is_set():
                return
        status_due = 0.0
        while not self._stop.is_set():
            started = time.monotonic()
            managed = [n for n in self.nodes.snapshot() if nodes.managed(n)]
            for node in managed:
                self.renew_lease(node)
            if started >= status_due:
                status_due = started + NODE_STATUS_PERIOD
                for node in managed:
                    self.post_node_status(str(node["metadata"]["name"]))
            self._stop.wait(max(LEASE_RENEW_PERIOD - (time.monotonic() - started), 0.0))

    def renew_lease(self, node: Mapping[str, Any]) -> None:
        """Renew the node's Lease, creating it when it does not exist yet."""
        name = str(node["metadata"]["name"])
        now = self._now()
        try:
            self._client.patch(LEASES, name, nodes.lease_renewal(name, now), nodes.LEASE_NAMESPACE)
            return
        except ApiError as err:
            if not err.not_found:
                log.warning("lease renewal failed", extra={"node": name, "error": str(err)})
                return
        try:
            self._client.create(LEASES, nodes.build_lease(node, now), nodes.LEASE_NAMESPACE)
        except ApiError as err:
            if not err.already_exists:
                log.warning("lease creation failed", extra={"node": name, "error": str(err)})

    def post_node_status(self, name: str) -> None:
        """Report the node's status from its current state (not the cache, which may be behind
        on what the node lifecycle controller wrote)."""
        try:
            node = self._client.get(NODES, name)
            updated = self._client.patch(
                NODES,
                name,
                nodes.status_update(node, self._now(), self.kubelet_port, self._node_address),
                subresource="status",
            )
        except ApiError as err:
            if not err.not_found:
                log.warning("node status update failed", extra={"node": name, "error": str(err)})
            return
        self.nodes.observe(updated)
