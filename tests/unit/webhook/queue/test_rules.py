"""Queue rules, one table per rule; each message contains Volcano's own phrase."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import Path
from webhook.queue.defaulting import default_queue
from webhook.queue.deletion import DeletionFacts, validate_deletion
from webhook.queue.fields import validate_resources, validate_state, validate_weight
from webhook.queue.hierarchy import (
    QueueContext,
    QueueShares,
    validate_ancestor_capability,
    validate_children_shares,
    validate_depth,
    validate_hierarchy,
    validate_hierarchy_place,
    validate_parent,
    validate_parent_pods,
    validate_root_shares,
    validate_sibling_shares,
)
from webhook.queue.validation import validate_queue

SPEC = Path.of("spec")


def rendered(errors: list[Any]) -> list[str]:
    return [str(e) for e in errors]


@pytest.mark.parametrize(
    ("queue", "spec", "annotations"),
    [
        ({}, {"reclaimable": True, "weight": 1}, None),
        ({"spec": {"weight": 5, "reclaimable": False}}, {"weight": 5, "reclaimable": False}, None),
        ({"spec": {"weight": 0}}, {"weight": 1, "reclaimable": True}, None),
        (
            {
                "metadata": {
                    "annotations": {
                        "volcano.sh/hierarchy": "a/b",
                        "volcano.sh/hierarchy-weights": "2/3",
                    }
                }
            },
            {"weight": 1, "reclaimable": True},
            {"volcano.sh/hierarchy": "root/a/b", "volcano.sh/hierarchy-weights": "1/2/3"},
        ),
        (
            {
                "metadata": {
                    "annotations": {
                        "volcano.sh/hierarchy": "root/a",
                        "volcano.sh/hierarchy-weights": "1/3",
                    }
                }
            },
            {"weight": 1, "reclaimable": True},
            {"volcano.sh/hierarchy": "root/a", "volcano.sh/hierarchy-weights": "1/3"},
        ),
    ],
)
def test_default_queue(queue: dict[str, Any], spec: dict[str, Any], annotations: Any) -> None:
    defaulted = default_queue(queue)
    assert defaulted["spec"] == spec
    assert defaulted.get("metadata", {}).get("annotations") == annotations
    assert default_queue(defaulted) == defaulted  # idempotent


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"deserved": {"cpu": "2"}}, []),
        (
            {
                "capability": {"cpu": "4"},
                "deserved": {"cpu": "4"},
                "guarantee": {"resource": {"cpu": "4"}},
            },
            [],
        ),
        ({"deserved": {"memory": "1Gi"}, "capability": {"cpu": "1"}}, []),
        ({"deserved": {"cpu": "1"}, "guarantee": {"resource": {"cpu": "1000m"}}}, []),
        (
            {"guarantee": {"resource": {"cpu": "1"}}},
            [
                "spec.deserved[cpu]: Required value: deserved[cpu] must be >= guarantee[cpu]=1 "
                "(a guaranteed resource needs a deserved amount)"
            ],
        ),
        (
            {"deserved": {"cpu": "1"}, "guarantee": {"resource": {"cpu": "2"}}},
            ['spec.deserved[cpu]: Invalid value: "1": deserved[cpu]=1 must be >= guarantee[cpu]=2'],
        ),
        (
            {"capability": {"cpu": "1"}, "deserved": {"cpu": "2"}},
            [
                'spec.deserved[cpu]: Invalid value: "2": '
                "deserved[cpu]=2 must be <= capability[cpu]=1"
            ],
        ),
        (
            # Every problem at once: a bad quantity, a negative one, and both bounds.
            {
                "capability": {"cpu": "1", "memory": "lots"},
                "deserved": {"cpu": "2", "pods": "-1"},
                "guarantee": {"resource": {"cpu": "3"}},
            },
            [
                'spec.capability[memory]: Invalid value: "lots": quantities must match the '
                "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                'spec.deserved[pods]: Invalid value: "-1": must be greater than or equal to 0',
                'spec.deserved[cpu]: Invalid value: "2": '
                "deserved[cpu]=2 must be >= guarantee[cpu]=3",
                'spec.deserved[cpu]: Invalid value: "2": '
                "deserved[cpu]=2 must be <= capability[cpu]=1",
            ],
        ),
    ],
)
def test_validate_resources(spec: dict[str, Any], expected: list[str]) -> None:
    assert rendered(validate_resources(spec, SPEC)) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, []),
        ({"weight": 3}, []),
        ({"weight": 0}, ["spec.weight: Invalid value: 0: should be greater than or equal to 1"]),
        ({"weight": -2}, ["spec.weight: Invalid value: -2: should be greater than or equal to 1"]),
        ({"weight": "2"}, ['spec.weight: Invalid value: "2": must be an integer']),
    ],
)
def test_validate_weight(spec: dict[str, Any], expected: list[str]) -> None:
    assert rendered(validate_weight(spec, SPEC)) == expected


ANN = Path.of("metadata", "annotations")
H = "volcano.sh/hierarchy"
W = "volcano.sh/hierarchy-weights"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, []),
        ({H: "root/a/b", W: "1/2/0.5"}, []),
        (
            {H: "a"},
            [
                "metadata.annotations[volcano.sh/hierarchy-weights]: Required value: "
                "volcano.sh/hierarchy must have the same length with volcano.sh/hierarchy-weights: "
                "set a weight for each of the 1 parts of the hierarchy"
            ],
        ),
        (
            {H: "a/b", W: "1/2/3"},
            [
                'metadata.annotations[volcano.sh/hierarchy]: Invalid value: "a/b": '
                "volcano.sh/hierarchy must have the same length with "
                "volcano.sh/hierarchy-weights (2 parts, 3 weights)"
            ],
        ),
        (
            {H: "root/a/b", W: "1/-1/x"},
            [
                'metadata.annotations[volcano.sh/hierarchy-weights]: Invalid value: "1/-1/x": '
                "-1 in the 1/-1/x must be larger than 0 (part 2)",
                'metadata.annotations[volcano.sh/hierarchy-weights]: Invalid value: "1/-1/x": '
                "x in the 1/-1/x is invalid number (part 3)",
            ],
        ),
        (
            {H: "root/a", W: "1/inf"},
            [
                'metadata.annotations[volcano.sh/hierarchy-weights]: Invalid value: "1/inf": '
                "inf in the 1/inf must be larger than 0 (part 2)"
            ],
        ),
    ],
)
def test_validate_hierarchy(annotations: dict[str, str], expected: list[str]) -> None:
    assert rendered(validate_hierarchy(annotations, ANN)) == expected


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        (None, None, []),
        ("Open", None, []),
        ("Closed", "Open", []),
        ("Closing", "Closing", []),  # the controller's state, unchanged by this update
        (
            "Closing",
            "Open",
            ['status.state: Invalid value: "Closing": queue state must be in [Open Closed]'],
        ),
        (
            "Bogus",
            None,
            ['status.state: Invalid value: "Bogus": queue state must be in [Open Closed]'],
        ),
    ],
)
def test_validate_state(new: Any, old: Any, expected: list[str]) -> None:
    assert rendered(validate_state(new, old, Path.of("status", "state"))) == expected


@pytest.mark.parametrize(
    ("parent", "exists", "expected"),
    [
        (None, None, []),
        ("root", False, []),
        ("p", True, []),
        ("p", None, []),
        ("q", True, ['spec.parent: Invalid value: "q": queue q cannot use itself as parent']),
        (
            "p",
            False,
            [
                'spec.parent: Not found: "p": failed to get parent queue of queue q: '
                'queue.scheduling.volcano.sh "p" not found'
            ],
        ),
    ],
)
def test_validate_parent(parent: Any, exists: bool | None, expected: list[str]) -> None:
    assert rendered(validate_parent("q", parent, exists, SPEC.child("parent"))) == expected


def test_validate_queue_reports_every_problem() -> None:
    queue = {
        "metadata": {"name": "q", "annotations": {H: "a/b", W: "1"}},
        "spec": {"weight": -1, "capability": {"cpu": "1"}, "deserved": {"cpu": "2"}, "parent": "q"},
    }
    fields = [e.field for e in validate_queue(queue, None, QueueContext(parent_exists=True))]
    assert fields == [
        "spec.weight",
        "spec.deserved[cpu]",
        "metadata.annotations[volcano.sh/hierarchy]",
        "spec.parent",
    ]


def test_validate_queue_update_keeps_an_unchanged_parent() -> None:
    queue = {"metadata": {"name": "q"}, "spec": {"parent": "gone"}}
    gone = QueueContext(parent_exists=False)
    assert validate_queue(queue, queue, gone) == []
    assert [e.field for e in validate_queue(queue, {"spec": {}}, gone)] == ["spec.parent"]


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        (DeletionFacts("q", "Open", [], []), []),
        (DeletionFacts("q", "Closed", [], None), []),
        (
            DeletionFacts("default", "Closed", [], []),
            ["metadata.name: Forbidden: `default` queue can not be deleted"],
        ),
        (
            DeletionFacts("root", "Open", [], []),
            ["metadata.name: Forbidden: `root` queue can not be deleted"],
        ),
        (
            DeletionFacts("q", "Open", ["a", "b"], ["ns/pg-1"]),
            [
                "metadata.name: Forbidden: queue q can not be deleted because it has 2 child "
                "queues: a, b",
                "metadata.name: Forbidden: queue q can not be deleted because it has 1 PodGroups: "
                "ns/pg-1 (close the queue and let its jobs finish first)",
            ],
        ),
        (
            DeletionFacts("q", "Open", [], [], require_closed=True),
            [
                "status.state: Forbidden: only queue with state `Closed` can be deleted, queue `q` "
                "state is `Open` (close it first: vcctl queue operate -n q -a close)"
            ],
        ),
        (DeletionFacts("q", "Closed", [], [], require_closed=True), []),
        # Volcano 1.14 and later: any state, unless the Closed-only rule is asked for.
        (DeletionFacts("q", "Open", [], []), []),
        (DeletionFacts("q", None, [], []), []),
    ],
)
def test_validate_deletion(facts: DeletionFacts, expected: list[str]) -> None:
    assert rendered(validate_deletion(facts)) == expected


def test_deletion_lists_at_most_ten_podgroups() -> None:
    groups = [f"ns/pg-{i:02}" for i in range(12)]
    (error,) = validate_deletion(DeletionFacts("q", "Open", [], groups))
    assert "12 PodGroups: ns/pg-00" in error.detail and "ns/pg-09 and 2 more" in error.detail


@pytest.mark.parametrize(
    ("hierarchy", "others", "expected"),
    [
        ("root/a", {"b": "root/b/c"}, []),
        ("root/a", {"q": "root/a/x"}, []),  # its own stored value does not count
        ("root/ab", {"x": "root/a/b"}, []),
        (
            "root/a",
            {"x": "root/a/b", "y": "root/a/c"},
            [
                'metadata.annotations[volcano.sh/hierarchy]: Invalid value: "root/a": root/a is '
                "not allowed to be in the sub path of root/a/b of queue x",
                'metadata.annotations[volcano.sh/hierarchy]: Invalid value: "root/a": root/a is '
                "not allowed to be in the sub path of root/a/c of queue y",
            ],
        ),
    ],
)
def test_validate_hierarchy_place(
    hierarchy: str, others: dict[str, str], expected: list[str]
) -> None:
    assert rendered(validate_hierarchy_place("q", hierarchy, others, ANN)) == expected


CAP = SPEC.child("capability")


@pytest.mark.parametrize(
    ("capability", "ancestors", "expected"),
    [
        ({"cpu": "2"}, [("p", {"cpu": "4"})], []),
        ({"cpu": "2"}, [], []),
        ({"memory": "8Gi"}, [("p", {"cpu": "1"})], []),  # nobody caps memory
        (
            {"cpu": "8", "memory": "1Gi"},
            [("p", {"memory": "2Gi"}), ("gp", {"cpu": "4"})],
            [
                'spec.capability[cpu]: Invalid value: "8": queue q capability[cpu]=8 exceeds its '
                "ancestor's capability=4 (queue gp)"
            ],
        ),
        (
            # The nearest ancestor with a limit decides, as in Volcano.
            {"cpu": "3"},
            [("p", {"cpu": "2"}), ("gp", {"cpu": "10"})],
            [
                'spec.capability[cpu]: Invalid value: "3": queue q capability[cpu]=3 exceeds its '
                "ancestor's capability=2 (queue p)"
            ],
        ),
    ],
)
def test_validate_ancestor_capability(
    capability: dict[str, str], ancestors: list[tuple[str, dict[str, str]]], expected: list[str]
) -> None:
    assert rendered(validate_ancestor_capability("q", capability, ancestors, CAP)) == expected


def test_validate_queue_checks_the_ancestors_when_parent_or_capability_change() -> None:
    queue = {"metadata": {"name": "q"}, "spec": {"parent": "p", "capability": {"cpu": "8"}}}
    context = QueueContext(parent_exists=True, ancestors=[("p", {"cpu": "4"})])
    assert [e.field for e in validate_queue(queue, None, context)] == ["spec.capability[cpu]"]
    assert validate_queue(queue, queue, context) == []  # unchanged: not held against an update


PARENT = QueueShares("p", guarantee={"cpu": "4"}, deserved={"cpu": "8", "memory": "8Gi"})


@pytest.mark.parametrize(
    ("spec", "siblings", "expected"),
    [
        ({"deserved": {"cpu": "5"}}, [QueueShares("s", deserved={"cpu": "3"})], []),
        ({}, [QueueShares("s", deserved={"cpu": "30"})], []),  # this queue asks for nothing
        (
            {"deserved": {"cpu": "6"}},
            [QueueShares("s", deserved={"cpu": "3"})],
            [
                'spec.deserved[cpu]: Invalid value: "6": parent queue p validation failed: sum '
                "of children's deserved (cpu 9) exceeds parent's deserved limit (cpu 8, memory "
                "8589934592) (queue q and its siblings)"
            ],
        ),
        (
            # A resource the parent does not list counts as none, as in Volcano.
            {"guarantee": {"resource": {"cpu": "1", "nvidia.com/gpu": "1"}}},
            [],
            [
                'spec.guarantee.resource[nvidia.com/gpu]: Invalid value: "1": parent queue p '
                "validation failed: sum of children's guarantee (cpu 1, nvidia.com/gpu 1) exceeds "
                "parent's guarantee limit (cpu 4) (queue q and its siblings)"
            ],
        ),
    ],
)
def test_validate_sibling_shares(
    spec: dict[str, Any], siblings: list[QueueShares], expected: list[str]
) -> None:
    assert rendered(validate_sibling_shares("q", spec, PARENT, siblings, SPEC)) == expected
    assert validate_sibling_shares("q", spec, None, siblings, SPEC) == []  # root, or unknown


@pytest.mark.parametrize(
    ("spec", "children", "below", "expected"),
    [
        ({"deserved": {"cpu": "4"}}, [QueueShares("a", deserved={"cpu": "4"})], [], []),
        ({"capability": {"cpu": "4"}}, [], [{"cpu": "9"}], []),  # no children: not a parent
        (
            {"deserved": {"cpu": "4"}, "capability": {"cpu": "4", "memory": "1Gi"}},
            [QueueShares("a", deserved={"cpu": "3"}), QueueShares("b", deserved={"cpu": "2"})],
            [{"cpu": "6"}, {"memory": "512Mi"}],
            [
                'spec.deserved: Invalid value: "cpu 4": queue q validation failed: sum of '
                "children's deserved (cpu 5) exceeds parent's deserved limit (cpu 4)",
                'spec.capability[cpu]: Invalid value: "4": queue q capability[cpu]=4 is smaller '
                "than its descendants' max capability=6",
            ],
        ),
    ],
)
def test_validate_children_shares(
    spec: dict[str, Any],
    children: list[QueueShares],
    below: list[dict[str, str]],
    expected: list[str],
) -> None:
    assert rendered(validate_children_shares("q", spec, children, below, SPEC)) == expected


def test_validate_queue_checks_the_sums_when_a_share_or_the_parent_changes() -> None:
    queue = {"metadata": {"name": "q"}, "spec": {"parent": "p", "deserved": {"cpu": "9"}}}
    context = QueueContext(parent_exists=True, parent_shares=PARENT)
    assert [e.field for e in validate_queue(queue, None, context)] == ["spec.deserved[cpu]"]
    assert validate_queue(queue, queue, context) == []  # unchanged: not held against an update


PARENT_PATH = SPEC.child("parent")


@pytest.mark.parametrize(
    ("parent", "ancestors", "expected"),
    [
        ("p", 4, []),  # five levels: the queue and four below root
        ("root", 9, []),
        (
            "p",
            5,
            ['spec.parent: Invalid value: "p": queue q exceeds the maximum allowed depth of 5'],
        ),
    ],
)
def test_validate_depth(parent: str, ancestors: int, expected: list[str]) -> None:
    assert rendered(validate_depth("q", parent, ancestors, PARENT_PATH)) == expected


@pytest.mark.parametrize(
    ("parent", "pods", "expected"),
    [
        ("p", 0, []),
        ("root", 3, []),
        (
            "p",
            3,
            [
                'spec.parent: Invalid value: "p": queue p cannot be the parent queue of queue q '
                "because it has allocated Pods: 3"
            ],
        ),
    ],
)
def test_validate_parent_pods(parent: str, pods: int, expected: list[str]) -> None:
    assert rendered(validate_parent_pods("q", parent, pods, PARENT_PATH)) == expected


def test_validate_root_shares() -> None:
    old = {"capability": {"cpu": "8"}, "weight": 1}
    assert validate_root_shares(old, {**old, "weight": 3}) == []
    changed = {"capability": {"cpu": "16"}, "deserved": {"cpu": "1"}, "weight": 1}
    assert rendered(validate_root_shares(old, changed)) == [
        "spec.capability: Forbidden: root queue's resource attributes (capability, deserved, "
        "guarantee) cannot be modified",
        "spec.deserved: Forbidden: root queue's resource attributes (capability, deserved, "
        "guarantee) cannot be modified",
    ]


def test_validate_queue_checks_depth_and_the_parents_pods_when_the_parent_changes() -> None:
    queue = {"metadata": {"name": "q"}, "spec": {"parent": "p"}}
    chain = [(f"a{i}", {}) for i in range(5)]
    context = QueueContext(parent_exists=True, ancestors=chain, parent_pods=2)
    assert [e.detail for e in validate_queue(queue, None, context)] == [
        "queue q exceeds the maximum allowed depth of 5",
        "queue p cannot be the parent queue of queue q because it has allocated Pods: 2",
    ]
    assert validate_queue(queue, queue, context) == []
    root = {"metadata": {"name": "root"}, "spec": {"capability": {"cpu": "1"}}}
    assert [e.field for e in validate_queue(root, {"metadata": {"name": "root"}}, context)] == [
        "spec.capability"
    ]
