"""What users of Volcano's other objects see through kubectl against the real kube-apiserver,
with `vcjob local up` registering the webhook at Volcano's paths: one denial per kind (Queue,
PodGroup, Pod, HyperNode), the defaults, Volcano's phrases and the warnings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from localcluster.running import LocalCluster
from tests.support.polling import wait_until


def create(cluster: LocalCluster, obj: dict[str, Any], *args: str) -> Any:
    return cluster.kubectl("create", *args, "-f", "-", input=json.dumps(obj), check=False)


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def podgroup(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": 1, **spec},
    }


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def test_queue_defaults_bounds_and_deletion(cluster: LocalCluster) -> None:
    made = create(cluster, queue("plain"))
    assert made.returncode == 0, made.stderr
    spec = get(cluster, "queue", "plain")["spec"]
    assert (spec["weight"], spec["reclaimable"]) == (1, True)

    bad = queue("greedy", capability={"cpu": "1"}, deserved={"cpu": "2"},
                guarantee={"resource": {"cpu": "3"}})  # fmt: skip
    refused = create(cluster, bad)
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        'The Queue "greedy" is invalid: \n'
        '* spec.deserved[cpu]: Invalid value: "2": deserved[cpu]=2 must be >= guarantee[cpu]=3\n'
        '* spec.deserved[cpu]: Invalid value: "2": deserved[cpu]=2 must be <= capability[cpu]=1'
    )

    kept = cluster.kubectl("delete", "queue", "default", check=False)
    assert kept.returncode != 0
    assert "metadata.name: Forbidden: `default` queue can not be deleted" in kept.stderr

    # A queue that still has PodGroups stays; once they are gone it may go, in any state.
    assert create(cluster, queue("busy")).returncode == 0
    wait_until(
        "the webhook to see queue busy",
        lambda: create(cluster, podgroup("holder", "default", queue="busy")).returncode == 0,
    )
    held = cluster.kubectl("delete", "queue", "busy", check=False)
    assert held.returncode != 0
    assert "queue busy can not be deleted because it has 1 PodGroups: default/holder" in held.stderr
    cluster.kubectl("delete", "podgroups.scheduling.volcano.sh", "holder", "-n", "default")
    # No controller runs here: the queue's state is still unset (it counts as Open). The webhook
    # lists the queue's PodGroups at each DELETE, so the deletion above is seen at once.
    cluster.kubectl("delete", "queue", "busy")


def test_podgroup_queue_from_the_namespace_and_open_queues_only(cluster: LocalCluster) -> None:
    cluster.kubectl("create", "namespace", "team-a")
    cluster.kubectl("annotate", "namespace", "team-a", "scheduling.volcano.sh/queue-name=team")
    assert create(cluster, queue("team")).returncode == 0
    wait_until(
        "the webhook to see queue team",
        lambda: create(cluster, podgroup("pg", "team-a")).returncode == 0,
    )
    assert (
        get(cluster, "podgroups.scheduling.volcano.sh", "pg", "-n", "team-a")["spec"]["queue"]
        == "team"
    )

    assert create(cluster, queue("shut")).returncode == 0
    cluster.kubectl("patch", "queue", "shut", "--subresource=status", "--type=merge",
                    "-p", '{"status":{"state":"Closed"}}')  # fmt: skip
    message = (
        'The PodGroup "late" is invalid: spec.queue: Invalid value: "shut": can only submit '
        "PodGroup to queue with state `Open`, queue `shut` status is `Closed`"
    )
    wait_until(
        "the PodGroup into a Closed queue to be refused",
        lambda: (
            create(cluster, podgroup("late", "default", queue="shut")).stderr.strip() == message
        ),
    )


def pod(name: str, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }


def test_pod_budget_annotations(cluster: LocalCluster) -> None:
    refused = create(cluster, pod("budget", **{"volcano.sh/jdb-max-unavailable": "100%"}))
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        'The Pod "budget" is invalid: metadata.annotations[volcano.sh/jdb-max-unavailable]: '
        'Invalid value: "100%": invalid value <"100%"> for volcano.sh/jdb-max-unavailable, it '
        "must be a valid percentage which between 1% ~ 99%"
    )
    assert create(cluster, pod("fine", **{"volcano.sh/jdb-min-available": "50%"})).returncode == 0


def hypernode(name: str, *members: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": 1, "members": list(members)},
    }


def test_hypernode_members(cluster: LocalCluster) -> None:
    regex = {"type": "Node", "selector": {"regexMatch": {"pattern": "node-(?!0)"}}}
    refused = create(cluster, hypernode("s0", regex))
    assert refused.returncode != 0
    assert refused.stderr.strip() == (
        'The HyperNode "s0" is invalid: spec.members[0].selector.regexMatch.pattern: Invalid '
        'value: "node-(?!0)": member regexMatch pattern is invalid: error parsing regexp: '
        "lookaround assertions ((?=, (?!, (?<=, (?<!) are not supported"
    )
    # The CRD's own rules answer first, in the API server's words.
    exact = {"type": "Node", "selector": {"exactMatch": {"name": "Node_1"}}}
    schema = create(cluster, hypernode("s1", exact))
    assert "spec.members[0].selector.exactMatch.name" in schema.stderr
    assert "should match" in schema.stderr
    both = {
        "type": "Node",
        "selector": {"exactMatch": {"name": "n"}, "regexMatch": {"pattern": "n"}},
    }
    assert (
        "Only one of ExactMatch, RegexMatch, or LabelMatch"
        in create(cluster, hypernode("s2", both)).stderr
    )
    good = {"type": "Node", "selector": {"regexMatch": {"pattern": "node-[0-9]+"}}}
    assert create(cluster, hypernode("s3", good)).returncode == 0


REPO = Path(__file__).resolve().parents[3]


def test_what_volcano_admits_in_a_job_is_a_warning(cluster: LocalCluster) -> None:
    job = yaml.safe_load((REPO / "examples" / "demo-job.yaml").read_text())
    job["metadata"] = {"name": "warned", "namespace": "default"}
    job["spec"]["plugins"] = {"svc": ["--enable-networking"], "ssh": ["--no-root"]}
    made = create(cluster, job)
    assert made.returncode == 0, made.stderr
    assert made.stderr.splitlines() == [
        "Warning: spec.plugins[ssh][0]: '--no-root': --no-root was removed from Volcano's ssh "
        "plugin and has no effect",
        "Warning: spec.plugins[svc][0]: '--enable-networking': unknown flag "
        "--enable-networking; supported flags: --publish-not-ready-addresses, "
        "--disable-network-policy, --inject-hosts-env; the flags from here on keep their "
        "defaults",
    ]
    bad_name = yaml.safe_load((REPO / "examples" / "demo-job.yaml").read_text())
    bad_name["metadata"] = {"name": "badtask", "namespace": "default"}
    bad_name["spec"]["tasks"][0]["name"] = "Worker"
    refused = create(cluster, bad_name)
    assert "spec.tasks[0].name" in refused.stderr and "should match" in refused.stderr
