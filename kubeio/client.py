"""The only module that talks to the Kubernetes API (for every vcjob process).

Objects travel as plain wire dicts through `ApiClient.param_serialize` (URL, headers, auth) and
`call_api` (the body as it is), never through the client's generated models (they drop or
reject unknown fields). Every failure is translated here into an error that carries the retry
decision (`kubeio.errors`).

It is longer than our other modules on purpose: everything that touches the HTTP client (the
connection pool, credentials, encoded bodies, timeouts, the translation of failures) sits in
one file, so that nothing else needs to know how the Kubernetes client library behaves.
"""

from __future__ import annotations

import copy
import importlib.metadata
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from kubeio.errors import (
    AlreadyExistsError,
    ConflictError,
    KubeconfigError,
    KubeError,
    NotFoundError,
    PermanentError,
    TransientError,
)
from kubeio.managedfields import without_managed_fields
from shared import jsoncodec
from shared.wire import WireObject

# The official client's connection object; the processes hold it only through this name.
ApiClient = client.ApiClient
Configuration = client.Configuration

# (connect, read) seconds for ordinary calls; watches add their own server-side timeout.
REQUEST_TIMEOUT = (5.0, 30.0)
# kube-apiserver sends a bookmark roughly every minute on a watch that asks for them (and 2 s
# before the watch's own timeout), even when nothing changes.
BOOKMARK_PERIOD = 60.0
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    # The name the controller's cache files these objects under, where two API groups serve
    # the same kind (Volcano's and Kubernetes' PodGroup); the kind itself otherwise.
    store_key: str = ""

    @property
    def cache_kind(self) -> str:
        return self.store_key or self.kind

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


JOBS = Resource("batch.volcano.sh", "v1alpha1", "jobs", "Job")
COMMANDS = Resource("bus.volcano.sh", "v1alpha1", "commands", "Command")
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
PODS = Resource("", "v1", "pods", "Pod")
SERVICES = Resource("", "v1", "services", "Service")
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
PVCS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
EVENTS = Resource("", "v1", "events", "Event")
NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy")
PRIORITY_CLASSES = Resource(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
QUEUES = Resource("scheduling.volcano.sh", "v1beta1", "queues", "Queue", namespaced=False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
WORKLOADS = Resource("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
RESOURCE_FLAVORS = Resource(
    "kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", namespaced=False
)
MULTIKUEUE_CLUSTERS = Resource(
    "kueue.x-k8s.io", "v1beta2", "multikueueclusters", "MultiKueueCluster", namespaced=False
)
# Kubernetes' own gang scheduling (1.37, GenericWorkload): the Workload and the PodGroup
# kube-scheduler places all-or-nothing.
NATIVE_WORKLOADS = Resource(
    "scheduling.k8s.io", "v1beta1", "workloads", "Workload", store_key="NativeWorkload"
)
NATIVE_PODGROUPS = Resource(
    "scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup", store_key="NativePodGroup"
)
# The alpha CompositePodGroup (gate CompositePodGroup): the tasks' PodGroups as one gang.
NATIVE_COMPOSITE_PODGROUPS = Resource(
    "scheduling.k8s.io", "v1alpha3", "compositepodgroups", "CompositePodGroup"
)
JOBFLOWS = Resource("flow.volcano.sh", "v1alpha1", "jobflows", "JobFlow")
JOBTEMPLATES = Resource("flow.volcano.sh", "v1alpha1", "jobtemplates", "JobTemplate")

_BY_KIND = {
    r.kind: r
    for r in (
        JOBS,
        COMMANDS,
        PODGROUPS,
        PODS,
        SERVICES,
        CONFIGMAPS,
        SECRETS,
        PVCS,
        EVENTS,
        NETWORK_POLICIES,
        PRIORITY_CLASSES,
        LEASES,
        WORKLOADS,
        RESOURCE_FLAVORS,
    )
}


_BY_API_KIND = {
    (r.api_version, r.kind): r
    for r in (*_BY_KIND.values(), NATIVE_WORKLOADS, NATIVE_PODGROUPS, NATIVE_COMPOSITE_PODGROUPS)
}


def resource_for_kind(kind: str, api_version: str | None = None) -> Resource:
    """The resource of a kind the controller manages; `api_version` tells apart the kinds two
    API groups serve (PodGroup, Workload)."""
    if api_version is not None and (api_version, kind) in _BY_API_KIND:
        return _BY_API_KIND[(api_version, kind)]
    try:
        return _BY_KIND[kind]
    except KeyError:
        raise PermanentError(f"the controller does not manage objects of kind {kind!r}") from None


def resource_for(obj: WireObject) -> Resource:
    """The resource of a wire object, by its apiVersion and kind."""
    return resource_for_kind(str(obj.get("kind")), obj.get("apiVersion"))


class TokenBucket:
    """Client-side QPS limit with a burst, like client-go's flowcontrol token bucket."""

    def __init__(
        self,
        qps: float,
        burst: int,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._qps = qps
        self._burst = max(1, burst)
        self._tokens = float(self._burst)
        self._monotonic = monotonic
        self._sleep = sleep
        self._last = monotonic()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take a token and return how long the caller must wait before using it."""
        if self._qps <= 0:
            return 0.0
        with self._lock:
            now = self._monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1.0
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self._qps

    def take(self) -> None:
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)


# A process's requests are paced per client, each client with its own `qps` and `burst`, as
# Volcano's controller paces its two clientsets (Kubernetes' resources, Volcano's) and
# kube-scheduler its event client: a burst of status writes or events never delays a pod.
KUBERNETES_BUDGET = "kubernetes"
VOLCANO_BUDGET = "volcano"
EVENTS_BUDGET = "events"
BUDGETS = (KUBERNETES_BUDGET, VOLCANO_BUDGET, EVENTS_BUDGET)


def budget_for_path(path: str) -> str:
    """Which client's rate budget a request to the API path `path` spends: Volcano's API groups,
    events (core or events.k8s.io), or everything else."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    if parts[:1] == ["apis"] and len(parts) > 1:
        group, rest = parts[1], parts[3:]
        if group == "volcano.sh" or group.endswith(".volcano.sh"):
            return VOLCANO_BUDGET
    else:
        group, rest = "", parts[2:]
    namespaced = len(rest) >= 3 and rest[0] == "namespaces"
    resource = rest[2] if namespaced else (rest[0] if rest else "")
    if resource == "events" and group in ("", "events.k8s.io"):
        return EVENTS_BUDGET
    return KUBERNETES_BUDGET


def pooled_copy(api_client: client.ApiClient, pool_size: int) -> client.ApiClient:
    """A new ApiClient with the same configuration and a connection pool of `pool_size`
    (each watch holds a connection for its lifetime, workers and creates need more)."""
    configuration = copy.deepcopy(api_client.configuration)
    configuration.connection_pool_maxsize = pool_size
    pooled = client.ApiClient(configuration)
    pooled.user_agent = api_client.user_agent
    return pooled


# How often a configuration's credential hook runs at most (see `throttle_credential_refresh`).
CREDENTIAL_REFRESH_SECONDS = 1.0


def throttle_credential_refresh(
    configuration: client.Configuration,
    period: float = CREDENTIAL_REFRESH_SECONDS,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """Run the loaders' `refresh_api_key_hook` at most once per `period` per configuration.

    The kubeconfig loader's hook copies host, certificates and token into the configuration on
    every request (setting `host` reads the whole environment for proxies): a tenth of a
    millisecond per call for nothing, since credentials are renewed five minutes before they
    expire (kubeconfig) or once a minute (in-cluster token file). Each configuration — a pooled
    copy has its own — keeps its own time of the last refresh."""
    hook: Callable[[client.Configuration], None] | None = getattr(
        configuration, "refresh_api_key_hook", None
    )
    if hook is None:
        return
    last: weakref.WeakKeyDictionary[client.Configuration, float] = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def refresh(target: client.Configuration) -> None:
        now = monotonic()
        with lock:
            at = last.get(target)
            if at is not None and now - at < period:
                return
            last[target] = now
        hook(target)
        # The kubeconfig loader's hook installs itself again on every run.
        setattr(target, "refresh_api_key_hook", refresh)  # noqa: B010 - typed None upstream

    setattr(configuration, "refresh_api_key_hook", refresh)  # noqa: B010 - typed None upstream


def load_configuration(kubeconfig: str | None) -> client.Configuration:
    """Server, trust and credentials from a kubeconfig file (exec and OIDC auth included), or
    from the in-cluster service account when None."""
    configuration = client.Configuration()
    if kubeconfig:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration
        )
    else:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    throttle_credential_refresh(configuration)
    return configuration


SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _context_namespace(kubeconfig: str | None, context: str | None) -> str:
    try:
        contexts, active = config.list_kube_config_contexts(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, TypeError):
        return "default"
    chosen = active
    if context:
        chosen = next((c for c in contexts or [] if c.get("name") == context), active)
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else "default"


def load_user_configuration(
    kubeconfig: str | None, context: str | None = None
) -> tuple[client.Configuration, str]:
    """What a command-line tool connects with, as kubectl finds it: `kubeconfig`, else
    KUBECONFIG (a list of files), else ~/.kube/config, at `context` (else the current one);
    in a Pod without any of them, the service account. Returns the configuration and the
    default namespace (the context's, the service account's, or "default").

    Raises KubeconfigError with the loader's reason when there is nothing usable."""
    configuration = client.Configuration()
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError, TypeError) as exc:
        if kubeconfig is not None or not os.environ.get("KUBERNETES_SERVICE_HOST"):
            raise KubeconfigError(str(exc)) from None
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as in_cluster:
            raise KubeconfigError(str(in_cluster)) from None
        try:
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip()
        except OSError:
            namespace = ""
        return configuration, namespace or "default"
    return configuration, _context_namespace(kubeconfig, context)


def configuration_from_kubeconfig(document: dict[str, Any]) -> client.Configuration:
    """A configuration from a kubeconfig held in memory (one kept in a Secret, say), at its
    current context. Raises KubeconfigError with the loader's reason."""
    configuration = client.Configuration()
    try:
        config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
            document, client_configuration=configuration, persist_config=False
        )
    except (ConfigException, OSError, TypeError, ValueError) as exc:
        raise KubeconfigError(str(exc)) from None
    return configuration


# Set on a RESTClientObject whose `request` takes bodies already encoded (`accept_encoded_bodies`).
_TAKES_ENCODED = "_vcjob_takes_encoded_bodies"


def accept_encoded_bodies(rest_client: Any) -> None:
    """Let the official client's REST object send a body given as bytes as it is.

    Given a JSON content type it encodes every body with the standard library's json and
    matches the content type with regular expressions first: 20-40 µs a request on the
    controller's hot path, where kubeio has encoded the body already (with orjson). Other
    bodies take the REST object's own way. Idempotent; whatever wraps `request` afterwards
    (the controller's request counter) sees both kinds.
    """
    if getattr(rest_client, _TAKES_ENCODED, False):
        return
    original = rest_client.request
    pools = _OriginPools(rest_client)

    def request(
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        if not isinstance(body, bytes) or post_params:
            return original(
                method,
                url,
                headers=headers,
                body=body,
                post_params=post_params,
                _request_timeout=_request_timeout,
            )
        response = pools.send(method, url, body, headers or {}, _urllib3_timeout(_request_timeout))
        return client.rest.RESTResponse(response)

    rest_client.request = request
    setattr(rest_client, _TAKES_ENCODED, True)


class _OriginPools:
    """Sends a request straight to the connection pool of its URL's origin.

    `PoolManager.request` parses the whole URL, builds a header dict and looks the pool up by a
    normalized key on every call: about a tenth of a write's CPU in the client, for the one API
    server a process talks to. The pool is still the manager's own (its TLS settings, its size,
    its retries), found once per origin and again after the manager closed it. A proxy keeps the
    manager's way: it needs the absolute URL.
    """

    def __init__(self, rest_client: Any) -> None:
        self._rest = rest_client  # its manager is read at each request: it may be replaced
        self._manager: urllib3.PoolManager | None = None
        self._pools: dict[str, urllib3.HTTPConnectionPool] = {}

    def send(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        timeout: urllib3.Timeout | None,
    ) -> Any:
        manager = self._rest.pool_manager
        origin, target = split_origin(url)
        if isinstance(manager, urllib3.ProxyManager) or not origin or not target.startswith("/"):
            return manager.request(
                method, url, body=body, headers=headers, timeout=timeout, preload_content=False
            )
        if manager is not self._manager:
            self._manager, self._pools = manager, {}
        pool = self._pools.get(origin)
        if pool is None or pool.pool is None:  # a closed pool drops its queue
            pool = manager.connection_from_url(origin)
            self._pools[origin] = pool
        return pool.urlopen(
            method,
            target,
            body=body,
            headers=headers,
            timeout=timeout,
            preload_content=False,
            redirect=False,
            assert_same_host=False,
        )


def split_origin(url: str) -> tuple[str, str]:
    """`https://host:port/path?query` -> (`https://host:port`, `/path?query`); a URL without a
    path gives an empty target."""
    start = url.find("//")
    slash = url.find("/", start + 2 if start >= 0 else 0)
    if slash < 0:
        return url, ""
    return url[:slash], url[slash:]


def _urllib3_timeout(timeout: Any) -> urllib3.Timeout | None:
    """The REST object's reading of `_request_timeout`: a total, or (connect, read)."""
    if isinstance(timeout, (int, float)) and timeout:
        return urllib3.Timeout(total=timeout)
    if isinstance(timeout, tuple) and len(timeout) == 2:
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return None


def encoded_body(body: Any, content_type: str) -> Any:
    """The body as kubeio sends it: JSON data of a JSON content type encoded here (orjson),
    anything else as it is. A JSON Patch content type with a body that is not a list stays as
    it is: the REST object turns that into a strategic merge patch."""
    if body is None or isinstance(body, (bytes, str)) or "json" not in content_type:
        return body
    if content_type == "application/json-patch+json" and not isinstance(body, list):
        return body
    return jsoncodec.dumps(body)


def stream_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The non-empty lines of a watch stream, as bytes without their newline.

    kube-apiserver writes one event per line and mostly one line per chunk, so a chunk is
    usually sliced once; a line cut across chunks is joined first. Bytes go to the JSON decoder
    as they are (the official client's reader decodes every line to str and copies its buffer
    on every line). A last line without its newline (the stream cut mid-event) is dropped."""
    pending = b""
    for chunk in chunks:
        if pending:
            chunk, pending = pending + chunk, b""
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if end > start:
                yield chunk[start:end]
            start = end + 1
        if start < len(chunk):
            pending = chunk[start:]


def user_agent(component: str) -> str:
    """The User-Agent a vcjob process sends (`vcjob-controller/0.1.0 (python)`): kube-apiserver's
    audit log and its per-client figures tell the processes apart by it."""
    try:
        version = importlib.metadata.version("vcjob")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return f"{component}/{version} (python)"


def new_api_client(
    configuration: client.Configuration, pool_size: int = 32, *, component: str | None = None
) -> client.ApiClient:
    """An ApiClient over its own copy of `configuration` with a pool of `pool_size` connections
    (every worker and watch holds one; keep them pooled instead of reconnecting), sending the
    `component`'s User-Agent when one is named."""
    own = copy.deepcopy(configuration)
    own.connection_pool_maxsize = pool_size
    api = client.ApiClient(own)
    if component is not None:
        api.user_agent = user_agent(component)
    return api


def load_api_client(kubeconfig: str | None, *, component: str | None = None) -> client.ApiClient:
    """An ApiClient from a kubeconfig file, or from the in-cluster service account when None."""
    return new_api_client(load_configuration(kubeconfig), component=component)


def _decode(data: bytes) -> Any:
    if not data:
        return {}
    try:
        return jsoncodec.loads(data)
    except ValueError:
        return {"message": data.decode("utf-8", errors="replace")}


def translate(status: int, body: Any, what: str) -> KubeError:
    """The error for a non-2xx answer; `body` is the decoded Status (or anything)."""
    reason = str(body.get("reason", "")) if isinstance(body, dict) else ""
    message = str(body.get("message", "")) if isinstance(body, dict) else str(body)
    text = f"{what}: {status} {reason}: {message}".strip()
    if status == 409:
        if reason == "AlreadyExists":
            return AlreadyExistsError(text, status, reason, message)
        return ConflictError(text, status, reason, message)
    if status == 404:
        return NotFoundError(text, status, reason, message)
    if status == 410:
        return TransientError(text, status, "Expired", message)
    if status == 429 or status >= 500:
        return TransientError(text, status, reason, message)
    return PermanentError(text, status, reason, message)


def watch_idle_timeout(request_timeout: float) -> float:
    """How long a watch may go without an event (not even a bookmark) before it is re-opened: a
    hung connection must not freeze a cache. Never under two bookmark periods and a half: shorter,
    and on an idle cluster every watch would be re-opened again and again before its bookmark."""
    return max(3.0 * request_timeout, 2.5 * BOOKMARK_PERIOD)


class Kube:
    """Thin typed wrapper over one ApiClient: CRUD, merge patches, status writes, list, watch.

    `qps` and `burst` limit each of its clients (`BUDGETS`) on its own (`qps` 0: no limit)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        qps: float = 50.0,
        burst: int = 100,
        request_timeout: float = REQUEST_TIMEOUT[1],
    ) -> None:
        self.api_client = api_client
        accept_encoded_bodies(api_client.rest_client)
        self._limiters = {budget: TokenBucket(qps, burst) for budget in BUDGETS}
        self._timeout = (min(REQUEST_TIMEOUT[0], request_timeout), request_timeout)
        self._watch_idle = watch_idle_timeout(request_timeout)

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: tuple[float, float] | None = None,
    ) -> Any:
        self._limiters[budget_for_path(path)].take()
        timeout = timeout or self._timeout
        what = f"{method} {path}"
        response = self._send(method, path, query, body, content_type, timeout)
        try:
            data = response.read()
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransientError(f"{what}: {exc}") from exc
        decoded = _decode(data)
        if 200 <= response.status < 300:
            return decoded
        raise translate(response.status, decoded, what)

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, Any] | None,
        body: Any,
        content_type: str,
        timeout: tuple[float, float],
    ) -> Any:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        query_params = [(k, v) for k, v in (query or {}).items() if v is not None]
        # The body is already plain JSON data: it goes to the REST layer as it is, without the
        # generic client's walk through it for models to serialize.
        method, url, header_params, _, _ = self.api_client.param_serialize(
            method=method,
            resource_path=path,
            query_params=query_params,
            header_params=headers,
            body=None,
            auth_settings=["BearerToken"],
        )
        try:
            return self.api_client.call_api(
                method,
                url,
                header_params=header_params,
                body=encoded_body(body, content_type),
                _request_timeout=timeout,
            )
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransientError(f"{method} {path}: {exc}") from exc
        except client.ApiException as exc:
            raise TransientError(f"{method} {path}: {exc.reason}", exc.status or 0) from exc

    # --- typed helpers -----------------------------------------------------------------------

    def get(self, res: Resource, namespace: str | None, name: str) -> WireObject:
        result: WireObject = self.request("GET", res.path(namespace, name))
        return result

    def get_or_none(self, res: Resource, namespace: str | None, name: str) -> WireObject | None:
        try:
            return self.get(res, namespace, name)
        except NotFoundError:
            return None

    # Writes leave managedFields to the server: the caches keep them without their field sets.

    def create(self, res: Resource, namespace: str | None, body: WireObject) -> WireObject:
        sent = without_managed_fields(body)
        result: WireObject = self.request("POST", res.path(namespace), body=sent)
        return result

    def replace(self, res: Resource, namespace: str | None, body: WireObject) -> WireObject:
        name = body["metadata"]["name"]
        sent = without_managed_fields(body)
        result: WireObject = self.request("PUT", res.path(namespace, name), body=sent)
        return result

    def replace_status(self, res: Resource, namespace: str, body: WireObject) -> WireObject:
        name = body["metadata"]["name"]
        sent = without_managed_fields(body)
        result: WireObject = self.request("PUT", res.path(namespace, name, "status"), body=sent)
        return result

    def merge_patch(
        self, res: Resource, namespace: str | None, name: str, patch: WireObject, sub: str = ""
    ) -> WireObject:
        result: WireObject = self.request(
            "PATCH", res.path(namespace, name, sub), body=patch, content_type=MERGE_PATCH
        )
        return result

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str | None = None,
        missing_ok: bool = True,
    ) -> WireObject | None:
        """Delete; a 404 is success (returns None) unless `missing_ok` is False, for a caller
        whose own delete must be the one that removed the object (taking a Command). Returns the
        object when it lingers."""
        options: WireObject = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if uid:
            options["preconditions"] = {"uid": uid}
        if propagation:
            options["propagationPolicy"] = propagation
        try:
            result = self.request("DELETE", res.path(namespace, name), body=options)
        except NotFoundError:
            if not missing_ok:
                raise
            return None
        if isinstance(result, dict) and result.get("kind") == res.kind:
            return result
        return None

    def list(
        self,
        res: Resource,
        *,
        label_selector: str | None = None,
        limit: int = 500,
    ) -> tuple[list[WireObject], str]:
        """Every object (all namespaces), following `continue`; returns items and the list's RV."""
        items: list[WireObject] = []
        token: str | None = None
        while True:
            page = self.request(
                "GET",
                res.path(),
                query={"labelSelector": label_selector, "limit": limit, "continue": token},
            )
            items.extend(page.get("items") or [])
            meta = page.get("metadata") or {}
            token = meta.get("continue") or None
            if not token:
                return items, str(meta.get("resourceVersion", ""))

    def watch(
        self,
        res: Resource,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[WireObject]:
        """Watch events as dicts (`type`, `object`) until the server closes the stream.

        `on_open` receives the open response, so another thread can shut it down."""
        yield from self.watch_path(
            res.path(),
            resource_version=resource_version,
            query={"labelSelector": label_selector},
            timeout_seconds=timeout_seconds,
            on_open=on_open,
        )

    def watch_path(
        self,
        path: str,
        *,
        resource_version: str,
        query: Mapping[str, Any] | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[WireObject]:
        """`watch` for any collection path, with extra query parameters (selectors)."""
        self._limiters[budget_for_path(path)].take()
        query = {
            **(query or {}),
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": timeout_seconds,
        }
        response = self._send("GET", path, query, None, "", (self._timeout[0], self._watch_idle))
        raw = response.response
        if on_open is not None:
            on_open(raw)
        try:
            if response.status != 200:
                raise translate(response.status, _decode(response.read()), f"WATCH {path}")
            for line in stream_lines(raw.stream(amt=None, decode_content=False)):
                event: WireObject = jsoncodec.loads(line)
                yield event
        except urllib3.exceptions.ReadTimeoutError:
            return  # idle for too long: the caller re-watches from its last resourceVersion
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise TransientError(f"WATCH {path}: {exc}") from exc
        finally:
            raw.release_conn()
