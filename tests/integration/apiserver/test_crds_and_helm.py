"""CRD schema enforcement through the API, CRD removal, and Helm's protobuf release storage."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from localcluster.apiserver.server import APIServer
from localcluster.tools import tool_path

Kubectl = Any

WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [size]
            properties:
              size: {type: integer, minimum: 1, maximum: 10}
              color: {type: string, enum: [red, blue], default: red}
"""


def _widget(name: str, spec: str) -> str:
    return f"apiVersion: example.com/v1\nkind: Widget\nmetadata: {{name: {name}}}\nspec: {spec}\n"


def test_crd_schema_defaults_validates_and_prunes(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=WIDGET_CRD)
    kubectl.run("create", "-f", "-", stdin=_widget("w1", "{size: 3}"))
    widget = json.loads(kubectl.run("get", "wd", "w1", "-o", "json").stdout)
    assert widget["spec"] == {"size": 3, "color": "red"}
    assert "namespace" not in widget["metadata"], "cluster-scoped"
    invalid = kubectl.run("create", "-f", "-", stdin=_widget("w2", "{size: 30}"), check=False)
    assert 'The Widget "w2" is invalid: spec.size: Invalid value: 30' in invalid.stderr
    unknown = kubectl.run(
        "create", "-f", "-", stdin=_widget("w3", "{size: 3, foo: 1}"), check=False
    )
    assert 'strict decoding error: unknown field "spec.foo"' in unknown.stderr
    kubectl.run("create", "--validate=false", "-f", "-", stdin=_widget("w3", "{size: 3, foo: 1}"))
    pruned = json.loads(kubectl.run("get", "wd", "w3", "-o", "json").stdout)
    assert pruned["spec"] == {"size": 3, "color": "red"}
    applied = kubectl.run("apply", "--server-side", "-f", "-", stdin=_widget("w4", "{size: 4}"))
    assert "widget.example.com/w4 serverside-applied" in applied.stdout
    kubectl.run("apply", "--server-side", "-f", "-", stdin=_widget("w4", "{size: 5, color: blue}"))
    assert json.loads(kubectl.run("get", "wd", "w4", "-o", "json").stdout)["spec"] == {
        "size": 5,
        "color": "blue",
    }
    kubectl.run("delete", "crd", "widgets.example.com")
    gone = kubectl.run("get", "--raw", "/apis/example.com/v1/widgets", check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr


def test_delete_all_and_auth_can_i(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", "sweep")
    for name in ("one", "two"):
        kubectl.run("create", "configmap", name, "-n", "sweep")
    deleted = kubectl.run("delete", "configmaps", "--all", "-n", "sweep").stdout
    assert 'configmap "one" deleted' in deleted and 'configmap "two" deleted' in deleted
    assert kubectl.run("get", "cm", "-n", "sweep", "-o", "name").stdout == ""
    assert kubectl.run("auth", "can-i", "create", "pods").stdout.strip() == "yes"


def test_helm_install_upgrade_uninstall(apiserver: APIServer, tmp_path: Path) -> None:
    chart = tmp_path / "demo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo-{{ .Release.Name }}\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
    )
    helm = tool_path("helm")
    assert helm is not None, "helm is not installed: run `python -m localcluster.tools install`"
    env = dict(os.environ, KUBECONFIG=str(apiserver.kubeconfig_path), HOME=str(tmp_path))

    def run(*args: str) -> str:
        result = subprocess.run(
            [str(helm), *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    run("install", "demo", str(chart), "-n", "helm-demo", "--create-namespace")
    run("upgrade", "demo", str(chart), "-n", "helm-demo", "--set", "greeting=bye")
    releases = json.loads(run("list", "-n", "helm-demo", "-o", "json"))
    assert [(r["name"], r["revision"], r["status"]) for r in releases] == [
        ("demo", "2", "deployed")
    ]
    run("uninstall", "demo", "-n", "helm-demo")
    assert json.loads(run("list", "-n", "helm-demo", "-o", "json")) == []


def test_helm_install_of_a_chart_from_helm_create(apiserver: APIServer, tmp_path: Path) -> None:
    """The chart every helm user starts from, with its optional Ingress and autoscaler."""
    helm = tool_path("helm")
    assert helm is not None, "helm is not installed: run `python -m localcluster.tools install`"
    env = dict(os.environ, KUBECONFIG=str(apiserver.kubeconfig_path), HOME=str(tmp_path))

    def run(*args: str) -> str:
        result = subprocess.run(
            [str(helm), *args], capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    run("create", "starter")
    options = ["--set", "ingress.enabled=true", "--set", "autoscaling.enabled=true"]
    run("install", "starter", "./starter", "-n", "helm-starter", "--create-namespace", *options)
    manifest = run("get", "manifest", "starter", "-n", "helm-starter")
    for kind in ("Deployment", "Service", "ServiceAccount", "Ingress", "HorizontalPodAutoscaler"):
        assert f"kind: {kind}" in manifest
    run("uninstall", "starter", "-n", "helm-starter")
