"""The real kubectl against the local API server: what users would notice."""

from __future__ import annotations

import json
import time
from typing import Any

import yaml

Kubectl = Any

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: web, tier: {tier}}}
spec:
  containers:
  - name: main
    image: nginx:1.25
"""

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Schedule, type: string, jsonPath: .spec.cronSpec}
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
              replicas: {type: integer}
          status:
            type: object
            properties:
              phase: {type: string}
"""

WATCHED = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seen, labels: {watched: 'yes'}}\n"

CRONTAB = """
apiVersion: stable.example.com/v1
kind: CronTab
metadata: {name: nightly}
spec: {cronSpec: "0 3 * * *", replicas: 2}
"""


def test_create_get_and_not_found(kubectl: Kubectl) -> None:
    assert (
        "pod/web-1 created"
        in kubectl.run("create", "-f", "-", stdin=POD.format(name="web-1", tier="fe")).stdout
    )
    pod = json.loads(kubectl.run("get", "pod", "web-1", "-o", "json").stdout)
    assert pod["status"]["phase"] == "Pending"
    assert pod["metadata"]["uid"] and pod["metadata"]["creationTimestamp"].endswith("Z")
    as_yaml = yaml.safe_load(kubectl.run("get", "pod", "web-1", "-o", "yaml").stdout)
    assert as_yaml["spec"]["schedulerName"] == "default-scheduler"
    missing = kubectl.run("get", "configmap", "nope", check=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): configmaps "nope" not found' in missing.stderr
    again = kubectl.run("create", "-f", "-", stdin=POD.format(name="web-1", tier="fe"), check=False)
    assert (
        'Error from server (AlreadyExists): error when creating "STDIN": '
        'pods "web-1" already exists' in again.stderr
    )


def test_wide_output_selectors_and_describe(kubectl: Kubectl) -> None:
    kubectl.run("create", "-f", "-", stdin=POD.format(name="web-2", tier="be"))
    wide = kubectl.run("get", "pods", "web-2", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert wide[1].split()[:3] == ["web-2", "0/1", "Pending"]
    selected = kubectl.run("get", "pods", "-l", "tier=be", "-o", "name").stdout.split()
    assert selected == ["pod/web-2"]
    selected = kubectl.run("get", "pods", "-l", "tier in (fe,be),app", "-o", "name").stdout.split()
    assert "pod/web-2" in selected
    assert (
        "pod/web-2" not in kubectl.run("get", "pods", "-l", "tier!=be", "-o", "name").stdout.split()
    )
    described = kubectl.run("describe", "pod", "web-2").stdout
    assert "Name:" in described and "web-2" in described and "nginx:1.25" in described


def test_client_side_apply_twice_and_server_side_apply(kubectl: Kubectl) -> None:
    manifest = POD.format(name="applied", tier="fe")
    assert "pod/applied created" in kubectl.run("apply", "-f", "-", stdin=manifest).stdout
    changed = manifest.replace("tier: fe", "tier: edge")
    assert "pod/applied configured" in kubectl.run("apply", "-f", "-", stdin=changed).stdout
    pod = json.loads(kubectl.run("get", "pod", "applied", "-o", "json").stdout)
    assert pod["metadata"]["labels"]["tier"] == "edge"
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod["metadata"]["annotations"]
    assert "unchanged" in kubectl.run("apply", "-f", "-", stdin=changed).stdout
    cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '1', b: '2'}\n"
    assert "serverside-applied" in kubectl.run("apply", "--server-side", "-f", "-", stdin=cm).stdout
    kubectl.run("apply", "--server-side", "-f", "-", stdin=cm.replace(", b: '2'", ""))
    data = json.loads(kubectl.run("get", "cm", "ssa", "-o", "json").stdout)["data"]
    assert data == {"a": "1"}, "a field the manager stopped applying is removed"
    other = cm.replace("a: '1', b: '2'", "a: '9'")
    args = ["apply", "--server-side", "--field-manager=other", "-f", "-"]
    conflict = kubectl.run(*args, stdin=other, check=False)
    assert conflict.returncode == 1
    assert 'Apply failed with 1 conflict: conflict with "kubectl": .data.a' in conflict.stderr
    kubectl.run(*args, "--force-conflicts", stdin=other)
    data = json.loads(kubectl.run("get", "cm", "ssa", "-o", "json").stdout)["data"]
    assert data == {"a": "9"}


def test_patch_types(kubectl: Kubectl) -> None:
    kubectl.run("create", "-f", "-", stdin=POD.format(name="patched", tier="fe"))
    kubectl.run(
        "patch", "pod", "patched", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}'
    )
    kubectl.run(
        "patch",
        "pod",
        "patched",
        "--type",
        "json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/j","value":"2"}]',
    )
    kubectl.run(
        "patch",
        "pod",
        "patched",
        "--type",
        "strategic",
        "-p",
        '{"spec":{"containers":[{"name":"main","image":"nginx:1.27"}]}}',
    )
    pod = json.loads(kubectl.run("get", "pod", "patched", "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"app": "web", "tier": "fe", "m": "1", "j": "2"}
    same = kubectl.run(
        "patch", "pod", "patched", "--type", "merge", "-p", '{"metadata":{"labels":{"m":"1"}}}'
    )
    assert "pod/patched patched (no change)" in same.stdout
    assert [c["image"] for c in pod["spec"]["containers"]] == ["nginx:1.27"]
    assert pod["spec"]["containers"][0]["name"] == "main"


def test_replace_with_stale_object_conflicts(kubectl: Kubectl) -> None:
    kubectl.run("create", "configmap", "stale", "--from-literal=k=v1")
    snapshot = kubectl.run("get", "cm", "stale", "-o", "json").stdout
    kubectl.run("patch", "cm", "stale", "--type", "merge", "-p", '{"data":{"k":"v2"}}')
    result = kubectl.run("replace", "-f", "-", stdin=snapshot, check=False)
    assert result.returncode == 1
    assert (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be '
        'fulfilled on configmaps "stale": the object has been modified; please apply your '
        "changes to the latest version and try again"
    ) in result.stderr


def test_delete_cascade_policies_and_finalizers(kubectl: Kubectl) -> None:
    for name in ("bg", "fg", "orphaned"):
        kubectl.run("create", "configmap", name)
    kubectl.run("delete", "cm", "bg", "--cascade=background")
    assert kubectl.run("get", "cm", "bg", check=False).returncode == 1
    kubectl.run("delete", "cm", "fg", "--cascade=foreground", "--wait=false")
    fg = json.loads(kubectl.run("get", "cm", "fg", "-o", "json").stdout)
    assert fg["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert fg["metadata"]["deletionTimestamp"]
    kubectl.run("delete", "cm", "orphaned", "--cascade=orphan", "--wait=false")
    orphaned = json.loads(kubectl.run("get", "cm", "orphaned", "-o", "json").stdout)
    assert orphaned["metadata"]["finalizers"] == ["orphan"]
    waiter = kubectl.popen("wait", "--for=delete", "cm/orphaned", "--timeout=20s")
    time.sleep(0.5)
    kubectl.run(
        "patch", "cm", "orphaned", "--type", "merge", "-p", '{"metadata":{"finalizers":null}}'
    )
    out, _ = waiter.communicate(timeout=25)
    assert waiter.returncode == 0, out
    kubectl.run(
        "patch",
        "cm",
        "fg",
        "--type",
        "json",
        "-p",
        '[{"op":"remove","path":"/metadata/finalizers"}]',
    )
    assert kubectl.run("get", "cm", "fg", check=False).returncode == 1


def test_bound_pod_stays_terminating_until_confirmed(kubectl: Kubectl) -> None:
    kubectl.run("create", "-f", "-", stdin=POD.format(name="bound", tier="fe"))
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "bound"},
        "target": {"kind": "Node", "name": "node-1"},
    }
    kubectl.run(
        "create",
        "--raw",
        "/api/v1/namespaces/default/pods/bound/binding",
        "-f",
        "-",
        stdin=json.dumps(binding),
    )
    kubectl.run("delete", "pod", "bound", "--wait=false")
    pod = json.loads(kubectl.run("get", "pod", "bound", "-o", "json").stdout)
    assert pod["spec"]["nodeName"] == "node-1"
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30
    assert "Terminating" in kubectl.run("get", "pod", "bound").stdout
    kubectl.run("delete", "pod", "bound", "--grace-period=0", "--force")
    assert kubectl.run("get", "pod", "bound", check=False).returncode == 1


def test_get_watch_streams_changes(kubectl: Kubectl) -> None:
    watcher = kubectl.popen("get", "configmaps", "-l", "watched=yes", "-w", "--output-watch-events")
    try:
        time.sleep(1.0)
        kubectl.run(
            "create",
            "-f",
            "-",
            stdin=WATCHED,
        )
        kubectl.run("delete", "cm", "seen")
        lines: list[str] = []
        assert watcher.stdout is not None
        deadline = time.monotonic() + 10
        while len(lines) < 3 and time.monotonic() < deadline:
            line = watcher.stdout.readline()
            if line:
                lines.append(line)
    finally:
        watcher.kill()
        watcher.communicate(timeout=5)
    assert lines[0].split()[:2] == ["EVENT", "NAME"]
    assert [line.split()[:2] for line in lines[1:3]] == [["ADDED", "seen"], ["DELETED", "seen"]]


def test_crd_custom_resources_and_status_subresource(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=CRD)
    kubectl.run(
        "wait", "--for", "condition=established", "crd/crontabs.stable.example.com", "--timeout=10s"
    )
    assert (
        "crontab.stable.example.com/nightly created"
        in kubectl.run("create", "-f", "-", stdin=CRONTAB).stdout
    )
    listing = kubectl.run("get", "ct").stdout.splitlines()
    assert listing[0].split() == ["NAME", "SCHEDULE", "PHASE"]
    assert listing[1].split()[0] == "nightly"
    wide = kubectl.run("get", "crontabs", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "SCHEDULE", "PHASE", "REPLICAS"]
    assert wide[1].split()[-1] == "2"
    # The main endpoint ignores status; /status changes only status.
    kubectl.run(
        "patch",
        "ct",
        "nightly",
        "--type",
        "merge",
        "-p",
        '{"status":{"phase":"Ignored"},"spec":{"replicas":3}}',
    )
    kubectl.run(
        "patch",
        "ct",
        "nightly",
        "--subresource",
        "status",
        "--type",
        "merge",
        "-p",
        '{"status":{"phase":"Running"},"spec":{"replicas":9}}',
    )
    cron = json.loads(kubectl.run("get", "ct", "nightly", "-o", "json").stdout)
    assert cron["status"] == {"phase": "Running"}
    assert cron["spec"]["replicas"] == 3
    assert cron["metadata"]["generation"] == 2
    kubectl.run("wait", "--for=jsonpath={.status.phase}=Running", "ct/nightly", "--timeout=10s")
    strategic = kubectl.run("patch", "ct", "nightly", "-p", '{"spec":{"replicas":1}}', check=False)
    assert strategic.returncode == 1 and "strategic-merge-patch" in strategic.stderr
    explained = kubectl.run("explain", "crontab.spec").stdout
    assert "cronSpec" in explained
    assert "nightly" in kubectl.run("get", "ct", "nightly", "-o", "name").stdout


def test_unknown_fields_strict_by_default(kubectl: Kubectl) -> None:
    bad = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: strict}\ndata: {a: b}\nbogus: 1\n"
    result = kubectl.run("create", "-f", "-", stdin=bad, check=False)
    assert result.returncode == 1
    assert 'strict decoding error: unknown field "bogus"' in result.stderr
    warned = kubectl.run("create", "--validate=warn", "-f", "-", stdin=bad)
    assert 'unknown field "bogus"' in warned.stderr


def test_invalid_name_and_missing_namespace(kubectl: Kubectl) -> None:
    bad_name = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n"
    result = kubectl.run("create", "-f", "-", stdin=bad_name, check=False)
    # kubectl words 422 Invalid itself: "The <Kind> "<name>" is invalid: <field>: <message>".
    assert result.stderr.startswith(
        'The ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain"
    )
    result = kubectl.run(
        "create",
        "-n",
        "missing-ns",
        "-f",
        "-",
        stdin=bad_name.replace("Bad_Name", "x"),
        check=False,
    )
    assert (
        'Error from server (NotFound): error when creating "STDIN": '
        'namespaces "missing-ns" not found' in result.stderr
    )


def test_namespace_deletion_terminates(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", "doomed")
    kubectl.run("delete", "namespace", "doomed", "--wait=false")
    namespace = json.loads(kubectl.run("get", "ns", "doomed", "-o", "json").stdout)
    assert namespace["status"]["phase"] == "Terminating"
    assert namespace["spec"]["finalizers"] == ["kubernetes"]
    late = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late, namespace: doomed}\n"
    refused = kubectl.run("create", "-f", "-", stdin=late, check=False)
    assert "Error from server (Forbidden)" in refused.stderr
    assert "because it is being terminated" in refused.stderr
    namespace["spec"]["finalizers"] = []
    kubectl.run(
        "replace",
        "--raw",
        "/api/v1/namespaces/doomed/finalize",
        "-f",
        "-",
        stdin=json.dumps(namespace),
    )
    assert kubectl.run("get", "ns", "doomed", check=False).returncode == 1


def test_unsupported_subresource_is_explained(kubectl: Kubectl) -> None:
    kubectl.run("create", "-f", "-", stdin=POD.format(name="execless", tier="fe"))
    result = kubectl.run("exec", "execless", "--", "true", check=False)
    assert result.returncode == 1
    assert "not supported" in result.stderr


INGRESS_AND_UNKNOWN_KIND = """
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web}
spec:
  rules:
  - host: a.example
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: example.com/v1
kind: Foo
metadata: {name: foo}
"""


def test_apply_of_an_unknown_kind_says_install_the_crd(kubectl: Kubectl) -> None:
    """kubectl validates a kind the v3 documents lack through /openapi/v2 (protobuf)."""
    result = kubectl.run("apply", "-f", "-", stdin=INGRESS_AND_UNKNOWN_KIND, check=False)
    assert "ingress.networking.k8s.io/web created" in result.stdout
    assert result.returncode == 1
    assert (
        'resource mapping not found for name: "foo" namespace: "" from "STDIN": no matches for '
        'kind "Foo" in version "example.com/v1"' in result.stderr
    )
    assert "ensure CRDs are installed first" in result.stderr


def test_built_in_objects_are_type_checked_and_pods_need_containers(kubectl: Kubectl) -> None:
    kubectl.run("create", "deployment", "typed", "--image=nginx:1.25")
    patched = kubectl.run(
        "patch",
        "deploy",
        "typed",
        "--type",
        "merge",
        "-p",
        '{"spec":{"replicas":"x"}}',
        check=False,
    )
    assert patched.returncode == 1
    assert (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        "string into Go struct field Deployment.spec.replicas of type int32" in patched.stderr
    )
    assert "typed" in kubectl.run("describe", "deploy", "typed").stdout  # nothing was stored
    garbage = "apiVersion: v1\nkind: Pod\nmetadata: {name: garbage}\nspec: {containers: nope}\n"
    refused = kubectl.run("create", "-f", "-", stdin=garbage, check=False)
    assert refused.returncode == 1
    assert "cannot unmarshal string into Go struct field Pod.spec.containers" in refused.stderr
    empty = "apiVersion: v1\nkind: Pod\nmetadata: {name: empty}\nspec: {}\n"
    invalid = kubectl.run("create", "-f", "-", stdin=empty, check=False)
    assert invalid.returncode == 1
    assert 'The Pod "empty" is invalid: spec.containers: Required value' in invalid.stderr


def test_field_selectors_on_unset_booleans_select_false(kubectl: Kubectl) -> None:
    kubectl.run("create", "-f", "-", stdin=POD.format(name="plain", tier="fe"))
    names = kubectl.run(
        "get", "pods", "--field-selector", "spec.hostNetwork=false", "-o", "name"
    ).stdout.split()
    assert "pod/plain" in names


def test_kubectl_scale_through_the_scale_subresource(kubectl: Kubectl) -> None:
    kubectl.run("create", "deployment", "scaled", "--image=nginx:1.25", "--replicas=1")
    assert (
        "deployment.apps/scaled scaled"
        in kubectl.run("scale", "deploy/scaled", "--replicas=4").stdout
    )
    deployment = json.loads(kubectl.run("get", "deploy", "scaled", "-o", "json").stdout)
    assert deployment["spec"]["replicas"] == 4
    stale = kubectl.run(
        "scale", "deploy/scaled", "--replicas=2", "--resource-version=1", check=False
    )
    assert stale.returncode == 1  # kubectl compares it with the Scale it read
    assert "Expected resource version to be 1, was" in stale.stderr
    refused = kubectl.run("scale", "configmap/ssa", "--replicas=2", check=False)
    assert refused.returncode == 1
