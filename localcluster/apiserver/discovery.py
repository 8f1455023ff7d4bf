"""Discovery documents and OpenAPI v2/v3 built from the registry.

Built-in kinds take their schemas from the Kubernetes 1.31 definitions shipped with
`kubernetes-validate`; CRDs contribute their `openAPIV3Schema`. Every kind carries
`x-kubernetes-group-version-kind`, and every PATCH operation lists the `fieldValidation` query
parameter, which is how kubectl learns that the server validates fields itself.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from localcluster.apiserver.registry import (
    STATUS_VERBS,
    SUBRESOURCE_GROUP_VERSIONS,
    SUBRESOURCE_KINDS,
    SUBRESOURCE_VERBS,
    Registry,
    ResourceType,
)

KUBE_VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T00:00:00Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.cache
def builtin_definitions() -> dict[str, Any]:
    """Kubernetes 1.31 definitions keyed by their OpenAPI name (refs as `#/$defs/<name>`)."""
    import kubernetes_validate

    root = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"
    path = root / "v1.31.0-local" / "_definitions.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return dict(data["$defs"])


def _rewrite(schema: Any, prefix: str) -> Any:
    """Point `$ref`s at `prefix` and turn JSON-schema type unions back into OpenAPI types."""
    if isinstance(schema, dict):
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                out[key] = prefix + value.rsplit("/", 1)[-1]
            elif key == "type" and isinstance(value, list):
                kinds = [v for v in value if v != "null"]
                if len(kinds) == 1:
                    out[key] = kinds[0]
            else:
                out[key] = _rewrite(value, prefix)
        return out
    if isinstance(schema, list):
        return [_rewrite(v, prefix) for v in schema]
    return schema


def _closure(names: list[str]) -> set[str]:
    definitions = builtin_definitions()
    seen: set[str] = set()
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen or name not in definitions:
            continue
        seen.add(name)
        stack.extend(_refs(definitions[name]))
    return seen


def _refs(schema: Any) -> list[str]:
    found: list[str] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value.rsplit("/", 1)[-1])
            else:
                found.extend(_refs(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_refs(value))
    return found


@functools.cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    index: dict[tuple[str, str, str], str] = {}
    for name, schema in builtin_definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind") or []:
            index.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return index


def builtin_definition_name(group: str, version: str, kind: str) -> str | None:
    return _gvk_index().get((group, version, kind))


def crd_definition_name(resource: ResourceType) -> str:
    reversed_group = ".".join(reversed(resource.group.split(".")))
    return f"{reversed_group}.{resource.version}.{resource.kind}"


def crd_schema(resource: ResourceType, ref_prefix: str) -> dict[str, Any]:
    schema: dict[str, Any] = (
        copy.deepcopy(resource.schema) if resource.schema else {"type": "object"}
    )
    schema.setdefault("type", "object")
    properties: dict[str, Any] = schema.setdefault("properties", {})
    properties.setdefault(
        "apiVersion",
        {
            "type": "string",
            "description": "APIVersion defines the versioned schema of this representation "
            "of an object.",
        },
    )
    properties.setdefault(
        "kind",
        {
            "type": "string",
            "description": "Kind is a string value representing the REST resource this "
            "object represents.",
        },
    )
    properties["metadata"] = {
        "$ref": ref_prefix + OBJECT_META,
        "description": "Standard object's metadata.",
    }
    schema["x-kubernetes-group-version-kind"] = [
        {"group": resource.group, "version": resource.version, "kind": resource.kind}
    ]
    return schema


# -- discovery ---------------------------------------------------------------------------------


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def api_group_list(registry: Registry) -> dict[str, Any]:
    groups = []
    for group, versions in registry.groups():
        if not group:
            continue
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        groups.append({"name": group, "versions": entries, "preferredVersion": entries[0]})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict[str, Any] | None:
    for name, versions in registry.groups():
        if name == group and group:
            entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
            return {
                "kind": "APIGroup",
                "apiVersion": "v1",
                "name": group,
                "versions": entries,
                "preferredVersion": entries[0],
            }
    return None


def _storage_hash(resource: ResourceType) -> str:
    digest = hashlib.sha256(f"{resource.group}/{resource.version}/{resource.kind}".encode())
    return digest.hexdigest()[:11]


def api_resource_list(registry: Registry, group: str, version: str) -> dict[str, Any]:
    resources: list[dict[str, Any]] = []
    for resource in sorted(registry.in_group_version(group, version), key=lambda t: t.plural):
        entry: dict[str, Any] = {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            "verbs": list(resource.verbs),
            "storageVersionHash": _storage_hash(resource),
        }
        if resource.short_names:
            entry["shortNames"] = list(resource.short_names)
        if resource.categories:
            entry["categories"] = list(resource.categories)
        resources.append(entry)
        for sub in resource.subresources:
            sub_entry: dict[str, Any] = {
                "name": f"{resource.plural}/{sub}",
                "singularName": "",
                "namespaced": resource.namespaced,
                "kind": SUBRESOURCE_KINDS.get(sub, resource.kind),
                "verbs": list(SUBRESOURCE_VERBS.get(sub, STATUS_VERBS)),
            }
            if sub in SUBRESOURCE_GROUP_VERSIONS:
                sub_entry["group"], sub_entry["version"] = SUBRESOURCE_GROUP_VERSIONS[sub]
            resources.append(sub_entry)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


# -- OpenAPI -----------------------------------------------------------------------------------


def _parameter(name: str, location: str = "query", v3: bool = True) -> dict[str, Any]:
    if v3:
        return {
            "name": name,
            "in": location,
            "schema": {"type": "string"},
            "required": location == "path",
        }
    return {"name": name, "in": location, "type": "string", "required": location == "path"}


def _operations(
    resource: ResourceType, definition: str, prefix: str, v3: bool
) -> dict[str, dict[str, Any]]:
    gvk = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    ref = {"$ref": prefix + definition}
    if v3:
        response = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
    else:
        response = {"200": {"description": "OK", "schema": ref}}
    namespace_params = [_parameter("namespace", "path", v3)] if resource.namespaced else []
    name_params = [*namespace_params, _parameter("name", "path", v3)]
    write_params = [
        _parameter("dryRun", v3=v3),
        _parameter("fieldManager", v3=v3),
        _parameter("fieldValidation", v3=v3),
    ]

    def operation(action: str, params: list[dict[str, Any]], op_id: str) -> dict[str, Any]:
        return {
            "operationId": f"{op_id}{resource.kind}",
            "parameters": params,
            "responses": response,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    collection = resource.path(namespace="{namespace}" if resource.namespaced else None)
    item = collection + "/{name}"
    paths = {
        collection: {
            "get": operation("list", namespace_params, "list"),
            "post": operation("post", [*namespace_params, *write_params], "create"),
        },
        item: {
            "get": operation("get", name_params, "read"),
            "put": operation("put", [*name_params, *write_params], "replace"),
            "patch": operation(
                "patch", [*name_params, *write_params, _parameter("force", v3=v3)], "patch"
            ),
            "delete": operation("delete", name_params, "delete"),
        },
    }
    if resource.has_status:
        paths[item + "/status"] = {
            "get": operation("get", name_params, "readStatus"),
            "put": operation("put", [*name_params, *write_params], "replaceStatus"),
            "patch": operation("patch", [*name_params, *write_params], "patchStatus"),
        }
    return paths


def _schemas_for(resources: list[ResourceType], prefix: str) -> dict[str, Any]:
    definitions = builtin_definitions()
    builtin_names: list[str] = [OBJECT_META, "io.k8s.apimachinery.pkg.apis.meta.v1.Status"]
    crds: dict[str, Any] = {}
    for resource in resources:
        if resource.crd:
            crds[crd_definition_name(resource)] = crd_schema(resource, prefix)
        else:
            name = builtin_definition_name(resource.group, resource.version, resource.kind)
            if name:
                builtin_names.append(name)
    schemas = {name: _rewrite(definitions[name], prefix) for name in _closure(builtin_names)}
    schemas.update(crds)
    return schemas


def _definition_for(resource: ResourceType) -> str:
    if resource.crd:
        return crd_definition_name(resource)
    return builtin_definition_name(resource.group, resource.version, resource.kind) or OBJECT_META


def openapi_v3_root(registry: Registry) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for group, versions in registry.groups():
        for version in versions:
            key = f"api/{version}" if not group else f"apis/{group}/{version}"
            digest = (
                hashlib.sha256(
                    json.dumps(
                        [
                            (r.plural, r.kind, r.schema)
                            for r in registry.in_group_version(group, version)
                        ],
                        sort_keys=True,
                        default=str,
                    ).encode()
                )
                .hexdigest()[:32]
                .upper()
            )
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def openapi_v3_group_version(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    resources = registry.in_group_version(group, version)
    if not resources:
        return None
    prefix = "#/components/schemas/"
    paths: dict[str, Any] = {}
    for resource in resources:
        paths.update(_operations(resource, _definition_for(resource), prefix, v3=True))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": paths,
        "components": {"schemas": _schemas_for(resources, prefix)},
    }


def openapi_v2(registry: Registry) -> dict[str, Any]:
    prefix = "#/definitions/"
    resources = list(registry.types())
    paths: dict[str, Any] = {}
    for resource in resources:
        paths.update(_operations(resource, _definition_for(resource), prefix, v3=False))
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": paths,
        "definitions": _schemas_for(resources, prefix),
    }
