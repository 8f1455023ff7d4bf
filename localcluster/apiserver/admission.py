"""Calling admission webhooks the way kube-apiserver does.

The server hands every create/update/delete/connect to an `AdmissionChain`: matching
MutatingWebhookConfigurations run first, one webhook at a time, each seeing the object the
previous one patched; matching ValidatingWebhookConfigurations run afterwards, concurrently.
Configurations are taken in name order and their webhooks in list order. Matching, the wire
format (`admission.k8s.io/v1` AdmissionReview), TLS verification against `caBundle`,
`timeoutSeconds`, `failurePolicy`, `sideEffects` with dry-run, and the wording of every error
follow kube-apiserver, so kubectl prints its usual messages.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonpatch

from localcluster.apiserver.errors import StatusError, bad_request, internal

logger = logging.getLogger(__name__)

ListConfigurations = Callable[[], Awaitable[tuple[list[dict[str, Any]], list[dict[str, Any]]]]]
NamespaceLabels = Callable[[str], Awaitable[dict[str, str]]]
ResolveService = Callable[[str, str, int], Awaitable[tuple[str, int]]]

DEFAULT_TIMEOUT_SECONDS = 10
_OPTIONS_KIND = {
    "CREATE": "CreateOptions",
    "UPDATE": "UpdateOptions",
    "DELETE": "DeleteOptions",
    "CONNECT": "",
}
_SIDE_EFFECT_FREE = ("None", "NoneOnDryRun")


@dataclass(frozen=True)
class AdmissionAttributes:
    """One request as admission sees it. For a Namespace object, `namespace` may be its name."""

    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    group: str
    version: str
    resource: str
    subresource: str
    kind_group: str
    kind_version: str
    kind: str
    name: str
    namespace: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None
    dry_run: bool
    username: str = "system:admin"

    @property
    def is_namespace(self) -> bool:
        return self.group == "" and self.resource == "namespaces"


async def _local_service(namespace: str, name: str, port: int) -> tuple[str, int]:
    """Without a resolver, every Service is taken to listen on this machine at its own port."""
    return "127.0.0.1", port


# --------------------------------------------------------------------------------------------
# matching: pure functions of a webhook and a request


def _selector_matches(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A metav1.LabelSelector; an absent or empty selector matches everything."""
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = expression.get("values") or []
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _resource_matches(patterns: list[str], resource: str, subresource: str) -> bool:
    for pattern in patterns:
        if pattern == "*/*":
            return True
        res, _, sub = pattern.partition("/")
        if res not in ("*", resource):
            continue
        if sub in ("*", subresource):  # `pods/*` covers pods and all its subresources, like kube
            return True
    return False


def _scope_matches(scope: str, attrs: AdmissionAttributes) -> bool:
    if scope == "Namespaced":
        return not attrs.is_namespace and attrs.namespace != ""
    if scope == "Cluster":
        return attrs.is_namespace or attrs.namespace == ""
    return True


def rule_matches(rule: dict[str, Any], attrs: AdmissionAttributes, *, equivalent: bool) -> bool:
    """One RuleWithOperations against a request. `equivalent` ignores the version, as
    `matchPolicy: Equivalent` accepts the same group and resource at any version."""
    operations = rule.get("operations") or []
    if "*" not in operations and attrs.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and attrs.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    if not equivalent and "*" not in versions and attrs.version not in versions:
        return False
    if not _resource_matches(rule.get("resources") or [], attrs.resource, attrs.subresource):
        return False
    return _scope_matches(rule.get("scope") or "*", attrs)


def rules_match(webhook: dict[str, Any], attrs: AdmissionAttributes) -> bool:
    rules = webhook.get("rules") or []
    if any(rule_matches(r, attrs, equivalent=False) for r in rules):
        return True
    if webhook.get("matchPolicy", "Equivalent") != "Equivalent":
        return False
    return any(rule_matches(r, attrs, equivalent=True) for r in rules)


def object_selector_matches(webhook: dict[str, Any], attrs: AdmissionAttributes) -> bool:
    selector = webhook.get("objectSelector")
    if not selector:
        return True
    candidates = [o for o in (attrs.object, attrs.old_object) if isinstance(o, dict)]
    return any(
        _selector_matches(selector, (o.get("metadata") or {}).get("labels") or {})
        for o in candidates
    )


# --------------------------------------------------------------------------------------------
# the AdmissionReview


def build_review(attrs: AdmissionAttributes, uid: str) -> dict[str, Any]:
    kind = {"group": attrs.kind_group, "version": attrs.kind_version, "kind": attrs.kind}
    resource = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: dict[str, Any] = {
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": attrs.name,
        "namespace": attrs.namespace,
        "operation": attrs.operation,
        "userInfo": {
            "username": attrs.username,
            "groups": ["system:masters", "system:authenticated"],
        },
        "object": attrs.object,
        "oldObject": attrs.old_object,
        "dryRun": attrs.dry_run,
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
        request["requestSubResource"] = attrs.subresource
    options_kind = _OPTIONS_KIND.get(attrs.operation, "")
    if options_kind:
        options: dict[str, Any] = {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}
        if attrs.dry_run:
            options["dryRun"] = ["All"]
        request["options"] = options
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


class WebhookCallError(Exception):
    """The webhook could not be called or answered nonsense; subject to `failurePolicy`."""


def parse_response(body: bytes, uid: str) -> dict[str, Any]:
    """The `response` of a webhook's AdmissionReview, checked like kube-apiserver checks it."""
    try:
        review = json.loads(body)
    except ValueError as exc:
        raise WebhookCallError(
            f"failed to call webhook: invalid JSON in the response: {exc}"
        ) from exc
    if not isinstance(review, dict):
        raise WebhookCallError("failed to call webhook: the response is not a JSON object")
    api_version, kind = review.get("apiVersion"), review.get("kind")
    if api_version != "admission.k8s.io/v1" or kind != "AdmissionReview":
        raise WebhookCallError(
            "received invalid webhook response: expected webhook response of "
            f"admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        )
    response = review.get("response")
    if not isinstance(response, dict):
        raise WebhookCallError("received invalid webhook response: webhook response was absent")
    if response.get("uid") != uid:
        raise WebhookCallError(
            f'received invalid webhook response: expected response.uid="{uid}", '
            f'got "{response.get("uid")}"'
        )
    if not isinstance(response.get("allowed"), bool):
        raise WebhookCallError(
            "received invalid webhook response: response.allowed is missing or not a boolean"
        )
    return response


def denial(webhook_name: str, result: dict[str, Any] | None) -> StatusError:
    """kube's ToStatusErr: the webhook's status, its message prefixed with who denied."""
    result = dict(result or {})
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    code = result.get("code")
    if not isinstance(code, int) or code < 400:
        code = 403
    message, reason = result.get("message") or "", result.get("reason") or ""
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    details = result.get("details") if isinstance(result.get("details"), dict) else None
    return StatusError(code, str(reason), text, details)


def apply_patch(response: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """The object after the response's base64 JSON Patch (unchanged when there is none)."""
    patch = response.get("patch")
    if not patch:
        return obj
    if response.get("patchType") != "JSONPatch":
        raise WebhookCallError(
            "received invalid webhook response: webhook returned response.patch but not "
            "response.patchType=JSONPatch"
        )
    try:
        operations = json.loads(base64.b64decode(patch, validate=True))
        patched = jsonpatch.JsonPatch(operations).apply(obj)
    except (ValueError, binascii.Error, jsonpatch.JsonPatchException) as exc:
        raise internal(f"Internal error occurred: JSONPatch: {exc}") from exc
    except (jsonpatch.JsonPointerException, TypeError, KeyError) as exc:
        raise internal(f"Internal error occurred: JSONPatch: {exc}") from exc
    if not isinstance(patched, dict):
        raise internal("Internal error occurred: JSONPatch: the patched object is not an object")
    return patched


# --------------------------------------------------------------------------------------------
# the chain (I/O)


@dataclass
class _Target:
    url: str  # as kube names it in errors, e.g. https://svc.ns.svc:443/path?timeout=10s
    connect_url: str  # where the request really goes
    server_name: str | None  # hostname verified against the certificate when it differs


@dataclass
class _Outcome:
    response: dict[str, Any] | None = None
    error: StatusError | None = None
    warnings: list[str] = field(default_factory=list)


class AdmissionChain:
    """Runs the matching webhooks of the cluster's webhook configurations for one request."""

    def __init__(
        self,
        list_configurations: ListConfigurations,
        namespace_labels: NamespaceLabels,
        resolve_service: ResolveService | None = None,
    ) -> None:
        self._list_configurations = list_configurations
        self._namespace_labels = namespace_labels
        self._resolve_service = resolve_service or _local_service
        self._clients: dict[tuple[str, str, int], httpx.AsyncClient] = {}

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()

    # public entry points ------------------------------------------------------------------

    async def mutate(self, attrs: AdmissionAttributes) -> dict[str, Any] | None:
        """The object after every matching mutating webhook; None if none matched."""
        mutated, _ = await self.mutate_with_warnings(attrs)
        return mutated

    async def mutate_with_warnings(
        self, attrs: AdmissionAttributes
    ) -> tuple[dict[str, Any] | None, list[str]]:
        mutating, _ = await self._list_configurations()
        hooks = await self._matching(mutating, attrs)
        if not hooks:
            return None, []
        warnings: list[str] = []
        current = attrs
        # `reinvocationPolicy: IfNeeded` webhooks run once more, in order, when a later webhook
        # changed the object after them (kube's single reinvocation round).
        seen_by: dict[int, dict[str, Any] | None] = {}
        for index, hook in enumerate(hooks):
            current = await self._mutate_once(hook, current, warnings)
            if hook.get("reinvocationPolicy") == "IfNeeded":
                seen_by[index] = current.object
        for index, seen in seen_by.items():
            if current.object != seen:
                current = await self._mutate_once(hooks[index], current, warnings)
        return current.object, warnings

    async def _mutate_once(
        self, hook: dict[str, Any], attrs: AdmissionAttributes, warnings: list[str]
    ) -> AdmissionAttributes:
        outcome = await self._call(hook, attrs)
        warnings.extend(outcome.warnings)
        if outcome.error is not None:
            raise outcome.error
        if outcome.response is None or attrs.object is None:
            return attrs
        try:
            patched = apply_patch(outcome.response, attrs.object)
        except WebhookCallError as exc:
            if self._ignores_failures(hook):
                self._log_ignored(hook, str(exc))
                return attrs
            raise self._call_failed(hook, str(exc)) from exc
        return _with_object(attrs, patched)

    async def validate(self, attrs: AdmissionAttributes) -> list[str]:
        """Warnings of the matching validating webhooks; raises the first failure in order."""
        _, validating = await self._list_configurations()
        hooks = await self._matching(validating, attrs)
        outcomes = await asyncio.gather(*(self._call(hook, attrs) for hook in hooks))
        warnings = [w for o in outcomes for w in o.warnings]
        for outcome in outcomes:
            if outcome.error is not None:
                raise outcome.error
        return warnings

    # matching ------------------------------------------------------------------------------

    async def _matching(
        self, configurations: list[dict[str, Any]], attrs: AdmissionAttributes
    ) -> list[dict[str, Any]]:
        ordered = sorted(configurations, key=lambda c: (c.get("metadata") or {}).get("name", ""))
        hooks: list[dict[str, Any]] = []
        for configuration in ordered:
            for hook in configuration.get("webhooks") or []:
                if await self._hook_matches(hook, attrs):
                    hooks.append(hook)
        return hooks

    async def _hook_matches(self, hook: dict[str, Any], attrs: AdmissionAttributes) -> bool:
        if not rules_match(hook, attrs) or not object_selector_matches(hook, attrs):
            return False
        selector = hook.get("namespaceSelector")
        if not selector:
            return True
        if attrs.is_namespace:
            if attrs.operation in ("CREATE", "UPDATE") and not attrs.subresource:
                labels = ((attrs.object or {}).get("metadata") or {}).get("labels") or {}
            else:
                labels = await self._namespace_labels(attrs.namespace or attrs.name)
        elif attrs.namespace == "":
            return True  # cluster-scoped objects are never exempted by a namespace selector
        else:
            labels = await self._namespace_labels(attrs.namespace)
        return _selector_matches(selector, labels)

    # calling -------------------------------------------------------------------------------

    async def _call(self, hook: dict[str, Any], attrs: AdmissionAttributes) -> _Outcome:
        name = hook.get("name", "")
        if attrs.dry_run and hook.get("sideEffects", "Unknown") not in _SIDE_EFFECT_FREE:
            return _Outcome(
                error=bad_request(f'admission webhook "{name}" does not support dry run')
            )
        try:
            response = await self._post(hook, attrs)
        except WebhookCallError as exc:
            if self._ignores_failures(hook):
                self._log_ignored(hook, str(exc))
                return _Outcome()
            return _Outcome(error=self._call_failed(hook, str(exc)))
        warnings = [str(w) for w in response.get("warnings") or []]
        if not response["allowed"]:
            return _Outcome(error=denial(name, response.get("status")), warnings=warnings)
        return _Outcome(response=response, warnings=warnings)

    async def _post(self, hook: dict[str, Any], attrs: AdmissionAttributes) -> dict[str, Any]:
        if "v1" not in (hook.get("admissionReviewVersions") or []):
            raise WebhookCallError("webhook does not accept known AdmissionReview versions")
        timeout = float(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS)
        client_config = hook.get("clientConfig") or {}
        target = await self._target(client_config, int(timeout))
        uid = str(uuid.uuid4())
        body = json.dumps(build_review(attrs, uid)).encode()
        client = self._client(client_config.get("caBundle") or "", target.server_name or "")
        extensions: dict[str, Any] = {}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if target.server_name:
            extensions["sni_hostname"] = target.server_name
            headers["Host"] = httpx.URL(target.url).netloc.decode()
        try:
            answer = await asyncio.wait_for(
                client.post(
                    target.connect_url,
                    content=body,
                    headers=headers,
                    timeout=timeout,
                    extensions=extensions,
                ),
                timeout,
            )
        except (httpx.HTTPError, httpx.InvalidURL, TimeoutError, OSError, ValueError) as exc:
            raise WebhookCallError(
                f'failed to call webhook: Post "{target.url}": {_describe(exc, target)}'
            ) from exc
        if answer.status_code != 200:
            raise WebhookCallError(f"failed to call webhook: {_describe_status(answer)}")
        return parse_response(answer.content, uid)

    async def _target(self, client_config: dict[str, Any], timeout_seconds: int) -> _Target:
        query = f"timeout={timeout_seconds}s"
        if client_config.get("url"):
            url = str(client_config["url"])
            named = f"{url}{'&' if '?' in url else '?'}{query}"
            return _Target(url=named, connect_url=named, server_name=None)
        service = client_config.get("service") or {}
        namespace, name = service.get("namespace", ""), service.get("name", "")
        port = int(service.get("port") or 443)
        path = service.get("path") or "/"
        host = f"{name}.{namespace}.svc"
        try:
            address, real_port = await self._resolve_service(namespace, name, port)
        except (StatusError, LookupError, OSError, ValueError) as exc:
            message = exc.message if isinstance(exc, StatusError) else str(exc)
            raise WebhookCallError(f"failed to call webhook: {message}") from exc
        return _Target(
            url=f"https://{host}:{port}{path}?{query}",
            connect_url=f"https://{address}:{real_port}{path}?{query}",
            server_name=host,
        )

    def _client(self, ca_bundle: str, server_name: str) -> httpx.AsyncClient:
        """One client per trust root, verified name and event loop. Pools are keyed by the
        address connected to, so a connection verified for one name must never serve another
        (a Service resolves to an address other webhooks may use too)."""
        key = (ca_bundle, server_name, id(asyncio.get_running_loop()))
        client = self._clients.get(key)
        if client is None:
            context = ssl.create_default_context()
            if ca_bundle:
                try:
                    context = ssl.create_default_context(
                        cadata=base64.b64decode(ca_bundle).decode()
                    )
                except (ValueError, ssl.SSLError) as exc:
                    logger.warning(
                        "invalid caBundle; the system trust roots are used",
                        extra={"error": str(exc)},
                    )
            client = httpx.AsyncClient(verify=context, trust_env=False)
            self._clients[key] = client
        return client

    # failures ------------------------------------------------------------------------------

    @staticmethod
    def _ignores_failures(hook: dict[str, Any]) -> bool:
        return bool(hook.get("failurePolicy", "Fail") == "Ignore")

    @staticmethod
    def _log_ignored(hook: dict[str, Any], error: str) -> None:
        logger.warning(
            "Failed calling webhook, failing open",
            extra={"webhook": hook.get("name", ""), "error": error},
        )

    @staticmethod
    def _call_failed(hook: dict[str, Any], error: str) -> StatusError:
        message = f'failed calling webhook "{hook.get("name", "")}": {error}'
        logger.warning("Failed calling webhook, failing closed", extra={"error": message})
        status = internal(f"Internal error occurred: {message}")
        status.details = {"causes": [{"message": message}]}
        return status


def _with_object(attrs: AdmissionAttributes, obj: dict[str, Any]) -> AdmissionAttributes:
    return AdmissionAttributes(**{**attrs.__dict__, "object": obj})


def _describe(exc: BaseException, target: _Target) -> str:
    """An error worded like Go's net/http, which is what users search for."""
    if isinstance(exc, (TimeoutError, httpx.TimeoutException)):
        return "context deadline exceeded"
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            reason = cause.verify_message or str(cause)
            if "hostname" in reason.lower() or "ip address mismatch" in reason.lower():
                return f"tls: failed to verify certificate: x509: {reason}"
            return (
                "tls: failed to verify certificate: x509: certificate signed by unknown "
                f"authority ({reason})"
            )
        if isinstance(cause, ConnectionRefusedError):
            return _refused(target)
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.ConnectError) and "refused" in str(exc).lower():
        return _refused(target)
    return str(exc) or type(exc).__name__


def _refused(target: _Target) -> str:
    return f"dial tcp {httpx.URL(target.connect_url).netloc.decode()}: connect: connection refused"


def _describe_status(answer: httpx.Response) -> str:
    text = answer.text.strip()
    try:
        status = answer.json()
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
        return str(status["message"])
    return (
        f'an error on the server ("{text[:200]}") has prevented the request from succeeding '
        f"(HTTP {answer.status_code})"
    )
