"""The simulator's I/O shell: caches fed by watches, and loops that carry out the pure decisions.

Three loops share the caches: the scheduler (woken by any change), the kubelet (a short tick, since
its steps are due at times) and the node heartbeat. Every API failure is logged and retried on the
next round; nothing here assumes a call succeeded until the server's answer says so.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from localcluster.simulator import kubelet, nodes, scheduling, work
from localcluster.simulator.client import (
    EVENTS,
    NODES,
    PODGROUPS,
    PODS,
    QUEUES,
    ApiError,
    KubeClient,
)
from localcluster.simulator.informer import Informer, object_key
from localcluster.simulator.runtime import ProcessRuntime

log = logging.getLogger(__name__)

KUBELET_TICK = 0.1
SCHEDULER_IDLE_WAIT = 1.0
HEARTBEAT_PERIOD = 20.0
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


def scheduled_event(
    binding: scheduling.Binding, uid: str, scheduler: str, now: datetime
) -> dict[str, Any]:
    at = kubelet.timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{binding.pod}.{int(now.timestamp() * 1e9):x}",
            "namespace": binding.namespace,
        },
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": binding.namespace,
            "name": binding.pod,
            "uid": uid,
        },
        "reason": "Scheduled",
        "message": f"Successfully assigned {binding.namespace}/{binding.pod} to {binding.node}",
        "type": "Normal",
        "source": {"component": scheduler},
        "reportingComponent": scheduler,
        "reportingInstance": scheduler,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    }


class Simulator:
    """Gang scheduler `volcano` + kubelet + node heartbeat, against one API server."""

    def __init__(
        self,
        client: KubeClient,
        *,
        default_runtime: timedelta,
        stop: threading.Event,
        scheduler_name: str = scheduling.GANG_SCHEDULER,
        now: Callable[[], datetime] = _now,
        runtime: ProcessRuntime | None = None,
    ) -> None:
        self._client = client
        self._runtime = runtime
        self._default_runtime = default_runtime
        self._stop = stop
        self._scheduler_name = scheduler_name
        self._now = now
        self._wake = threading.Event()
        self.pods = Informer(client, PODS, stop, self._wake.set)
        self.nodes = Informer(client, NODES, stop, self._wake.set)
        self.podgroups = Informer(client, PODGROUPS, stop, self._wake.set)
        self.queues = Informer(client, QUEUES, stop, self._wake.set)
        self._assumed_bindings: dict[str, tuple[str, str, datetime]] = {}
        self._times: dict[str, kubelet.PodTimes] = {}
        self._scripts: dict[str, kubelet.Script] = {}
        self._work: dict[work.TaskKey, work.Progress] = {}
        self._binding_subresource = True
        self._threads = [
            threading.Thread(target=self._loop, args=(self.schedule_once,), name="scheduler"),
            threading.Thread(target=self._kubelet_loop, name="kubelet"),
            threading.Thread(target=self._heartbeat_loop, name="heartbeat"),
        ]

    def start(self) -> None:
        for informer in (self.pods, self.nodes, self.podgroups, self.queues):
            informer.start()
        for thread in self._threads:
            thread.daemon = True
            thread.start()
        log.info("simulator started", extra={"scheduler": self._scheduler_name})

    def join(self, timeout: float) -> None:
        """Wait for the loops (they notice `stop` within a tick); the informers' threads are
        daemons blocked in watches and end with the process."""
        for thread in self._threads:
            thread.join(timeout)

    # -- scheduler --------------------------------------------------------------------------

    def _loop(self, step: Callable[[], None]) -> None:
        while not self._stop.is_set():
            self._wake.wait(SCHEDULER_IDLE_WAIT)
            self._wake.clear()
            if self._stop.is_set():
                return
            if not (self.pods.synced.is_set() and self.nodes.synced.is_set()):
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
                uid_now = str((pod.get("metadata") or {}).get("uid", ""))
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
        for binding in decisions.bind:
            self._bind(binding)

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
        now = self._now()
        at = kubelet.timestamp(now)
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{event.name}.{int(now.timestamp() * 1e9):x}",
                "namespace": event.namespace,
            },
            "involvedObject": {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "PodGroup",
                "namespace": event.namespace,
                "name": event.name,
                "uid": str((podgroup.get("metadata") or {}).get("uid", "")),
            },
            "reason": event.reason,
            "message": event.message,
            "type": "Warning",
            "source": {"component": self._scheduler_name},
            "reportingComponent": self._scheduler_name,
            "reportingInstance": self._scheduler_name,
            "firstTimestamp": at,
            "lastTimestamp": at,
            "count": 1,
        }
        try:
            self._client.request("POST", EVENTS.path(event.namespace), body=body, attempts=1)
        except ApiError as err:
            log.debug("event not recorded", extra={"podgroup": event.name, "error": str(err)})

    def _bind(self, binding: scheduling.Binding) -> None:
        key = f"{binding.namespace}/{binding.pod}"
        pod = self.pods.get(key) or {}
        uid = str((pod.get("metadata") or {}).get("uid", ""))
        self._assumed_bindings[key] = (binding.node, uid, self._now())
        try:
            if self._binding_subresource:
                self._post_binding(binding, uid)
            else:
                self._patch_node_name(binding)
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
        scheduler = str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
        self._record_scheduled(binding, uid, scheduler)

    def _record_scheduled(self, binding: scheduling.Binding, uid: str, scheduler: str) -> None:
        """The `Scheduled` event `kubectl describe pod` shows, as kube-scheduler records it."""
        event = scheduled_event(binding, uid, scheduler, self._now())
        try:
            # Best effort, one attempt: an event is not worth holding up the next binding.
            self._client.request("POST", EVENTS.path(binding.namespace), body=event, attempts=1)
        except ApiError as err:
            log.debug("event not recorded", extra={"pod": binding.pod, "error": str(err)})

    def _post_binding(self, binding: scheduling.Binding, uid: str) -> None:
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
            if err.code not in (404, 405):
                raise
            # Tell "no such pod" from "no binding subresource" before falling back.
            self._client.get(PODS, binding.pod, binding.namespace)
            log.info("binding subresource unavailable, patching spec.nodeName instead")
            self._binding_subresource = False
            self._patch_node_name(binding)

    def _patch_node_name(self, binding: scheduling.Binding) -> None:
        updated = self._client.patch(
            PODS, binding.pod, {"spec": {"nodeName": binding.node}}, binding.namespace
        )
        self.pods.observe(updated)

    # -- kubelet ----------------------------------------------------------------------------

    def _kubelet_loop(self) -> None:
        while not self._stop.wait(KUBELET_TICK):
            if not (self.pods.synced.is_set() and self.nodes.synced.is_set()):
                continue
            try:
                self.kubelet_once()
            except Exception:
                log.exception("kubelet round crashed")

    def _pod_times(self, pod: Mapping[str, Any], now: datetime) -> kubelet.PodTimes:
        uid = str((pod.get("metadata") or {}).get("uid") or object_key(pod))
        times = self._times.get(uid) or kubelet.PodTimes(bound_seen=now)
        if times.started is None and (pod.get("status") or {}).get("startTime"):
            times = replace(times, started=kubelet.container_started_at(pod) or now)
        if times.terminating_seen is None and (pod.get("metadata") or {}).get("deletionTimestamp"):
            times = replace(times, terminating_seen=now)
        self._times[uid] = times
        return times

    def kubelet_once(self) -> None:
        now = self._now()
        node_cache = {str(n["metadata"]["name"]): n for n in self.nodes.snapshot()}
        seen: set[str] = set()
        pods = self.pods.snapshot()
        self._work, work_done = work.tick(self._work, pods, now)
        for pod in pods:
            metadata = pod.get("metadata") or {}
            node_name = (pod.get("spec") or {}).get("nodeName")
            if not node_name:
                continue
            uid = str(metadata.get("uid") or object_key(pod))
            seen.add(uid)
            times = self._pod_times(pod, now)
            script = self._script(pod, uid)
            node = node_cache.get(str(node_name))
            if node is None and not metadata.get("deletionTimestamp"):
                continue  # no kubelet runs on a node that does not exist
            if self._runtime is not None and self._runtime.handles(pod):
                self._runtime.sync(pod, nodes.host_ip(node))
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
        metadata = pod.get("metadata") or {}
        namespace, name = str(metadata.get("namespace")), str(metadata.get("name"))
        try:
            if step.action is kubelet.Action.DELETE:
                self._client.delete(PODS, name, namespace, grace_period_seconds=0)
                log.info("pod deleted", extra={"namespace": namespace, "pod": name})
                return
            updated = self._client.patch(
                PODS, name, {"status": step.status}, namespace, subresource="status"
            )
        except ApiError as err:
            if not err.not_found:
                log.warning(
                    "pod update failed",
                    extra={"namespace": namespace, "pod": name, "error": str(err)},
                )
            return
        if step.action in (kubelet.Action.START, kubelet.Action.RESTART):
            self._times[uid] = replace(self._times[uid], started=now)
        self.pods.observe(updated)
        phase = (step.status or {}).get("phase")
        log.info(
            STEP_MESSAGES[step.action], extra={"namespace": namespace, "pod": name, "phase": phase}
        )

    # -- node heartbeat ---------------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        while not self._stop.wait(HEARTBEAT_PERIOD):
            now = self._now()
            for node in self.nodes.snapshot():
                name = str(node["metadata"]["name"])
                try:
                    updated = self._client.patch(
                        NODES,
                        name,
                        {"status": {"conditions": nodes.heartbeat_conditions(node, now)}},
                        subresource="status",
                    )
                except ApiError as err:
                    log.warning("node heartbeat failed", extra={"node": name, "error": str(err)})
                    continue
                self.nodes.observe(updated)
