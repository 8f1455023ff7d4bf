"""The console scripts against the local cluster, for the rest of vcctl's commands:
`vcjob jobtemplate …`, `vcjob jobflow …`, `vcjob pod list` and `vcjob version`."""

from __future__ import annotations

import json
import re
import shutil
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from batch_helpers import get_json, job_manifest, run_script, script_env, wait_for

from localcluster.running import LocalCluster

pytestmark = pytest.mark.e2e


def template(name: str) -> dict[str, Any]:
    """A JobTemplate without a namespace: `create -f` puts it in the context's namespace."""
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobTemplate",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "queue": "default",
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox"}],
                        }
                    },
                }
            ],
        },
    }


def chain(name: str, **spec: Any) -> dict[str, Any]:
    """The flow a → b; pods run ten minutes here, so it stays Running on a."""
    flows = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}]
    return {
        "apiVersion": "flow.volcano.sh/v1alpha1",
        "kind": "JobFlow",
        "metadata": {"name": name},
        "spec": {"flows": flows, **spec},
    }


def in_context(cluster: LocalCluster, namespace: str, tmp_path: Path) -> dict[str, str]:
    """The scripts' environment with a kubeconfig whose context names `namespace`."""
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copy(cluster.kubeconfig, kubeconfig)
    env = script_env(cluster)
    env["KUBECONFIG"] = str(kubeconfig)
    set_context = ("kubectl", "config", "set-context", "--current", f"--namespace={namespace}")
    assert run_script(cluster, *set_context, env=env).returncode == 0
    return env


def write(path: Path, *documents: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(list(documents)))
    return str(path)


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines()]


def test_jobtemplates_and_a_jobflow_through_the_cli(
    cluster: LocalCluster, namespace: str, tmp_path: Path
) -> None:
    env = in_context(cluster, namespace, tmp_path)

    def vcjob(*argv: str) -> Any:
        return run_script(cluster, "vcjob", *argv, env=env)

    templates = write(tmp_path / "templates.yaml", template("a"), template("b"))
    created = vcjob("jobtemplate", "create", "-f", templates)
    assert (created.returncode, created.stdout.splitlines()) == (
        0,
        [f"Created JobTemplate: {namespace}/a", f"Created JobTemplate: {namespace}/b"],
    ), created.stderr
    stored = get_json(cluster, "jt", "-n", namespace)["items"]
    assert [t["metadata"]["name"] for t in stored] == ["a", "b"]

    listed = vcjob("jobtemplate", "list")
    assert rows(listed.stdout) == [["Name", "Namespace"], ["a", namespace], ["b", namespace]]
    shown = vcjob("jobtemplate", "get", "-N", "b")
    assert rows(shown.stdout) == [["Name", "Namespace"], ["b", namespace]]
    as_json = vcjob("jobtemplate", "get", "b", "-o", "json")
    assert json.loads(as_json.stdout)["spec"]["tasks"][0]["name"] == "main"

    # Again: each document fails on its own line, on stderr, and the command exits 1.
    again = vcjob("jobtemplate", "create", "-f", templates)
    assert again.returncode == 1
    assert again.stdout == ""
    failures = again.stderr.splitlines()
    assert [line.split(": ")[:2] for line in failures] == [
        ["Failed to create JobTemplate", f"{namespace}/a"],
        ["Failed to create JobTemplate", f"{namespace}/b"],
    ]
    assert all("already exists" in line for line in failures), again.stderr

    # A typo is refused by the API server's strict field validation; the other document is made.
    typo = chain("typo")
    typo["spec"]["foo"] = 1
    mixed = vcjob("jobflow", "create", "-f", write(tmp_path / "flows.yaml", typo, chain("flow")))
    assert mixed.returncode == 1
    assert mixed.stdout == f"Created JobFlow: {namespace}/flow\n"
    assert mixed.stderr.startswith(f"Failed to create JobFlow: {namespace}/typo: ")
    assert 'unknown field "spec.foo"' in mixed.stderr
    assert mixed.stderr.count("\n") == 1, mixed.stderr

    # The phase column follows the flow: Running once its first Job runs.
    flows = wait_for(
        lambda: rows(vcjob("jobflow", "list").stdout),
        lambda table: len(table) == 2 and table[1][2:3] == ["Running"],
        "`vcjob jobflow list` to show the flow Running",
    )
    assert flows[0] == ["Name", "Namespace", "Phase", "Age"]
    assert flows[1][:2] == ["flow", namespace]
    assert re.fullmatch(r"\d+s|\d+m(\d+s)?", flows[1][3]), flows
    everywhere = run_script(cluster, "vcjob", "jobflow", "list", "--all-namespaces")
    assert ["flow", namespace, "Running"] in [row[:3] for row in rows(everywhere.stdout)]
    shown = vcjob("jobflow", "get", "flow", "-n", namespace)
    assert rows(shown.stdout)[1][:3] == ["flow", namespace, "Running"]

    described = yaml.safe_load(vcjob("jobflow", "describe", "-N", "flow").stdout)
    assert (described["kind"], described["metadata"]["name"]) == ("JobFlow", "flow")
    assert "managedFields" not in described["metadata"]
    assert [f["name"] for f in described["spec"]["flows"]] == ["a", "b"]
    assert described["status"]["state"]["phase"] == "Running"
    as_json = json.loads(vcjob("jobtemplate", "describe", "a", "--format", "json").stdout)
    assert (as_json["apiVersion"], as_json["kind"]) == ("flow.volcano.sh/v1alpha1", "JobTemplate")
    every = vcjob("jobtemplate", "describe").stdout.split("\n\n\n")
    assert [yaml.safe_load(text)["metadata"]["name"] for text in every] == ["a", "b"]

    deleted = vcjob("jobflow", "delete", "flow")
    assert (deleted.returncode, deleted.stdout) == (0, f"Deleted JobFlow: {namespace}/flow\n")
    assert vcjob("jobflow", "list").stdout == "No resources found\n"
    gone = vcjob("jobflow", "delete", "-N", "flow", "-n", namespace)
    assert (gone.returncode, gone.stderr) == (
        1,
        f'Failed to delete jobflow: jobflow "flow" not found in namespace "{namespace}"\n',
    )
    deleted = vcjob("jobtemplate", "delete", "-f", templates)
    assert (deleted.returncode, deleted.stdout.splitlines()) == (
        0,
        [f"Deleted JobTemplate: {namespace}/a", f"Deleted JobTemplate: {namespace}/b"],
    ), deleted.stderr
    assert get_json(cluster, "jt", "-n", namespace)["items"] == []
    missing = vcjob("jobtemplate", "get", "a")
    assert (missing.returncode, missing.stderr) == (
        1,
        f'Failed to get jobtemplate: jobtemplate "a" not found in namespace "{namespace}"\n',
    )


def _job_in(cluster: LocalCluster, namespace: str, name: str, queue: str, replicas: int) -> None:
    manifest = job_manifest(name, queue=queue, replicas=replicas)
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=manifest)


def test_pod_list_by_job_and_by_queue(cluster: LocalCluster, namespace: str) -> None:
    queue = f"pods-{namespace}"
    made = run_script(cluster, "vcjob", "queue", "create", queue)
    assert made.returncode == 0, made.stderr
    wait_for(
        lambda: (get_json(cluster, "queue", queue).get("status") or {}).get("state"),
        lambda state: state == "Open",
        "the new queue to be Open",
    )
    _job_in(cluster, namespace, "train", queue, replicas=2)
    _job_in(cluster, namespace, "other", "default", replicas=1)

    def pods(*argv: str) -> list[list[str]]:
        listed = run_script(cluster, "vcjob", "pod", "list", *argv)
        assert listed.returncode == 0, listed.stderr
        return rows(listed.stdout)

    every = wait_for(
        lambda: pods("-n", namespace),
        lambda table: len(table) == 4 and all(row[1:3] == ["1/1", "Running"] for row in table[1:]),
        "the three pods of both jobs Running",
    )
    assert every[0] == ["Name", "Ready", "Status", "Restart", "Age"]
    assert sorted(row[0] for row in every[1:]) == ["other-worker-0", "train-worker-0",
                                                   "train-worker-1"]  # fmt: skip
    assert all(row[3] == "0" for row in every[1:])

    # Rows are compared without their Age, which may have moved on between two calls.
    train = [["train-worker-0", "1/1", "Running", "0"], ["train-worker-1", "1/1", "Running", "0"]]
    assert sorted(row[:4] for row in pods("--job", "train", "-n", namespace)[1:]) == train
    assert sorted(row[:4] for row in pods("-q", queue, "-n", namespace)[1:]) == train
    assert sorted(row[:4] for row in pods("-j", "train", "-q", queue, "-n", namespace)[1:]) == train
    by_default = pods("--queue", "default", "-n", namespace)
    assert [row[0] for row in by_default[1:]] == ["other-worker-0"]
    everywhere = pods("-q", queue, "--all-namespaces")
    assert everywhere[0][:2] == ["Namespace", "Name"]
    assert sorted(row[:2] for row in everywhere[1:]) == [
        [namespace, "train-worker-0"],
        [namespace, "train-worker-1"],
    ]

    mismatch = run_script(cluster, "vcjob", "pod", "list", "-j", "other", "-q", queue,
                          "-n", namespace)  # fmt: skip
    assert (mismatch.returncode, mismatch.stderr) == (
        1,
        f"Failed to list pod: the input vcjob other does not match the queue {queue} "
        "(it is in queue default)\n",
    )
    nothing = run_script(cluster, "vcjob", "pod", "list", "-j", "ghost", "-n", namespace)
    assert (nothing.returncode, nothing.stdout) == (0, "No resources found\n")


def test_version_prints_the_installed_distribution(cluster: LocalCluster) -> None:
    shown = run_script(cluster, "vcjob", "version")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:2] == ["API Version: v1alpha1", f"Version: {metadata.version('vcjob')}"]
    assert [line.split(": ")[0] for line in lines[2:]] == [
        "Git SHA", "Built At", "Python Version", "Python OS/Arch",
    ]  # fmt: skip
    plugin = run_script(cluster, "kubectl", "vcjob", "version")
    assert (plugin.returncode, plugin.stdout) == (0, shown.stdout)
