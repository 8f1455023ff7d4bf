"""What the official Python client relies on: DELETE answers decoded into the right model,
error bodies byte for byte as kube-apiserver writes them, and the batch/v1, core/v1
ReplicationController and apiregistration.k8s.io APIService types served."""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml
from kubernetes import client as kube_client
from kubernetes import utils as kube_utils
from kubernetes.client.rest import ApiException

from localcluster.apiserver.server import APIServer

Kubectl = Any  # the `kubectl` fixture of conftest.py


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def http(apiserver: APIServer) -> Iterator[httpx.Client]:
    """Raw HTTPS to the server, to see bodies exactly as written."""
    config = yaml.safe_load(apiserver.kubeconfig_path.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
    with httpx.Client(base_url=cluster["server"], verify=context, headers=headers) as client:
        yield client


@pytest.fixture(scope="module")
def core(api_client: kube_client.ApiClient) -> kube_client.CoreV1Api:
    return kube_client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def batch(api_client: kube_client.ApiClient) -> kube_client.BatchV1Api:
    return kube_client.BatchV1Api(api_client)


# -- DELETE answers ------------------------------------------------------------------------------


def test_stores_that_return_the_deleted_object_decode_as_their_model(
    core: kube_client.CoreV1Api, api_client: kube_client.ApiClient
) -> None:
    name = _name("gone")
    core.create_namespaced_service(
        "default", {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}
    )
    deleted = core.delete_namespaced_service(name, "default")
    assert isinstance(deleted, kube_client.V1Service)
    assert deleted.metadata.name == name

    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": name},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
    )
    claim = core.delete_namespaced_persistent_volume_claim(name, "default")
    assert isinstance(claim, kube_client.V1PersistentVolumeClaim)

    core.create_persistent_volume(
        {
            "metadata": {"name": name},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "hostPath": {"path": "/tmp"},
            },
        }
    )
    assert isinstance(core.delete_persistent_volume(name), kube_client.V1PersistentVolume)

    core.create_namespaced_resource_quota(
        "default", {"metadata": {"name": name}, "spec": {"hard": {"pods": "3"}}}
    )
    quota = core.delete_namespaced_resource_quota(name, "default")
    assert isinstance(quota, kube_client.V1ResourceQuota)

    storage = kube_client.StorageV1Api(api_client)
    storage.create_storage_class({"metadata": {"name": name}, "provisioner": "example.com/x"})
    assert isinstance(storage.delete_storage_class(name), kube_client.V1StorageClass)


def test_other_stores_answer_a_success_status_naming_the_resource(http: httpx.Client) -> None:
    name = _name("cm")
    created = http.post("/api/v1/namespaces/default/configmaps", json={"metadata": {"name": name}})
    uid = created.json()["metadata"]["uid"]
    answer = http.delete(f"/api/v1/namespaces/default/configmaps/{name}")
    assert answer.status_code == 200
    assert answer.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success",'
        f'"details":{{"name":"{name}","kind":"configmaps","uid":"{uid}"}}}}\n'
    )
    rc = {
        "metadata": {"name": name},
        "spec": {
            "selector": {"app": name},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }
    http.post("/api/v1/namespaces/default/replicationcontrollers", json=rc)
    details = http.delete(f"/api/v1/namespaces/default/replicationcontrollers/{name}").json()
    assert details["kind"] == "Status"
    assert list(details["details"]) == ["name", "kind", "uid"]
    http.post(
        "/apis/batch/v1/namespaces/default/jobs",
        json={
            "metadata": {"name": name},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }
                }
            },
        },
    )
    job = http.delete(f"/apis/batch/v1/namespaces/default/jobs/{name}").json()
    assert list(job["details"]) == ["name", "group", "kind", "uid"]
    assert job["details"]["group"] == "batch"


@pytest.mark.parametrize(
    ("options", "code", "finalizers"),
    [
        ({"propagationPolicy": "Foreground"}, 200, ["example.com/keep", "foregroundDeletion"]),
        ({"propagationPolicy": "Orphan"}, 200, ["example.com/keep", "orphan"]),
        ({"propagationPolicy": "Background"}, 200, ["example.com/keep"]),
        # kube answers 202 Accepted when orphanDependents=false leaves the deletion pending.
        ({"orphanDependents": False}, 202, ["example.com/keep"]),
    ],
)
def test_a_pending_deletion_answers_the_object(
    http: httpx.Client, options: dict[str, Any], code: int, finalizers: list[str]
) -> None:
    name = _name("pending")
    http.post(
        "/api/v1/namespaces/default/configmaps",
        json={"metadata": {"name": name, "finalizers": ["example.com/keep"]}},
    )
    answer = http.request("DELETE", f"/api/v1/namespaces/default/configmaps/{name}", json=options)
    assert answer.status_code == code
    body = answer.json()
    assert body["kind"] == "ConfigMap"
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["finalizers"] == finalizers
    http.patch(
        f"/api/v1/namespaces/default/configmaps/{name}",
        content=json.dumps({"metadata": {"finalizers": None}}),
        headers={"Content-Type": "application/merge-patch+json"},
    )


def test_foreground_deletion_of_a_job_answers_the_job(batch: kube_client.BatchV1Api) -> None:
    name = _name("fg")
    batch.create_namespaced_job("default", _job(name))
    deleted = batch.delete_namespaced_job(
        name, "default", body=kube_client.V1DeleteOptions(propagation_policy="Foreground")
    )
    # The client types this answer loosely (a Status or a Job): it stays a dict.
    assert deleted["kind"] == "Job"
    assert deleted["metadata"]["finalizers"] == ["foregroundDeletion"]


# -- error bodies ---------------------------------------------------------------------------------


def test_an_error_body_is_the_status_as_kube_apiserver_writes_it(http: httpx.Client) -> None:
    name = _name("dup")
    body = {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]}}
    http.post("/api/v1/namespaces/default/services", json=body)
    answer = http.post("/api/v1/namespaces/default/services", json=body)
    assert answer.status_code == 409
    assert answer.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"services \\"{name}\\" already exists","reason":"AlreadyExists",'
        f'"details":{{"name":"{name}","kind":"services"}},"code":409}}\n'
    )
    missing = http.get("/apis/apps/v1/namespaces/default/deployments/nowhere")
    assert missing.text == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"deployments.apps \\"nowhere\\" not found","reason":"NotFound",'
        '"details":{"name":"nowhere","group":"apps","kind":"deployments"},"code":404}\n'
    )


def test_invalid_causes_keep_kube_field_order(http: httpx.Client) -> None:
    answer = http.post(
        "/apis/batch/v1/namespaces/default/jobs",
        json={
            "metadata": {"name": "always"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        },
    )
    assert answer.status_code == 422
    status = answer.json()
    assert list(status) == [
        "kind",
        "apiVersion",
        "metadata",
        "status",
        "message",
        "reason",
        "details",
        "code",
    ]
    assert list(status["details"]) == ["name", "group", "kind", "causes"]
    (cause,) = status["details"]["causes"]
    assert list(cause) == ["reason", "message", "field"]
    assert status["message"] == (
        'Job.batch "always" is invalid: spec.template.spec.restartPolicy: Unsupported value: '
        '"Always": supported values: "OnFailure", "Never"'
    )


def test_create_from_yaml_reports_each_conflict_verbatim(
    api_client: kube_client.ApiClient,
) -> None:
    name = _name("multi")
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"ports": [{"port": 80}]},
        },
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}},
    ]
    kube_utils.create_from_yaml(api_client, yaml_objects=docs, namespace="default")
    with pytest.raises(kube_utils.FailToCreateError) as failure:
        kube_utils.create_from_yaml(api_client, yaml_objects=docs, namespace="default")
    expected = "".join(
        "Error from server (Conflict): "
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        f'"message":"{plural} \\"{name}\\" already exists","reason":"AlreadyExists",'
        f'"details":{{"name":"{name}","kind":"{plural}"}},"code":409}}\n'
        for plural in ("services", "configmaps")
    )
    assert str(failure.value) == expected


# -- batch/v1, ReplicationControllers, APIServices -----------------------------------------------


def _job(name: str, restart: str = "Never") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "restartPolicy": restart,
                    "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
                },
            }
        },
    }


def test_a_job_is_defaulted_and_selects_its_pods_by_uid(batch: kube_client.BatchV1Api) -> None:
    name = _name("job")
    created = batch.create_namespaced_job("default", _job(name))
    spec = created.spec
    assert (spec.completions, spec.parallelism, spec.backoff_limit) == (1, 1, 6)
    assert spec.completion_mode == "NonIndexed"
    assert spec.suspend is False
    uid = created.metadata.uid
    assert spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    assert spec.template.metadata.labels == {
        "app": name,
        "batch.kubernetes.io/controller-uid": uid,
        "controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "job-name": name,
    }
    read = batch.read_namespaced_job(name, "default")
    assert read.spec.template.spec.containers[0].command == ["true"]
    listed = batch.list_namespaced_job("default", label_selector=None)
    assert name in [j.metadata.name for j in listed.items]


def test_a_job_whose_pods_restart_is_invalid(batch: kube_client.BatchV1Api) -> None:
    with pytest.raises(ApiException) as failure:
        batch.create_namespaced_job("default", _job(_name("bad"), "Always"))
    assert failure.value.status == 422
    assert "spec.template.spec.restartPolicy" in str(failure.value.body)


def test_cronjobs_are_served_defaulted_and_their_schedule_validated(
    batch: kube_client.BatchV1Api,
) -> None:
    name = _name("cron")
    body = {
        "metadata": {"name": name},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": _job(name)["spec"]}},
    }
    created = batch.create_namespaced_cron_job("default", body)
    assert created.spec.concurrency_policy == "Allow"
    assert (created.spec.successful_jobs_history_limit, created.spec.failed_jobs_history_limit) == (
        3,
        1,
    )
    deleted = batch.delete_namespaced_cron_job(name, "default")
    assert deleted["kind"] == "Status"
    assert deleted["details"]["name"] == name
    body["spec"]["schedule"] = "every minute"
    body["metadata"]["name"] = _name("cron")
    with pytest.raises(ApiException) as failure:
        batch.create_namespaced_cron_job("default", body)
    assert failure.value.status == 422
    assert "spec.schedule" in str(failure.value.body)


def test_replication_controllers_default_their_selector(core: kube_client.CoreV1Api) -> None:
    name = _name("rc")
    created = core.create_namespaced_replication_controller(
        "default",
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": 2,
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        },
    )
    assert created.spec.selector == {"app": name}
    assert created.metadata.labels == {"app": name}
    assert core.read_namespaced_replication_controller(name, "default").spec.replicas == 2
    core.delete_namespaced_replication_controller(name, "default", propagation_policy="Background")
    with pytest.raises(ApiException) as failure:
        core.read_namespaced_replication_controller(name, "default")
    assert failure.value.status == 404


def test_apiservices_are_stored_and_named_after_their_group_version(
    api_client: kube_client.ApiClient,
) -> None:
    api = kube_client.ApiregistrationV1Api(api_client)
    body = {
        "metadata": {"name": "v1alpha1.example.vcjob.io"},
        "spec": {
            "group": "example.vcjob.io",
            "version": "v1alpha1",
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "insecureSkipTLSVerify": True,
            "service": {"name": "api", "namespace": "default"},
        },
    }
    created = api.create_api_service(body)
    assert created.spec.group == "example.vcjob.io"
    with pytest.raises(ApiException) as conflict:
        api.create_api_service(body)
    assert conflict.value.status == 409
    assert json.loads(conflict.value.body)["message"] == (
        'apiservices.apiregistration.k8s.io "v1alpha1.example.vcjob.io" already exists'
    )
    api.delete_api_service("v1alpha1.example.vcjob.io")
    body["metadata"]["name"] = "wrong"
    with pytest.raises(ApiException) as invalid:
        api.create_api_service(body)
    assert invalid.value.status == 422
    assert "must be v1alpha1.example.vcjob.io" in json.loads(invalid.value.body)["message"]


def test_kubectl_get_jobs_means_batch_v1_jobs(kubectl: Kubectl) -> None:
    resources = kubectl.run("api-resources", "--api-group=batch", "-o", "name").stdout.split()
    assert resources == ["cronjobs.batch", "jobs.batch"]
    name = _name("kj")
    kubectl.run("create", "job", name, "--image=busybox")
    listed = json.loads(kubectl.run("get", "jobs", "-o", "json").stdout)
    assert all(item["apiVersion"] == "batch/v1" for item in listed["items"])
    assert name in [item["metadata"]["name"] for item in listed["items"]]
    table = kubectl.run("get", "jobs", name).stdout.split("\n")[0].split()
    assert table == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]


# -- streaming subresources -------------------------------------------------------------------


@pytest.mark.parametrize("subresource", ["exec", "attach"])
def test_streams_into_simulated_pods_are_a_clear_404(http: httpx.Client, subresource: str) -> None:
    answer = http.get(f"/api/v1/namespaces/default/pods/any/{subresource}")
    assert answer.status_code == 404
    status = answer.json()
    assert status["reason"] == "NotFound"
    assert status["message"] == (
        f"pods/{subresource} is not supported by the vcjob local API server; "
        "a pod that really runs is reached from this machine at its pod IP"
    )


def test_port_forward_to_a_missing_pod_is_kubes_404(http: httpx.Client) -> None:
    answer = http.get("/api/v1/namespaces/default/pods/any/portforward")
    assert answer.status_code == 404
    assert answer.json()["message"] == 'pods "any" not found'


def test_deleting_a_crd_answers_it_terminating_and_removes_its_instances(
    http: httpx.Client,
) -> None:
    group = f"g{uuid.uuid4().hex[:6]}.example.com"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        },
    }
    assert http.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).is_success
    widgets = f"/apis/{group}/v1/namespaces/default/widgets"
    created = http.post(
        widgets, json={"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}}
    )
    assert created.status_code == 201
    # A custom resource's own DELETE answers a Status (its store does not return the object).
    again = http.post(
        widgets, json={"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w2"}}
    )
    assert again.status_code == 201
    assert http.delete(f"{widgets}/w2").json()["details"] == {
        "name": "w2",
        "group": group,
        "kind": "widgets",
        "uid": again.json()["metadata"]["uid"],
    }
    answer = http.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}")
    assert answer.status_code == 200
    body = answer.json()
    assert body["kind"] == "CustomResourceDefinition"
    assert body["metadata"]["deletionTimestamp"]
    assert "customresourcecleanup.apiextensions.k8s.io" in body["metadata"]["finalizers"]
    assert {"type": "Terminating", "status": "True"}.items() <= body["status"]["conditions"][
        -1
    ].items()
    assert (
        http.get(
            f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
        ).status_code
        == 404
    )
    assert http.get(f"{widgets}/w").status_code == 404
