"""What users see: kubectl against the local control plane (API server + `vcjob webhook` with the
queue check on). Valid examples are created; invalid ones are refused with the documented line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from localcluster.running import LocalCluster
from shared.fielderrors import render
from shared.models import Queue
from webhook.job.create import validate_create
from webhook.job.rules.job_warnings import job_warnings
from webhook.job.rules.wording import IMMUTABLE
from webhook.settings import Settings


class DefaultQueueOnly:
    """The local cluster has one queue, `default` (created Open by `vcjob local up`)."""

    def get(self, name: str) -> Queue | None:
        return Queue.from_wire({"metadata": {"name": name}}) if name == "default" else None

    def children(self, name: str) -> list[str]:
        return []


REPO = Path(__file__).resolve().parents[3]
INVALID = sorted((REPO / "examples" / "invalid").glob("*.yaml"))
DENIED = "# denied: "


def kubectl_invalid(kind: str, name: str, problems: list[str]) -> str:
    """How kubectl prints a 422 Invalid status: its causes, one per line when there are several."""
    head = f'The {kind} "{name}" is invalid: '
    if len(problems) == 1:
        return head + problems[0]
    return head + "\n" + "\n".join(f"* {p}" for p in problems)


@pytest.mark.parametrize("path", INVALID, ids=[p.name for p in INVALID])
def test_kubectl_prints_every_problem_of_an_invalid_example(
    cluster: LocalCluster, path: Path
) -> None:
    # kubectl sends JSON with sorted keys: that is the field order the webhook sees.
    job = json.loads(json.dumps(yaml.safe_load(path.read_text()), sort_keys=True))
    documented = next(
        line[len(DENIED) :] for line in path.read_text().splitlines() if line.startswith(DENIED)
    )
    errors = validate_create(job, DefaultQueueOnly(), Settings())
    assert sorted(render(errors).split("; ")) == sorted(documented.split("; "))
    result = cluster.kubectl("create", "-f", str(path), check=False)
    assert result.returncode != 0
    problems = [f"{e.field}: {e.summary}" for e in errors]
    # What Volcano admits (an unknown plugin flag) comes first, as kubectl's warnings.
    warnings = [f"Warning: {w}" for w in job_warnings(job)]
    assert result.stderr.strip() == "\n".join(
        [*warnings, kubectl_invalid("Job", job["metadata"]["name"], problems)]
    )


def test_a_bad_quantity_and_a_type_error_come_in_one_answer_with_the_other_problems(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """kube-apiserver checks the CRD's schema after the mutating webhook and before the
    validating one, and its schema refuses `cpu: lots` with a regular expression and a string
    `replicas` on their own. The mutating webhook sees the Job first and answers with every
    problem, each with its path: nothing is left for a second attempt."""
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "one-answer"},
        "spec": {
            "queue": "nowhere",
            "tasks": [
                {
                    "name": "worker",
                    "replicas": "two",
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox:1.36",
                                    "resources": {"requests": {"cpu": "lots", "memory": 0.5}},
                                }
                            ]
                        }
                    },
                }
            ],
        },
    }
    path = tmp_path / "one-answer.yaml"
    path.write_text(yaml.safe_dump(job))
    result = cluster.kubectl("create", "-f", str(path), check=False)
    assert result.returncode != 0
    requests = "spec.tasks[0].template.spec.containers[0].resources.requests"
    assert result.stderr.strip() == kubectl_invalid(
        "Job",
        "one-answer",
        [
            'spec.queue: Not found: "nowhere": no Queue of this name exists',
            'spec.tasks[0].replicas: Invalid value: "two": must be an integer',
            f'{requests}[cpu]: Invalid value: "lots": must be a quantity such as 500m, 2 or 1Gi',
            f"{requests}[memory]: Invalid value: 0.5: must be an integer or a string: write a "
            'fraction as a string, such as "0.5" or 500m',
        ],
    )
    # Nothing of the schema's own wording: it never had to answer.
    assert "in body" not in result.stderr


def test_demo_job_is_defaulted_and_immutable_fields_are_refused(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "-f", str(REPO / "examples" / "demo-job.yaml"))
    queue = cluster.kubectl("get", "vcjob", "demo", "-o", "jsonpath={.spec.queue}").stdout
    scheduler = cluster.kubectl(
        "get", "vcjob", "demo", "-o", "jsonpath={.spec.schedulerName}"
    ).stdout
    assert (queue, scheduler) == ("default", "volcano")
    refused = cluster.kubectl(
        "patch", "vcjob", "demo", "--type", "merge", "-p", '{"spec":{"queue":"other"}}', check=False
    )
    assert refused.returncode != 0
    assert refused.stderr.strip() == kubectl_invalid(
        "Job", "demo", [f'spec.queue: Invalid value: "other": {IMMUTABLE}']
    )
    scaled = cluster.kubectl(
        "patch", "vcjob", "demo", "--type", "json",
        "-p", '[{"op": "replace", "path": "/spec/tasks/1/replicas", "value": 3}]',
    )  # fmt: skip
    assert scaled.returncode == 0
