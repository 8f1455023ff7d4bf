"""The REST semantics of kube-apiserver over the store: create, read, update, patch, delete.

Handlers take a parsed `ApiRequest` and return a `Response` (status code, JSON body, warnings);
the HTTP layer (`app.py`) only routes and encodes. Watches are in `watch.py`.
"""

from __future__ import annotations

import base64
import copy
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from localcluster.apiserver import (
    admission,
    crdschema,
    defaults,
    errors,
    fieldselect,
    patches,
    protobuf,
    scale,
    services,
    strict,
    validation,
)
from localcluster.apiserver.registry import (
    CRD_TYPE,
    NAMESPACE_TYPE,
    Registry,
    ResourceType,
    types_from_crd,
)
from localcluster.apiserver.storage import Store
from shared import selectors
from shared.fielderrors import FieldError, Path

log = logging.getLogger(__name__)

IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# Built-in resources whose strategy maintains metadata.generation (every CRD's resources do too).
GENERATION_TRACKED = frozenset(
    {
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("networking.k8s.io", "ingresses"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("policy", "poddisruptionbudgets"),
        ("networking.k8s.io", "networkpolicies"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    }
)


def tracks_generation(resource: ResourceType) -> bool:
    return resource.crd or resource.storage_key in GENERATION_TRACKED


@dataclass
class ApiRequest:
    method: str
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    query: dict[str, str]
    body: bytes = b""
    content_type: str = "application/json"
    username: str = "system:admin"

    def flag(self, name: str) -> bool:
        return self.query.get(name, "").lower() in ("true", "1")

    @property
    def dry_run(self) -> bool:
        return "All" in self.query.get("dryRun", "")


@dataclass
class Response:
    code: int
    body: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


def _load_body(request: ApiRequest) -> Any:
    if not request.body:
        raise errors.bad_request("the request body is empty")
    if request.content_type.startswith(protobuf.MEDIA_TYPE):
        return protobuf.decode(request.body)
    try:
        return json.loads(request.body)
    except ValueError:
        pass
    if request.content_type.startswith(("application/yaml", patches.APPLY_PATCH)):
        try:
            return yaml.safe_load(request.body)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from exc
    raise errors.bad_request(
        "couldn't get version/kind; json parse error: invalid character in request body"
    )


def _object_body(request: ApiRequest) -> dict[str, Any]:
    body = _load_body(request)
    if not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return body


class Api:
    """Request handling for every registered type."""

    def __init__(self, registry: Registry, store: Store) -> None:
        self.registry = registry
        self.store = store
        self.cluster_ips = defaults.ClusterIPs()
        self.admission_chain = admission.AdmissionChain(
            self._webhook_configurations, self._namespace_labels, self._webhook_service
        )

    async def _webhook_service(self, namespace: str, name: str, port: int) -> tuple[str, int]:
        """A webhook's Service must exist; see `services.resolve` for where it is reached."""
        service = self.store.get(("", "services"), namespace, name)
        if service is None:
            raise errors.not_found("services", name)
        return services.resolve(service, self.store.get(("", "endpoints"), namespace, name), port)

    async def _webhook_configurations(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        group = "admissionregistration.k8s.io"
        mutating = self.store.list((group, "mutatingwebhookconfigurations"))
        validating = self.store.list((group, "validatingwebhookconfigurations"))
        return (copy.deepcopy(mutating), copy.deepcopy(validating))

    async def _namespace_labels(self, namespace: str) -> dict[str, str]:
        obj = self.store.get(NAMESPACE_TYPE.storage_key, "", namespace)
        labels = dict(((obj or {}).get("metadata") or {}).get("labels") or {})
        labels.setdefault("kubernetes.io/metadata.name", namespace)
        return labels

    def _has_webhooks(self) -> bool:
        group = "admissionregistration.k8s.io"
        return bool(
            self.store.list((group, "mutatingwebhookconfigurations"))
            or self.store.list((group, "validatingwebhookconfigurations"))
        )

    def _attributes(
        self,
        request: ApiRequest,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        name: str,
    ) -> admission.AdmissionAttributes:
        resource = request.resource
        subresource = request.subresource or ""
        kind_group, kind_version, kind = resource.group, resource.version, resource.kind
        if subresource == "binding":
            kind_group, kind_version, kind = "", "v1", "Binding"
        return admission.AdmissionAttributes(
            operation=operation,
            group=resource.group,
            version=resource.version,
            resource=resource.plural,
            subresource=subresource,
            kind_group=kind_group,
            kind_version=kind_version,
            kind=kind,
            name=name,
            namespace=request.namespace or "",
            object=obj,
            old_object=old,
            dry_run=request.dry_run,
            username=request.username,
        )

    async def _mutate(
        self,
        request: ApiRequest,
        operation: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        warnings: list[str],
    ) -> dict[str, Any]:
        if not self._has_webhooks():
            return obj
        name = obj.get("metadata", {}).get("name", "")
        attrs = self._attributes(request, operation, obj, old, name)
        mutated, mutation_warnings = await self.admission_chain.mutate_with_warnings(attrs)
        warnings.extend(mutation_warnings)
        return mutated if isinstance(mutated, dict) else obj

    async def aclose(self) -> None:
        """Close the admission chain's webhook connections."""
        await self.admission_chain.aclose()

    async def _validate_admission(
        self,
        request: ApiRequest,
        operation: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        name: str,
    ) -> list[str]:
        if not self._has_webhooks():
            return []
        attrs = self._attributes(request, operation, obj, old, name)
        warnings = await self.admission_chain.validate(attrs)
        return list(warnings or [])

    # -- shared pieces -----------------------------------------------------------------------

    def _get_existing(self, request: ApiRequest) -> dict[str, Any]:
        resource = request.resource
        obj = self.store.get(resource.storage_key, request.namespace or "", request.name or "")
        if obj is None:
            raise errors.not_found(resource.plural, request.name or "", resource.group)
        return obj

    def present(self, resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The stored object as the requested version sees it."""
        if obj.get("apiVersion") == resource.group_version and obj.get("kind") == resource.kind:
            return obj
        return {**obj, "apiVersion": resource.group_version, "kind": resource.kind}

    def _check_namespace_for_create(self, request: ApiRequest, name: str) -> None:
        resource = request.resource
        if not resource.namespaced:
            return
        namespace = self.store.get(NAMESPACE_TYPE.storage_key, "", request.namespace or "")
        if namespace is None:
            raise errors.not_found("namespaces", request.namespace or "")
        if namespace["metadata"].get("deletionTimestamp") or (
            (namespace.get("status") or {}).get("phase") == "Terminating"
        ):
            raise errors.StatusError(
                403,
                "Forbidden",
                f'{resource.qualified} "{name}" is forbidden: unable to create new content in '
                f"namespace {request.namespace} because it is being terminated",
                {
                    "name": name,
                    "group": resource.group,
                    "kind": resource.plural,
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {request.namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _check_type_meta(self, request: ApiRequest, obj: dict[str, Any]) -> None:
        resource = request.resource
        api_version = obj.get("apiVersion")
        kind = obj.get("kind")
        if kind is not None and kind != resource.kind:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {resource.kind}): "
                f"couldn't get version/kind; json parse error (kind {kind!s})"
            )
        if api_version is not None and api_version != resource.group_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({resource.group_version})"
            )
        obj["apiVersion"] = resource.group_version
        obj["kind"] = resource.kind
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise errors.bad_request("metadata must be an object")
        if resource.namespaced:
            body_namespace = meta.get("namespace")
            if body_namespace and request.namespace and body_namespace != request.namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on "
                    "the request"
                )
            if request.namespace:
                meta["namespace"] = request.namespace
        else:
            meta.pop("namespace", None)

    def _schema_for(self, resource: ResourceType) -> dict[str, Any] | None:
        return resource.schema if resource.crd else None

    def _prune_and_default(
        self,
        request: ApiRequest,
        obj: dict[str, Any],
        warnings: list[str],
        directive: str | None = None,
    ) -> None:
        """Drop unknown fields (reporting them per `fieldValidation`) and fill defaults."""
        resource = request.resource
        if directive is None:
            directive = request.query.get("fieldValidation", "Warn") or "Warn"
        if directive not in ("Strict", "Warn", "Ignore"):
            raise errors.bad_request(
                f"fieldValidation must be one of Ignore, Warn or Strict, got {directive!r}"
            )
        unknown: list[str] = []
        if resource.crd:
            schema = self._schema_for(resource)
            if schema is not None:
                metadata = obj.pop("metadata", {})
                unknown.extend(crdschema.prune_unknown_fields(schema, obj))
                crdschema.apply_schema_defaults(schema, obj)
                obj["metadata"] = metadata
        else:
            unknown.extend(
                strict.prune_builtin(resource.group, resource.version, resource.kind, obj)
            )
            mistyped = strict.first_type_error(resource.group, resource.version, resource.kind, obj)
            if mistyped:
                raise errors.bad_request(
                    f'{resource.kind} in version "{resource.version}" cannot be handled as a '
                    f"{resource.kind}: {mistyped}"
                )
            defaults.apply_defaults(resource, obj, self.cluster_ips)
        unknown = [u.lstrip(".") for u in unknown]
        if not unknown:
            return
        if directive == "Strict":
            listing = ", ".join(f'unknown field "{u}"' for u in unknown)
            raise errors.bad_request(
                f'{resource.kind} in version "{resource.version}" cannot be handled as a '
                f"{resource.kind}: strict decoding error: {listing}"
            )
        if directive == "Warn":
            warnings.extend(f'unknown field "{u}"' for u in unknown)

    def _validate(
        self, request: ApiRequest, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        resource = request.resource
        meta = obj["metadata"]
        problems: list[FieldError] = []
        if old is None:
            problems.extend(
                validation.validate_name(resource.group, resource.plural, meta.get("name", ""))
            )
        problems.extend(validation.validate_metadata(meta))
        if resource.crd:
            schema = self._schema_for(resource)
            if schema is not None:
                body = {k: v for k, v in obj.items() if k != "metadata"}
                problems.extend(crdschema.validate_against_schema(schema, body))
        elif resource is CRD_TYPE or resource.storage_key == CRD_TYPE.storage_key:
            problems.extend(self._validate_crd(obj))
        else:
            problems.extend(validation.validate_builtin_spec(resource.group, resource.plural, obj))
        if problems:
            raise errors.invalid(
                resource.kind,
                meta.get("name", ""),
                [p.as_cause() for p in problems],
                resource.group,
            )

    def _validate_crd(self, crd: dict[str, Any]) -> list[FieldError]:
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        problems: list[FieldError] = []
        group = spec.get("group")
        plural = names.get("plural")
        if not group:
            problems.append(FieldError.required(Path.of("spec", "group"), ""))
        if not plural:
            problems.append(FieldError.required(Path.of("spec", "names", "plural"), ""))
        if not names.get("kind"):
            problems.append(FieldError.required(Path.of("spec", "names", "kind"), ""))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            problems.append(
                FieldError.not_supported(
                    Path.of("spec", "scope"), spec.get("scope"), ["Cluster", "Namespaced"]
                )
            )
        versions = spec.get("versions") or []
        if not versions:
            problems.append(
                FieldError.required(
                    Path.of("spec", "versions"),
                    "must have exactly one version marked as storage version",
                )
            )
        elif sum(1 for v in versions if v.get("storage")) != 1:
            problems.append(
                FieldError.invalid(
                    Path.of("spec", "versions"),
                    versions,
                    "must have exactly one version marked as storage version",
                )
            )
        name = crd["metadata"].get("name")
        if group and plural and name != f"{plural}.{group}":
            problems.append(
                FieldError.invalid(
                    Path.of("metadata", "name"), name, 'must be spec.names.plural+"."+spec.group'
                )
            )
        return problems

    # -- persistence helpers ---------------------------------------------------------------

    def _persist_create(self, request: ApiRequest, obj: dict[str, Any]) -> dict[str, Any]:
        resource = request.resource
        if resource.storage_key == CRD_TYPE.storage_key:
            self._establish_crd(obj)
        if request.dry_run:
            return obj
        stored = self.store.put(resource.storage_key, obj, "ADDED")
        if resource.storage_key == CRD_TYPE.storage_key:
            self.register_crd(stored)
        return stored

    def _persist_update(
        self, request: ApiRequest, obj: dict[str, Any], old: dict[str, Any]
    ) -> dict[str, Any]:
        resource = request.resource
        if obj == old:
            return old  # a no-op update keeps the resourceVersion, as in kube
        if request.dry_run:
            return obj
        meta = obj["metadata"]
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not (
                resource.storage_key == NAMESPACE_TYPE.storage_key
                and (obj.get("spec") or {}).get("finalizers")
            )
            and not self._pod_awaiting_kubelet(resource, obj)
        ):
            return self._remove(resource, obj)
        if resource.storage_key == CRD_TYPE.storage_key and obj.get("spec") != old.get("spec"):
            self._accept_crd_names(obj)
        stored = self.store.put(resource.storage_key, obj, "MODIFIED")
        if resource.storage_key == CRD_TYPE.storage_key:
            self.register_crd(stored)
        return stored

    def _accept_crd_names(self, crd: dict[str, Any]) -> None:
        """A changed CRD spec: accept its (new) names, keep the conditions' history."""
        previous = copy.deepcopy(crd.get("status") or {})
        self._establish_crd(crd)
        old_conditions = {c.get("type"): c for c in previous.get("conditions") or []}
        for condition in crd["status"]["conditions"]:
            before = old_conditions.get(condition["type"])
            if before is not None and before.get("status") == condition["status"]:
                condition["lastTransitionTime"] = before.get("lastTransitionTime")
        stored_versions = list(previous.get("storedVersions") or [])
        for version in crd["status"]["storedVersions"]:
            if version not in stored_versions:
                stored_versions.append(version)
        crd["status"]["storedVersions"] = stored_versions

    def _pod_awaiting_kubelet(self, resource: ResourceType, obj: dict[str, Any]) -> bool:
        if resource.storage_key != ("", "pods"):
            return False
        return bool(obj["metadata"].get("deletionGracePeriodSeconds")) and bool(
            (obj.get("spec") or {}).get("nodeName")
        )

    def _remove(self, resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        gone = self.store.remove(resource.storage_key, obj)
        if resource.storage_key == CRD_TYPE.storage_key:
            self.unregister_crd(gone)
        return gone

    # -- CRDs --------------------------------------------------------------------------------

    def _establish_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        spec["names"] = names
        now = validation.now_rfc3339()
        conflict = self.registry.name_conflicts(
            str(spec.get("group")), str(names.get("plural")), crd["metadata"]["name"]
        )
        accepted = "False" if conflict else "True"
        crd["status"] = {
            "acceptedNames": names,
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": accepted,
                    "lastTransitionTime": now,
                    "reason": "NoConflicts" if not conflict else "PluralConflict",
                    "message": "no conflicts found" if not conflict else "resource name is in use",
                },
                {
                    "type": "Established",
                    "status": accepted,
                    "lastTransitionTime": now,
                    "reason": "InitialNamesAccepted" if not conflict else "NotAccepted",
                    "message": "the initial names have been accepted"
                    if not conflict
                    else "not all names are accepted",
                },
            ],
            "storedVersions": [
                v.get("name") for v in spec.get("versions") or [] if v.get("storage")
            ],
        }

    def register_crd(self, crd: dict[str, Any]) -> None:
        if crd["metadata"].get("deletionTimestamp"):
            return
        established = any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (crd.get("status") or {}).get("conditions") or []
        )
        if established:
            self.registry.register_crd(crd["metadata"]["name"], types_from_crd(crd))

    def unregister_crd(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        storage_key = (str(spec.get("group")), str((spec.get("names") or {}).get("plural")))
        self.registry.unregister_crd(crd["metadata"]["name"])
        for obj in self.store.drop_all(storage_key):
            log.info(
                "removed custom resource of deleted CRD",
                extra={"object_name": obj["metadata"]["name"]},
            )
        self.store.close_watchers(storage_key)

    def load_crds(self) -> None:
        for crd in self.store.list(CRD_TYPE.storage_key):
            self.register_crd(crd)

    # -- create ------------------------------------------------------------------------------

    async def create(self, request: ApiRequest, obj: dict[str, Any] | None = None) -> Response:
        """kube's order: decode + default, mutating admission, BeforeCreate (name, uid, status
        reset), validation, validating admission, storage."""
        resource = request.resource
        if obj is None:
            obj = _object_body(request)
        self._check_type_meta(request, obj)
        meta = obj["metadata"]
        self._check_namespace_for_create(request, str(meta.get("name") or ""))
        for key in (
            "resourceVersion",
            "uid",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ):
            meta.pop(key, None)
        warnings: list[str] = []
        self._prune_and_default(request, obj, warnings)
        obj = await self._mutate(request, "CREATE", obj, None, warnings)
        self._check_type_meta(request, obj)
        meta = obj["metadata"]
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{validation.generate_suffix()}"
        name = str(meta.get("name") or "")
        meta["uid"] = validation.random_uid()
        meta["creationTimestamp"] = validation.now_rfc3339()
        meta.pop("generation", None)
        if tracks_generation(resource):
            meta["generation"] = 1
        defaults.initial_status(resource, obj)
        self._prune_and_default(request, obj, [], "Ignore")
        self._validate(request, obj, None)
        warnings += await self._validate_admission(request, "CREATE", obj, None, name)
        self._set_field_manager(request, obj, None, "Update")
        existing = self.store.get(resource.storage_key, request.namespace or "", name)
        if existing is not None:
            raise errors.already_exists(resource.plural, name, resource.group)
        stored = self._persist_create(request, obj)
        return Response(201, self.present(resource, stored), warnings)

    def _set_field_manager(
        self, request: ApiRequest, obj: dict[str, Any], old: dict[str, Any] | None, operation: str
    ) -> None:
        """Keep managedFields simple: one entry per manager and operation."""
        manager = request.query.get("fieldManager")
        meta = obj["metadata"]
        managed = list(
            meta.get("managedFields") or (old or {}).get("metadata", {}).get("managedFields") or []
        )
        if not manager:
            if managed:
                meta["managedFields"] = managed
            return
        entry = {
            "manager": manager,
            "operation": operation,
            "apiVersion": request.resource.group_version,
            "time": validation.now_rfc3339(),
            "fieldsType": "FieldsV1",
            "fieldsV1": patches.field_set(
                validation.spec_content(obj)
                | {"metadata": {k: v for k, v in meta.items() if k in ("labels", "annotations")}}
            ),
        }
        if request.subresource:
            entry["subresource"] = request.subresource
        managed = [
            m
            for m in managed
            if not (
                m.get("manager") == manager
                and m.get("operation") == operation
                and m.get("subresource") == entry.get("subresource")
            )
        ]
        meta["managedFields"] = [*managed, entry]

    # -- read --------------------------------------------------------------------------------

    def get(self, request: ApiRequest) -> Response:
        return Response(200, self.present(request.resource, self._get_existing(request)))

    def list(self, request: ApiRequest) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        resource = request.resource
        label_selector = self._label_selector(request)
        field_selector = fieldselect.parse(
            resource.group, resource.plural, request.query.get("fieldSelector", "")
        )
        rv_param = request.query.get("resourceVersion", "")
        if rv_param and rv_param != "0":
            try:
                requested = int(rv_param)
            except ValueError as exc:
                raise errors.bad_request(f"invalid resource version: {rv_param}") from exc
            if requested > self.store.rv:
                raise errors.StatusError(
                    504,
                    "Timeout",
                    f"Too large resource version: {requested}, current: {self.store.rv}",
                    {
                        "causes": [
                            {
                                "reason": "ResourceVersionTooLarge",
                                "message": "Too large resource version",
                            }
                        ],
                        "retryAfterSeconds": 1,
                    },
                )
            if request.query.get("resourceVersionMatch") == "Exact" and requested != self.store.rv:
                raise errors.gone(f"too old resource version: {requested} ({self.store.rv})")
        limit = int(request.query.get("limit") or 0)
        start_after: tuple[str, str] | None = None
        list_rv = self.store.rv
        token = request.query.get("continue")
        if token:
            start_after, list_rv = decode_continue(token)
            if list_rv < self.store.compacted_rv:
                raise errors.gone(CONTINUE_TOO_OLD)
        items = []
        for obj in self.store.list(
            resource.storage_key, request.namespace if resource.namespaced else None
        ):
            meta = obj["metadata"]
            key = (str(meta.get("namespace") or ""), str(meta["name"]))
            if start_after is not None and key <= start_after:
                continue
            if label_selector and not selectors.matches(label_selector, meta.get("labels") or {}):
                continue
            if field_selector and not selectors.matches(
                field_selector, fieldselect.field_values(resource.group, resource.plural, obj)
            ):
                continue
            items.append(obj)
        list_meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if limit and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            last = items[-1]["metadata"]
            list_meta["continue"] = encode_continue(
                (str(last.get("namespace") or ""), str(last["name"])), list_rv
            )
            list_meta["remainingItemCount"] = remaining
        return [self.present(resource, i) for i in items], list_meta

    def list_response(self, request: ApiRequest) -> Response:
        items, list_meta = self.list(request)
        resource = request.resource
        return Response(
            200,
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.group_version,
                "metadata": list_meta,
                "items": items,
            },
        )

    def _label_selector(self, request: ApiRequest) -> selectors.Selector:
        try:
            return selectors.parse_labels(request.query.get("labelSelector", ""))
        except selectors.SelectorError as exc:
            raise errors.bad_request(f"invalid label selector: {exc}") from exc

    # -- update ------------------------------------------------------------------------------

    def _merge_for_subresource(
        self, request: ApiRequest, new: dict[str, Any], old: dict[str, Any]
    ) -> dict[str, Any]:
        """Main endpoint ignores status; `/status` changes only status."""
        resource = request.resource
        if request.subresource == "status":
            merged = copy.deepcopy(old)
            if "status" in new:
                merged["status"] = copy.deepcopy(new["status"])
            else:
                merged.pop("status", None)
            if new.get("metadata", {}).get("resourceVersion"):
                merged["metadata"]["resourceVersion"] = new["metadata"]["resourceVersion"]
            if resource.storage_key == ("", "pods") or not resource.crd:
                # Built-in status updates may still change labels and annotations.
                for key in ("labels", "annotations"):
                    if key in new.get("metadata", {}):
                        merged["metadata"][key] = new["metadata"][key]
            return merged
        if resource.has_status:
            if "status" in old:
                new["status"] = copy.deepcopy(old["status"])
            else:
                new.pop("status", None)
        # A namespace's spec.finalizers only change through /finalize.
        if resource.storage_key == NAMESPACE_TYPE.storage_key and request.subresource != "finalize":
            new.setdefault("spec", {})["finalizers"] = copy.deepcopy(
                (old.get("spec") or {}).get("finalizers", [])
            )
        return new

    def _carry_system_metadata(self, new: dict[str, Any], old: dict[str, Any]) -> None:
        meta = new["metadata"]
        old_meta = old["metadata"]
        for key in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "name",
        ):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)
        if "namespace" in old_meta:
            meta["namespace"] = old_meta["namespace"]
        if old_meta.get("deletionTimestamp"):
            # Finalizers may only be removed from an object being deleted, not added.
            meta["finalizers"] = [
                f for f in meta.get("finalizers") or [] if f in (old_meta.get("finalizers") or [])
            ]
            if not meta["finalizers"]:
                meta.pop("finalizers")

    async def _update_object(
        self,
        request: ApiRequest,
        new: dict[str, Any],
        old: dict[str, Any],
        operation_meta: str = "Update",
    ) -> Response:
        resource = request.resource
        self._check_type_meta(request, new)
        body_rv = str(new["metadata"].get("resourceVersion") or "")
        if body_rv and body_rv != old["metadata"]["resourceVersion"]:
            raise errors.conflict(resource.plural, request.name or "", resource.group)
        name_in_body = new["metadata"].get("name")
        if name_in_body and name_in_body != request.name:
            raise errors.bad_request(
                f"the name of the object ({name_in_body}) does not match the name on the URL "
                f"({request.name})"
            )
        new = self._merge_for_subresource(request, new, old)
        self._carry_system_metadata(new, old)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        warnings: list[str] = []
        if request.subresource is None:
            self._prune_and_default(request, new, warnings)
        new = await self._mutate(request, "UPDATE", new, old, warnings)
        self._check_type_meta(request, new)
        self._carry_system_metadata(new, old)
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        if request.subresource is None:
            self._prune_and_default(request, new, [], "Ignore")
        if tracks_generation(resource) and validation.spec_content(new) != validation.spec_content(
            old
        ):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 1) + 1
        self._validate(request, new, old)
        warnings += await self._validate_admission(request, "UPDATE", new, old, request.name or "")
        unchanged = self._same_ignoring_managed_fields(new, old)
        if operation_meta == "Update" and unchanged:
            # A no-op write keeps the object (and its resourceVersion) as it is, as in kube.
            return Response(200, self.present(resource, old), warnings)
        self._set_field_manager(request, new, old, operation_meta)
        current = self.store.get(resource.storage_key, request.namespace or "", request.name or "")
        if current is None:
            raise errors.not_found(resource.plural, request.name or "", resource.group)
        if current["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise errors.conflict(resource.plural, request.name or "", resource.group)
        if new == old or self._same_ignoring_managed_time(new, old):
            return Response(200, self.present(resource, old), warnings)
        stored = self._persist_update(request, new, old)
        return Response(200, self.present(resource, stored), warnings)

    @staticmethod
    def _same_ignoring_managed_fields(new: dict[str, Any], old: dict[str, Any]) -> bool:
        def strip(obj: dict[str, Any]) -> dict[str, Any]:
            meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
            return {**obj, "metadata": meta}

        return strip(new) == strip(old)

    @staticmethod
    def _same_ignoring_managed_time(new: dict[str, Any], old: dict[str, Any]) -> bool:
        def strip(obj: dict[str, Any]) -> dict[str, Any]:
            meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
            return {**obj, "metadata": meta}

        return strip(new) == strip(old) and [
            {k: v for k, v in m.items() if k != "time"}
            for m in new["metadata"].get("managedFields") or []
        ] == [
            {k: v for k, v in m.items() if k != "time"}
            for m in old["metadata"].get("managedFields") or []
        ]

    async def update(self, request: ApiRequest) -> Response:
        resource = request.resource
        body = _object_body(request)
        old = self.store.get(resource.storage_key, request.namespace or "", request.name or "")
        if old is None:
            raise errors.not_found(resource.plural, request.name or "", resource.group)
        return await self._update_object(request, body, old)

    async def scale(self, request: ApiRequest) -> Response:
        """GET, PUT or PATCH the `scale` subresource: a Scale view of the workload."""
        old = self._get_existing(request)
        current = scale.scale_of(old)
        if request.method == "GET":
            return Response(200, current)
        content_type = "" if request.method == "PUT" else request.content_type.split(";")[0]
        wanted = scale.wanted_scale(current, _load_body(request), content_type.strip())
        inner = ApiRequest(
            "PUT",
            request.resource,
            request.namespace,
            request.name,
            None,
            request.query,
            b"",
            "application/json",
            request.username,
        )
        response = await self._update_object(inner, scale.scaled(old, wanted), old)
        return Response(response.code, scale.scale_of(response.body), response.warnings)

    async def finalize_namespace(self, request: ApiRequest) -> Response:
        body = _object_body(request)
        old = self._get_existing(request)
        new = copy.deepcopy(old)
        new["spec"] = dict(new.get("spec") or {})
        new["spec"]["finalizers"] = list((body.get("spec") or {}).get("finalizers") or [])
        if not new["spec"]["finalizers"]:
            new["spec"].pop("finalizers")
        if request.dry_run:
            return Response(200, new)
        if (
            new["metadata"].get("deletionTimestamp")
            and not new["spec"].get("finalizers")
            and not new["metadata"].get("finalizers")
        ):
            return Response(200, self._remove(request.resource, new))
        if new == old:
            return Response(200, old)
        return Response(200, self.store.put(request.resource.storage_key, new, "MODIFIED"))

    # -- patch -------------------------------------------------------------------------------

    async def patch(self, request: ApiRequest) -> Response:
        resource = request.resource
        content_type = request.content_type.split(";")[0].strip()
        if content_type not in patches.PATCH_TYPES:
            raise errors.StatusError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(patches.PATCH_TYPES)}",
            )
        if content_type == patches.STRATEGIC_MERGE_PATCH and resource.crd:
            raise errors.StatusError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: {patches.JSON_PATCH}, {patches.MERGE_PATCH}, {patches.APPLY_PATCH}",
            )
        body = _load_body(request)
        for _ in range(10):
            old = self.store.get(resource.storage_key, request.namespace or "", request.name or "")
            if content_type == patches.APPLY_PATCH:
                return await self._apply(request, body, old)
            if old is None:
                raise errors.not_found(resource.plural, request.name or "", resource.group)
            live = copy.deepcopy(old)
            if content_type == patches.JSON_PATCH:
                patched = patches.apply_json_patch(live, body)
            elif content_type == patches.MERGE_PATCH:
                if not isinstance(body, dict):
                    raise errors.bad_request("merge patch must be a JSON object")
                patched = patches.json_merge_patch(live, body)
            else:
                if not isinstance(body, dict):
                    raise errors.bad_request("strategic merge patch must be a JSON object")
                patched = patches.strategic_merge(live, body)
            if not isinstance(patched.get("metadata"), dict):
                raise errors.bad_request("the patch removed the object's metadata")
            try:
                return await self._update_object(request, patched, old)
            except errors.StatusError as exc:
                precondition = bool(_patched_rv(body))
                if exc.code == 409 and exc.reason == "Conflict" and not precondition:
                    current = self.store.get(
                        resource.storage_key, request.namespace or "", request.name or ""
                    )
                    if current is not None and current is not old:
                        continue  # raced with another writer: patch the newer object
                raise
        raise errors.conflict(resource.plural, request.name or "", resource.group)

    async def _apply(self, request: ApiRequest, body: Any, old: dict[str, Any] | None) -> Response:
        resource = request.resource
        if not isinstance(body, dict):
            raise errors.bad_request("apply patch must be a YAML or JSON object")
        manager = request.query.get("fieldManager")
        if not manager:
            raise errors.bad_request("PATCH, application/apply-patch+yaml requires fieldManager")
        self._check_type_meta(request, body)
        body_name = body["metadata"].get("name")
        if body_name and body_name != request.name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL "
                f"({request.name})"
            )
        body["metadata"]["name"] = request.name
        now = validation.now_rfc3339()
        if old is None:
            if request.subresource:
                raise errors.not_found(resource.plural, request.name or "", resource.group)
            applied = patches.server_side_apply(None, body, manager, resource.group_version, now)
            query = dict(request.query)
            query.pop("fieldManager", None)
            create_request = ApiRequest(
                "POST",
                resource,
                request.namespace,
                None,
                None,
                query,
                b"",
                "application/json",
                request.username,
            )
            return await self.create(create_request, applied)
        merged = patches.server_side_apply(
            copy.deepcopy(old),
            body,
            manager,
            resource.group_version,
            now,
            lists_merge=not resource.crd,
            force=request.query.get("force") == "true",
        )
        merged["metadata"].pop("resourceVersion", None)
        query = dict(request.query)
        query.pop("fieldManager", None)
        update_request = ApiRequest(
            "PUT",
            resource,
            request.namespace,
            request.name,
            request.subresource,
            query,
            b"",
            "application/json",
            request.username,
        )
        return await self._update_object(update_request, merged, old, "Apply")

    # -- pods/binding ----------------------------------------------------------------------

    async def bind(self, request: ApiRequest) -> Response:
        binding = _object_body(request)
        target = binding.get("target") or {}
        node = target.get("name")
        if not node:
            raise errors.invalid(
                "Binding",
                request.name or "",
                [FieldError.required(Path.of("target", "name")).as_cause()],
            )
        old = self._get_existing(request)
        if (old.get("spec") or {}).get("nodeName"):
            raise errors.StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{request.name}": pod '
                f'{request.name} is already assigned to node "{old["spec"]["nodeName"]}"',
                {"name": request.name, "kind": "pods/binding"},
            )
        if old["metadata"].get("deletionTimestamp"):
            raise errors.StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on pods/binding "{request.name}": pod '
                f"{request.name} is being deleted, cannot be assigned to a host",
                {"name": request.name, "kind": "pods/binding"},
            )
        await self._validate_admission(request, "CREATE", binding, None, request.name or "")
        new = copy.deepcopy(old)
        new["spec"]["nodeName"] = node
        status = new.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": validation.now_rfc3339(),
            }
        )
        status["conditions"] = conditions
        if not request.dry_run:
            self.store.put(request.resource.storage_key, new, "MODIFIED")
        return Response(
            201,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": 201,
            },
        )

    # -- delete ------------------------------------------------------------------------------

    def _delete_options(self, request: ApiRequest) -> dict[str, Any]:
        options: dict[str, Any] = {}
        if request.body and request.content_type.startswith(protobuf.MEDIA_TYPE):
            options = protobuf.decode(request.body)
        elif request.body:
            try:
                loaded = json.loads(request.body)
            except ValueError as exc:
                raise errors.bad_request(f"invalid DeleteOptions: {exc}") from exc
            if isinstance(loaded, dict):
                options = loaded
        query = request.query
        if "gracePeriodSeconds" in query:
            try:
                options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            except ValueError as exc:
                raise errors.bad_request("gracePeriodSeconds must be an integer") from exc
        if "propagationPolicy" in query:
            options["propagationPolicy"] = query["propagationPolicy"]
        if "orphanDependents" in query:
            options["orphanDependents"] = query["orphanDependents"].lower() == "true"
        if "dryRun" in query:
            options["dryRun"] = [query["dryRun"]]
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            options["propagationPolicy"] = "Orphan" if options["orphanDependents"] else "Background"
        if options.get("propagationPolicy") not in (None, "Background", "Foreground", "Orphan"):
            raise errors.invalid(
                "DeleteOptions",
                "",
                [
                    FieldError.not_supported(
                        Path.of("propagationPolicy"),
                        options["propagationPolicy"],
                        ["Foreground", "Background", "Orphan", "nil"],
                    ).as_cause()
                ],
            )
        return options

    async def delete(self, request: ApiRequest, options: dict[str, Any] | None = None) -> Response:
        resource = request.resource
        if options is None:
            options = self._delete_options(request)
        dry_run = request.dry_run or "All" in (options.get("dryRun") or [])
        old = self._get_existing(request)
        preconditions = options.get("preconditions") or {}
        meta = old["metadata"]
        if preconditions.get("uid") and preconditions["uid"] != meta.get("uid"):
            raise errors.StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource.qualified} "{request.name}": '
                f"Precondition failed: UID in precondition: {preconditions['uid']}, "
                f"UID in object meta: {meta.get('uid')}",
                {"name": request.name, "group": resource.group, "kind": resource.plural},
            )
        if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != meta.get(
            "resourceVersion"
        ):
            raise errors.StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {resource.qualified} "{request.name}": '
                f"Precondition failed: ResourceVersion in precondition: "
                f"{preconditions['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
                {"name": request.name, "group": resource.group, "kind": resource.plural},
            )
        if (
            resource.storage_key == NAMESPACE_TYPE.storage_key
            and request.name in IMMORTAL_NAMESPACES
        ):
            raise errors.StatusError(
                403,
                "Forbidden",
                f'namespaces "{request.name}" is forbidden: this namespace may not be deleted',
                {"name": request.name, "kind": "namespaces"},
            )
        warnings = await self._validate_admission(request, "DELETE", None, old, request.name or "")
        new = copy.deepcopy(old)
        new_meta = new["metadata"]
        finalizers = list(new_meta.get("finalizers") or [])
        policy = options.get("propagationPolicy")
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers = [f for f in finalizers if f != "orphan"] + ["foregroundDeletion"]
        elif policy == "Orphan" and "orphan" not in finalizers:
            finalizers = [f for f in finalizers if f != "foregroundDeletion"] + ["orphan"]
        elif policy == "Background":
            finalizers = (
                [f for f in finalizers if f not in ("orphan", "foregroundDeletion")]
                if not meta.get("deletionTimestamp")
                else finalizers
            )
        if finalizers:
            new_meta["finalizers"] = finalizers
        grace = self._grace_period(resource, old, options)
        pending = bool(finalizers) or grace > 0
        if resource.storage_key == NAMESPACE_TYPE.storage_key:
            pending = pending or bool((new.get("spec") or {}).get("finalizers"))
            new.setdefault("status", {})["phase"] = "Terminating"
        if not pending:
            if dry_run:
                return Response(200, self._deleted_body(resource, old), warnings)
            gone = self._remove(resource, old)
            return Response(200, self._deleted_body(resource, gone), warnings)
        starting = not new_meta.get("deletionTimestamp")
        if starting or grace < int(new_meta.get("deletionGracePeriodSeconds") or 0):
            new_meta["deletionTimestamp"] = validation.now_rfc3339(grace)
            new_meta["deletionGracePeriodSeconds"] = grace
        if starting and new_meta.get("generation"):
            # kube bumps the generation when graceful deletion starts.
            new_meta["generation"] = int(new_meta["generation"]) + 1
        if resource.storage_key == ("", "pods") and grace == 0 and not finalizers:
            if dry_run:
                return Response(200, self.present(resource, old), warnings)
            return Response(200, self.present(resource, self._remove(resource, old)), warnings)
        # kube answers 202 when a deletion is left pending after an explicit
        # orphanDependents=false, and 200 otherwise.
        code = 202 if options.get("orphanDependents") is False else 200
        if dry_run or new == old:
            return Response(code, self.present(resource, new if dry_run else old), warnings)
        stored = self.store.put(resource.storage_key, new, "MODIFIED")
        return Response(code, self.present(resource, stored), warnings)

    @staticmethod
    def _grace_period(resource: ResourceType, obj: dict[str, Any], options: dict[str, Any]) -> int:
        if resource.storage_key != ("", "pods"):
            return 0
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
            return 0
        requested = options.get("gracePeriodSeconds")
        if requested is None:
            requested = spec.get("terminationGracePeriodSeconds", 30)
        grace = int(requested)
        existing = obj["metadata"].get("deletionGracePeriodSeconds")
        if existing is not None:
            grace = min(grace, int(existing))
        return max(grace, 0)

    def _deleted_body(self, resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """What an immediate DELETE answers: the object, or a Status naming it (kind holds the
        resource, as in kube's finalizeDelete)."""
        if resource.returns_deleted_object:
            return self.present(resource, obj)
        meta = obj["metadata"]
        if resource.storage_key == CRD_TYPE.storage_key:
            return self.present(resource, terminating_crd(obj))
        return errors.success_status(
            {
                "name": meta["name"],
                "group": resource.group,
                "kind": resource.plural,
                "uid": meta.get("uid"),
            }
        )

    async def delete_collection(self, request: ApiRequest) -> Response:
        resource = request.resource
        options = self._delete_options(request)
        items, list_meta = self.list(request)
        deleted: list[dict[str, Any]] = []
        for item in items:
            meta = item["metadata"]
            item_request = ApiRequest(
                "DELETE",
                resource,
                meta.get("namespace") or None,
                meta["name"],
                None,
                request.query,
                b"",
                request.content_type,
                request.username,
            )
            try:
                response = await self.delete(item_request, dict(options))
            except errors.StatusError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(response.body if response.body.get("kind") != "Status" else item)
        return Response(
            200,
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.group_version,
                "metadata": {"resourceVersion": list_meta["resourceVersion"]},
                "items": deleted,
            },
        )


CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def terminating_crd(crd: dict[str, Any]) -> dict[str, Any]:
    """A deleted CRD as kube-apiserver's first DELETE answer shows it: marked for deletion, with
    the finalizer under which its instances are removed (here they are removed at once)."""
    marked = copy.deepcopy(crd)
    meta = marked["metadata"]
    meta.setdefault("deletionTimestamp", validation.now_rfc3339())
    meta.setdefault("deletionGracePeriodSeconds", 0)
    meta["finalizers"] = [*(meta.get("finalizers") or []), CRD_CLEANUP_FINALIZER]
    conditions = [
        c
        for c in (marked.get("status") or {}).get("conditions") or []
        if c.get("type") != "Terminating"
    ]
    conditions.append(
        {
            "type": "Terminating",
            "status": "True",
            "lastTransitionTime": meta["deletionTimestamp"],
            "reason": "InstanceDeletionPending",
            "message": "CustomResourceDefinition marked for deletion; CustomResource deletion "
            "will begin soon",
        }
    )
    marked.setdefault("status", {})["conditions"] = conditions
    return marked


def _patched_rv(body: Any) -> str:
    if isinstance(body, dict):
        return str((body.get("metadata") or {}).get("resourceVersion") or "")
    if isinstance(body, list):
        for op in body:
            if (
                isinstance(op, dict)
                and op.get("path") == "/metadata/resourceVersion"
                and op.get("op") in ("test", "replace", "add")
            ):
                return str(op.get("value"))
    return ""


# kube-apiserver's words when the snapshot a continue token names was compacted away.
CONTINUE_TOO_OLD = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list."
)


def encode_continue(after: tuple[str, str], rv: int) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": list(after)}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[tuple[str, str], int]:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        start = data["start"]
        return (str(start[0]), str(start[1])), int(data["rv"])
    except (ValueError, KeyError, TypeError, IndexError) as exc:
        raise errors.bad_request(f"continue key is not valid: {exc}") from exc


AsyncHandler = Callable[[ApiRequest], Awaitable[Response]]
