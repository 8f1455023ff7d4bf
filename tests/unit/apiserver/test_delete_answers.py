"""Which stores answer a DELETE with the deleted object, checked against kube-apiserver's own
OpenAPI as the official Python client is generated from it: a store with
`ReturnDeletedObject: true` documents its own type as the DELETE answer, every other a Status."""

from __future__ import annotations

import inspect
import re

import pytest
from kubernetes import client as kube_client

from localcluster.apiserver.registry import BUILTIN_TYPES, RETURNS_DELETED_OBJECT, ResourceType

# Stores whose own Delete first marks the object terminating, so that kube answers the object
# although their OpenAPI names a Status: a namespace (spec.finalizers) always does.
PENDING_FIRST = frozenset({("", "namespaces")})


def _api_class(resource: ResourceType) -> type:
    words = (resource.group.removesuffix(".k8s.io") or "core").split(".")
    name = "".join(w.capitalize() for w in words) + resource.version.capitalize() + "Api"
    cls: type = getattr(kube_client, name)
    return cls


def _snake(kind: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", kind).lower()


def documented_answer(resource: ResourceType) -> str:
    """The model kube's OpenAPI names as the 200 answer of this resource's DELETE."""
    scope = "namespaced_" if resource.namespaced else ""
    method = getattr(_api_class(resource), f"delete_{scope}{_snake(resource.kind)}_with_http_info")
    found = re.search(r"'200': \"(\w+)\"", inspect.getsource(method))
    assert found is not None, method
    return found.group(1)


@pytest.mark.parametrize("resource", BUILTIN_TYPES, ids=lambda r: r.qualified)
def test_delete_answer_matches_kube_apiserver(resource: ResourceType) -> None:
    documented = documented_answer(resource)
    returns_object = documented != "object"  # the client's name for Status-or-anything
    if resource.storage_key in PENDING_FIRST:
        assert resource.returns_deleted_object
    else:
        assert resource.returns_deleted_object == returns_object, documented
        if returns_object:
            assert documented == f"V1{resource.kind}"


def test_every_listed_store_is_served() -> None:
    served = {t.storage_key for t in BUILTIN_TYPES}
    assert served >= RETURNS_DELETED_OBJECT
