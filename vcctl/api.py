"""Every API call of the CLI, through `kubeio` (the one Kubernetes I/O layer of vcjob).

Objects travel as plain dicts. Failures become `ApiError` with a one-line message that says
what is wrong (no kubeconfig, no such job or queue, a refusal by the API server or a webhook).
"""

from __future__ import annotations

import base64
import binascii
import http
import os
from collections.abc import Callable
from typing import Final, TypeVar

import yaml

from kubeio.client import (
    COMMANDS,
    EVENTS,
    JOBFLOWS,
    JOBS,
    JOBTEMPLATES,
    MULTIKUEUE_CLUSTERS,
    NATIVE_COMPOSITE_PODGROUPS,
    NATIVE_PODGROUPS,
    PODGROUPS,
    PODS,
    QUEUES,
    SECRETS,
    WORKLOADS,
    Kube,
    configuration_from_kubeconfig,
    load_user_configuration,
    new_api_client,
)
from kubeio.errors import KubeconfigError, KubeError, NotFoundError
from shared.labels import JOB_NAME_KEY
from shared.wire import WireObject, dig, owner_references

T = TypeVar("T")
# A CLI makes a handful of calls: no client-side rate limit, fail fast when the server is away.
CLI_QPS: Final = 0.0
CONNECT_RETRIES: Final = 1
# Server-side field validation: unknown and duplicate fields fail the create (kubectl's default).
STRICT_FIELDS: Final = {"fieldValidation": "Strict"}
# Where Kueue runs, and keeps the kubeconfig Secrets its MultiKueueClusters name (Kueue's default).
KUEUE_NAMESPACE: Final = "kueue-system"
# The flow.volcano.sh objects of `vcjob jobflow|jobtemplate`, by kind.
FLOW_RESOURCES: Final = {r.kind: r for r in (JOBFLOWS, JOBTEMPLATES)}


class ApiError(Exception):
    """A failure to report in one line."""


def _kubeconfig_hint(kubeconfig: str | None) -> str:
    if kubeconfig:
        return kubeconfig
    return os.environ.get("KUBECONFIG") or "~/.kube/config"


def _message(exc: KubeError) -> str:
    """The API server's own words (a webhook's denial, a validation error), else the status."""
    if exc.detail:
        return exc.detail
    try:
        phrase = http.HTTPStatus(exc.status).phrase
    except ValueError:
        phrase = exc.reason
    return f"{exc.status} {phrase}".strip()


class VolcanoApi:
    """The calls the CLI makes. `namespace` is the kubeconfig context's namespace."""

    def __init__(self, kube: Kube, namespace: str) -> None:
        self.kube = kube
        self.namespace = namespace

    def close(self) -> None:
        self.kube.api_client.close()  # type: ignore[no-untyped-call]

    def _call(self, not_found: str, fn: Callable[[], T]) -> T:
        """`fn()`, its failure in one line; a 404 says `not_found` when given."""
        try:
            return fn()
        except NotFoundError as exc:
            raise ApiError(not_found or _message(exc)) from None
        except KubeError as exc:
            if exc.status == 0:
                host = self.kube.api_client.configuration.host
                cause = exc.__cause__ or exc
                raise ApiError(f"cannot reach the API server at {host}: {cause}") from None
            raise ApiError(_message(exc)) from None

    def _items(self, path: str) -> list[WireObject]:
        result = self._call("", lambda: self.kube.request("GET", path))
        return list(result.get("items") or [])

    # --- Jobs --------------------------------------------------------------------------------

    def list_jobs(self, namespace: str | None) -> list[WireObject]:
        return self._items(JOBS.path(namespace))

    def get_job(self, namespace: str, name: str) -> WireObject:
        return self._call(
            f'job "{name}" not found in namespace "{namespace}"',
            lambda: self.kube.get(JOBS, namespace, name),
        )

    def create_job(self, namespace: str, body: WireObject) -> WireObject:
        """Fields the Job's schema does not know are refused by the API server, with their path
        (`strict decoding error: unknown field "spec.foo"`), as `kubectl create` does."""
        return self._call(
            f'namespace "{namespace}" not found',
            lambda: self.kube.request("POST", JOBS.path(namespace), query=STRICT_FIELDS, body=body),
        )

    def delete_job(self, namespace: str, name: str) -> None:
        self._call(
            f'job "{name}" not found in namespace "{namespace}"',
            lambda: self.kube.request("DELETE", JOBS.path(namespace, name)),
        )

    def create_command(self, namespace: str, body: WireObject) -> WireObject:
        return self._call(
            f'namespace "{namespace}" not found (or the Command CRD is not installed)',
            lambda: self.kube.create(COMMANDS, namespace, body),
        )

    def list_events(self, namespace: str) -> list[WireObject]:
        return self._items(EVENTS.path(namespace))

    # --- Queues and PodGroups ----------------------------------------------------------------

    def list_queues(self) -> list[WireObject]:
        return self._items(QUEUES.path())

    def get_queue(self, name: str) -> WireObject:
        return self._call(f'queue "{name}" not found', lambda: self.kube.get(QUEUES, None, name))

    def create_queue(self, body: WireObject) -> WireObject:
        return self._call("", lambda: self.kube.create(QUEUES, None, body))

    def delete_queue(self, name: str) -> None:
        self._call(
            f'queue "{name}" not found',
            lambda: self.kube.request("DELETE", QUEUES.path(None, name)),
        )

    def patch_queue(self, name: str, patch: WireObject) -> WireObject:
        return self._call(
            f'queue "{name}" not found', lambda: self.kube.merge_patch(QUEUES, None, name, patch)
        )

    def list_podgroups(self) -> list[WireObject]:
        return self._items(PODGROUPS.path())

    # --- JobFlows and JobTemplates (by kind: `JobFlow` or `JobTemplate`) ------------------------

    def list_flow_objects(self, kind: str, namespace: str | None) -> list[WireObject]:
        return self._items(FLOW_RESOURCES[kind].path(namespace))

    def get_flow_object(self, kind: str, namespace: str, name: str) -> WireObject:
        return self._call(
            f'{kind.lower()} "{name}" not found in namespace "{namespace}"',
            lambda: self.kube.get(FLOW_RESOURCES[kind], namespace, name),
        )

    def create_flow_object(self, kind: str, namespace: str, body: WireObject) -> WireObject:
        """Refused with their path when the schema does not know a field, as `create_job`."""
        res = FLOW_RESOURCES[kind]
        return self._call(
            f'namespace "{namespace}" not found (or the {kind} CRD is not installed)',
            lambda: self.kube.request("POST", res.path(namespace), query=STRICT_FIELDS, body=body),
        )

    def delete_flow_object(self, kind: str, namespace: str, name: str) -> None:
        if not name:  # without a name, DELETE would go to the whole collection
            raise ApiError(f"cannot delete a {kind} without a name")
        self._call(
            f'{kind.lower()} "{name}" not found in namespace "{namespace}"',
            lambda: self.kube.request("DELETE", FLOW_RESOURCES[kind].path(namespace, name)),
        )

    # --- Pods of Volcano Jobs (`vcjob pod list`) ---------------------------------------------

    def list_pods(self, namespace: str | None, label_selector: str = "") -> list[WireObject]:
        """The pods of `namespace` (None: of every namespace) that match the label selector."""
        query = {"labelSelector": label_selector} if label_selector else None
        result = self._call("", lambda: self.kube.request("GET", PODS.path(namespace), query=query))
        return list(result.get("items") or [])

    # --- `vcjob job why` -----------------------------------------------------------------------

    def find_queue(self, name: str) -> WireObject | None:
        return self._call("", lambda: self.kube.get_or_none(QUEUES, None, name))

    def list_job_pods(self, namespace: str, job: str) -> list[WireObject]:
        result = self._call(
            "",
            lambda: self.kube.request(
                "GET", PODS.path(namespace), query={"labelSelector": f"{JOB_NAME_KEY}={job}"}
            ),
        )
        return list(result.get("items") or [])

    def list_namespace_podgroups(self, namespace: str) -> list[WireObject]:
        return self._items(PODGROUPS.path(namespace))

    def list_native_pod_groups(self, namespace: str, job: str, uid: str) -> list[WireObject]:
        """Kubernetes' own PodGroups of the job (its gang, or its tasks'); none where the
        cluster does not serve the API or the user may not read them (they only add to the
        explanation)."""
        try:
            result = self.kube.request(
                "GET",
                NATIVE_PODGROUPS.path(namespace),
                query={"labelSelector": f"{JOB_NAME_KEY}={job}"},
            )
        except KubeError:
            return []
        return [g for g in result.get("items") or [] if _owned_by(g, uid)]

    def find_native_composite(self, namespace: str, name: str) -> WireObject | None:
        """Kubernetes' own CompositePodGroup of that name, on the same terms."""
        try:
            return self.kube.get_or_none(NATIVE_COMPOSITE_PODGROUPS, namespace, name)
        except KubeError:
            return None

    def find_job_workload(self, namespace: str, uid: str) -> WireObject | None:
        """Kueue's Workload of the job; None where there is none, Kueue is not installed or the
        user may not read them."""
        try:
            result = self.kube.request("GET", WORKLOADS.path(namespace))
        except KubeError:
            return None
        return next((w for w in result.get("items") or [] if _owned_by(w, uid)), None)

    def worker_workload(self, cluster: str, namespace: str, name: str) -> WireObject | str:
        """The Workload `name` on MultiKueue's worker cluster `cluster`, read with the kubeconfig
        its MultiKueueCluster names; else, in a few words, why it could not be read."""
        try:
            found = self.kube.get_or_none(MULTIKUEUE_CLUSTERS, None, cluster)
            if found is None:
                return f"no MultiKueueCluster {cluster}"
            source = dig(found, "spec", "clusterSource", "kubeConfig") or {}
            secret_name = str(source.get("location") or "")
            if source.get("locationType", "Secret") != "Secret" or not secret_name:
                return f"MultiKueueCluster {cluster} keeps its kubeconfig outside a Secret"
            secret = self.kube.get(SECRETS, KUEUE_NAMESPACE, secret_name)
        except KubeError as exc:
            return f"cannot read its kubeconfig: {_message(exc)}"
        try:
            encoded = str(dig(secret, "data", "kubeconfig") or "")
            document = yaml.safe_load(base64.b64decode(encoded))
            configuration = configuration_from_kubeconfig(document)
        except (binascii.Error, yaml.YAMLError, KubeconfigError) as exc:
            return f"its kubeconfig (Secret {KUEUE_NAMESPACE}/{secret_name}) is unusable: {exc}"
        configuration.retries = CONNECT_RETRIES
        remote = Kube(new_api_client(configuration, pool_size=1), qps=CLI_QPS)
        try:
            workload = remote.get_or_none(WORKLOADS, namespace, name)
        except KubeError as exc:
            return f"cannot read it there: {_message(exc)}"
        finally:
            remote.api_client.close()  # type: ignore[no-untyped-call]
        return workload if workload is not None else "no copy of the Workload there"


def _owned_by(obj: WireObject, uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in owner_references(obj))


def connect(
    kubeconfig: str | None, master: str | None = None, context: str | None = None
) -> VolcanoApi:
    """A client for the kubeconfig (or KUBECONFIG, or ~/.kube/config; in a Pod, the service
    account); `master` overrides the server address."""
    try:
        configuration, namespace = load_user_configuration(kubeconfig, context)
    except KubeconfigError as exc:
        raise ApiError(
            f"cannot load the kubeconfig {_kubeconfig_hint(kubeconfig)}: {exc} "
            "(pass --kubeconfig or set KUBECONFIG)"
        ) from None
    if master:
        configuration.host = master if "://" in master else f"https://{master}"
    # Fail fast instead of urllib3's default three retries.
    configuration.retries = CONNECT_RETRIES
    return VolcanoApi(Kube(new_api_client(configuration, pool_size=4), qps=CLI_QPS), namespace)
