"""The official Python client against the local API server: CRUD, watch, paging, 409 and 410."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client as kube_client
from kubernetes import watch as kube_watch
from kubernetes.client.rest import ApiException


def _configmap(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": {"k": "v"},
    }


def _raw(
    api_client: kube_client.ApiClient,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None = None,
    body: Any = None,
) -> bytes:
    request = api_client.param_serialize(
        method,
        path,
        query_params=query or [],
        body=body,
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api_client.call_api(*request)
    response.read()
    return bytes(response.data)


def _namespace(core: kube_client.CoreV1Api, name: str) -> str:
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    return name


def test_list_then_watch_from_resource_version(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "watch-rv")
    core.create_namespaced_config_map(namespace, _configmap("before"))
    listing = core.list_namespaced_config_map(namespace)
    assert [c.metadata.name for c in listing.items] == ["before"]
    core.create_namespaced_config_map(namespace, _configmap("after"))
    core.patch_namespaced_config_map("after", namespace, {"data": {"k": "changed"}})
    core.delete_namespaced_config_map("before", namespace)
    seen = []
    stream = kube_watch.Watch().stream(
        core.list_namespaced_config_map,
        namespace,
        resource_version=listing.metadata.resource_version,
        timeout_seconds=1,
    )
    for event in stream:
        seen.append((event["type"], event["object"].metadata.name))
    assert seen == [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "before")]


def test_watch_from_compacted_resource_version_is_gone(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "compacted")
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    # The fixture keeps 200 events of history; 250 writes push `start` out of it.
    for index in range(125):
        core.create_namespaced_config_map(namespace, _configmap(f"churn-{index}"))
        core.delete_namespaced_config_map(f"churn-{index}", namespace)
    with pytest.raises(ApiException) as raised:
        for _ in kube_watch.Watch().stream(
            core.list_namespaced_config_map, namespace, resource_version=start, timeout_seconds=2
        ):
            pass
    assert raised.value.status == 410
    assert "too old resource version" in str(raised.value.reason)
    raw = _raw(
        api_client,
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        [("watch", "true"), ("resourceVersion", start), ("timeoutSeconds", "1")],
    )
    event = json.loads(raw.decode().splitlines()[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"
    assert event["object"]["message"].startswith(f"too old resource version: {start} (")


def test_a_continue_token_older_than_the_history_is_gone(
    api_client: kube_client.ApiClient,
) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "old-continue")
    for index in range(3):
        core.create_namespaced_config_map(namespace, _configmap(f"page-{index}"))
    token = core.list_namespaced_config_map(namespace, limit=1).metadata._continue
    assert token
    for index in range(125):  # 250 writes push the token's snapshot out of the history
        core.create_namespaced_config_map(namespace, _configmap(f"churn-{index}"))
        core.delete_namespaced_config_map(f"churn-{index}", namespace)
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_config_map(namespace, limit=1, _continue=token)
    assert raised.value.status == 410
    status = json.loads(raised.value.body)
    assert status["reason"] == "Expired"
    assert status["message"].startswith("The provided continue parameter is too old")


def test_stale_update_conflicts(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    created = core.create_namespaced_config_map("default", _configmap("occ"))
    core.patch_namespaced_config_map("occ", "default", {"data": {"k": "new"}})
    stale = _configmap("occ")
    stale["metadata"]["resourceVersion"] = created.metadata.resource_version
    with pytest.raises(ApiException) as raised:
        core.replace_namespaced_config_map("occ", "default", stale)
    assert raised.value.status == 409
    status = json.loads(raised.value.body)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on configmaps "occ": the object has been modified; please '
        "apply your changes to the latest version and try again"
    )


def test_paging_with_limit_and_continue(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "paging")
    for index in range(7):
        core.create_namespaced_config_map(namespace, _configmap(f"page-{index}", {"paged": "yes"}))
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_config_map(
            namespace, limit=3, _continue=token, label_selector="paged=yes"
        )
        names.extend(c.metadata.name for c in page.items)
        pages += 1
        token = page.metadata._continue
        if not token:
            break
        assert page.metadata.remaining_item_count == 7 - len(names)
    assert pages == 3
    assert names == [f"page-{i}" for i in range(7)]


def test_generate_name_and_resource_versions_grow(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    first = core.create_namespaced_config_map("default", {"metadata": {"generateName": "gen-"}})
    second = core.create_namespaced_config_map("default", {"metadata": {"generateName": "gen-"}})
    assert first.metadata.name.startswith("gen-") and len(first.metadata.name) == 9
    assert first.metadata.name != second.metadata.name
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)


def test_delete_preconditions_and_dry_run(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    core.create_namespaced_config_map("default", _configmap("guarded"))
    with pytest.raises(ApiException) as raised:
        core.delete_namespaced_config_map(
            "guarded", "default", body={"preconditions": {"uid": "not-the-uid"}}
        )
    assert raised.value.status == 409
    core.delete_namespaced_config_map("guarded", "default", dry_run="All")
    assert core.read_namespaced_config_map("guarded", "default").metadata.name == "guarded"
    core.create_namespaced_config_map("default", _configmap("dry"), dry_run="All")
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_config_map("dry", "default")
    assert missing.value.status == 404


def test_field_selectors_on_pods(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "fields")
    for name in ("a", "b"):
        core.create_namespaced_pod(
            namespace,
            {
                "metadata": {"name": name},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        )
    _raw(
        api_client,
        "POST",
        f"/api/v1/namespaces/{namespace}/pods/b/binding",
        body={
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": "b"},
            "target": {"name": "n1"},
        },
    )
    bound = core.list_namespaced_pod(namespace, field_selector="spec.nodeName=n1")
    assert [p.metadata.name for p in bound.items] == ["b"]
    pending = core.list_namespaced_pod(
        namespace, field_selector="status.phase=Pending,metadata.name!=b"
    )
    assert [p.metadata.name for p in pending.items] == ["a"]
    with pytest.raises(ApiException) as raised:
        core.list_namespaced_pod(namespace, field_selector="spec.bogus=1")
    assert raised.value.status == 400


def test_watch_bookmarks_and_initial_events(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "bookmarks")
    core.create_namespaced_config_map(namespace, _configmap("present"))
    raw = _raw(
        api_client,
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps",
        [("watch", "1"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "1")],
    )
    events = [json.loads(line) for line in raw.decode().splitlines()]
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "present"
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks, "the fixture sends a bookmark every 0.5 s"
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(
        events[0]["object"]["metadata"]["resourceVersion"]
    )


def test_secret_string_data_becomes_data(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    secret = core.create_namespaced_secret(
        "default", {"metadata": {"name": "sd"}, "stringData": {"password": "hunter2"}}
    )
    assert secret.data == {"password": "aHVudGVyMg=="}
    assert secret.type == "Opaque"


def test_legacy_watch_path_on_one_object(api_client: kube_client.ApiClient) -> None:
    core = kube_client.CoreV1Api(api_client)
    namespace = _namespace(core, "legacy")
    for name in ("one", "two"):
        core.create_namespaced_config_map(namespace, _configmap(name))
    raw = _raw(
        api_client,
        "GET",
        f"/api/v1/watch/namespaces/{namespace}/configmaps/two",
        [("timeoutSeconds", "1")],
    )
    events = [json.loads(line) for line in raw.decode().splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "two")]
