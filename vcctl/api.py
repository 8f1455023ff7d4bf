"""Every API call of the CLI, on the `kubernetes` package's kubeconfig loaders and clients.

Objects travel as plain dicts. Failures become `ApiError` with a one-line message that says
what is wrong (no kubeconfig, no such job or queue, a refusal by the API server or a webhook).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from shared import labels

WireObject = dict[str, Any]
MERGE_PATCH: Final = "application/merge-patch+json"
# (connect, read) seconds: a CLI call should fail fast when the API server is away.
TIMEOUT: Final = (5.0, 30.0)
BATCH: Final = (labels.BATCH_GROUP, labels.BATCH_VERSION)
BUS: Final = (labels.BUS_GROUP, labels.BUS_VERSION)
SCHEDULING: Final = (labels.SCHEDULING_GROUP, labels.SCHEDULING_VERSION)
SERVICE_ACCOUNT_NAMESPACE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


class ApiError(Exception):
    """A failure to report in one line."""


def _kubeconfig_hint(kubeconfig: str | None) -> str:
    if kubeconfig:
        return kubeconfig
    return os.environ.get("KUBECONFIG") or "~/.kube/config"


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


def _message(exc: ApiException) -> str:
    try:
        body = json.loads(exc.body or "")
    except (ValueError, TypeError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"{exc.status} {exc.reason}".strip()


class VolcanoApi:
    """The calls the CLI makes. `namespace` is the kubeconfig context's namespace."""

    def __init__(self, api_client: client.ApiClient, namespace: str) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)

    def close(self) -> None:
        self.api_client.close()  # type: ignore[no-untyped-call]

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, _request_timeout=TIMEOUT, **kwargs)
        except ApiException as exc:
            if exc.status == 404 and what:
                raise ApiError(what) from None
            raise ApiError(_message(exc)) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            host = self.api_client.configuration.host
            raise ApiError(f"cannot reach the API server at {host}: {exc}") from None

    # --- Jobs --------------------------------------------------------------------------------

    def list_jobs(self, namespace: str | None) -> list[WireObject]:
        if namespace is None:
            result = self._call("", self._custom.list_cluster_custom_object, *BATCH, "jobs")
        else:
            result = self._call(
                "", self._custom.list_namespaced_custom_object, *BATCH, namespace, "jobs"
            )
        return list(result.get("items") or [])

    def get_job(self, namespace: str, name: str) -> WireObject:
        result: WireObject = self._call(
            f'job "{name}" not found in namespace "{namespace}"',
            self._custom.get_namespaced_custom_object,
            *BATCH,
            namespace,
            "jobs",
            name,
        )
        return result

    def create_job(self, namespace: str, body: WireObject) -> WireObject:
        result: WireObject = self._call(
            f'namespace "{namespace}" not found',
            self._custom.create_namespaced_custom_object,
            *BATCH,
            namespace,
            "jobs",
            body,
        )
        return result

    def delete_job(self, namespace: str, name: str) -> None:
        self._call(
            f'job "{name}" not found in namespace "{namespace}"',
            self._custom.delete_namespaced_custom_object,
            *BATCH,
            namespace,
            "jobs",
            name,
        )

    def create_command(self, namespace: str, body: WireObject) -> WireObject:
        result: WireObject = self._call(
            f'namespace "{namespace}" not found (or the Command CRD is not installed)',
            self._custom.create_namespaced_custom_object,
            *BUS,
            namespace,
            "commands",
            body,
        )
        return result

    def list_events(self, namespace: str) -> list[WireObject]:
        result = self._call("", self._core.list_namespaced_event, namespace)
        serialized = self.api_client.sanitize_for_serialization(result)  # type: ignore[no-untyped-call]
        items = serialized.get("items") or []
        return list(items)

    # --- Queues and PodGroups ----------------------------------------------------------------

    def list_queues(self) -> list[WireObject]:
        result = self._call("", self._custom.list_cluster_custom_object, *SCHEDULING, "queues")
        return list(result.get("items") or [])

    def get_queue(self, name: str) -> WireObject:
        result: WireObject = self._call(
            f'queue "{name}" not found',
            self._custom.get_cluster_custom_object,
            *SCHEDULING,
            "queues",
            name,
        )
        return result

    def create_queue(self, body: WireObject) -> WireObject:
        result: WireObject = self._call(
            "", self._custom.create_cluster_custom_object, *SCHEDULING, "queues", body
        )
        return result

    def delete_queue(self, name: str) -> None:
        self._call(
            f'queue "{name}" not found',
            self._custom.delete_cluster_custom_object,
            *SCHEDULING,
            "queues",
            name,
        )

    def patch_queue(self, name: str, patch: WireObject) -> WireObject:
        result: WireObject = self._call(
            f'queue "{name}" not found',
            self._custom.patch_cluster_custom_object,
            *SCHEDULING,
            "queues",
            name,
            patch,
            _content_type=MERGE_PATCH,
        )
        return result

    def list_podgroups(self) -> list[WireObject]:
        result = self._call("", self._custom.list_cluster_custom_object, *SCHEDULING, "podgroups")
        return list(result.get("items") or [])


def connect(
    kubeconfig: str | None, master: str | None = None, context: str | None = None
) -> VolcanoApi:
    """A client for the kubeconfig (or KUBECONFIG, or ~/.kube/config; in a Pod, the service
    account); `master` overrides the server address."""
    configuration = client.Configuration()
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig,
            context=context,
            client_configuration=configuration,
            persist_config=False,
        )
    except (ConfigException, OSError, TypeError) as exc:
        in_cluster = kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST")
        if not in_cluster:
            raise ApiError(
                f"cannot load the kubeconfig {_kubeconfig_hint(kubeconfig)}: {exc} "
                "(pass --kubeconfig or set KUBECONFIG)"
            ) from None
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        try:
            namespace = SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
        except OSError:
            namespace = "default"
        return VolcanoApi(client.ApiClient(configuration), namespace)
    if master:
        configuration.host = master if "://" in master else f"https://{master}"
    # Fail fast instead of urllib3's default three retries.
    configuration.retries = 1
    return VolcanoApi(client.ApiClient(configuration), _context_namespace(kubeconfig, context))
