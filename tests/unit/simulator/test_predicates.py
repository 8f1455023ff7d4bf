"""kube-scheduler's filters, one rule per case: taints and tolerations, node selectors and
required node affinity, cordons, host ports, resources, and the message that sums them up."""

from __future__ import annotations

from decimal import Decimal

import pytest

from localcluster.simulator.predicates import (
    AFFINITY_MISMATCH,
    NODE_UNSCHEDULABLE,
    PORTS_TAKEN,
    UNTOLERATED_TAINT,
    HostPort,
    NodeFacts,
    Placement,
    Requirement,
    SelectorTerm,
    Taint,
    Toleration,
    field_requirement_matches,
    fit_error,
    fit_failures,
    insufficient_resources,
    label_requirement_matches,
    matches_node_affinity,
    read_host_ports,
    read_node_selector,
    read_required_terms,
    read_taints,
    read_tolerations,
    untolerated_taint,
)
from localcluster.simulator.resources import parse_resources

NOT_READY = Taint("node.kubernetes.io/not-ready", "NoSchedule")
GPU_ONLY = Taint("dedicated", "NoSchedule", "gpu")

TOLERATION_CASES = [
    pytest.param(Toleration("dedicated", "Equal", "gpu", "NoSchedule"), GPU_ONLY, True, id="equal"),
    pytest.param(
        Toleration("dedicated", "", "gpu", "NoSchedule"), GPU_ONLY, True, id="empty=Equal"
    ),
    pytest.param(
        Toleration("dedicated", "Equal", "cpu", "NoSchedule"), GPU_ONLY, False, id="value"
    ),
    pytest.param(Toleration("dedicated", "Exists", "", "NoSchedule"), GPU_ONLY, True, id="exists"),
    pytest.param(Toleration("other", "Exists"), GPU_ONLY, False, id="another key"),
    pytest.param(
        Toleration("dedicated", "Exists", effect="NoExecute"), GPU_ONLY, False, id="effect"
    ),
    pytest.param(Toleration("dedicated", "Exists"), GPU_ONLY, True, id="empty effect: any effect"),
    pytest.param(Toleration("", "Exists"), GPU_ONLY, True, id="empty key with Exists: everything"),
    pytest.param(Toleration("", "Exists"), NOT_READY, True, id="…even not-ready"),
    pytest.param(Toleration("", "Equal", "cpu"), GPU_ONLY, False, id="empty key, Equal: value"),
    pytest.param(
        Toleration("node.kubernetes.io/not-ready", "Exists", effect="NoSchedule"),
        NOT_READY,
        True,
        id="not-ready tolerated",
    ),
    pytest.param(Toleration("dedicated", "Gt", "1"), GPU_ONLY, False, id="unknown operator"),
]


@pytest.mark.parametrize(("toleration", "taint", "tolerated"), TOLERATION_CASES)
def test_toleration_tolerates_taint(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated


def test_only_no_schedule_and_no_execute_taints_keep_pods_away() -> None:
    soft = Taint("spot", "PreferNoSchedule")
    evict = Taint("node.kubernetes.io/unreachable", "NoExecute")
    assert untolerated_taint([soft], ()) is None
    assert untolerated_taint([soft, evict], ()) == evict
    assert (
        untolerated_taint([evict], (Toleration(evict.key, "Exists", effect="NoExecute"),)) is None
    )


LABELS = {"zone": "a", "gpus": "4", "tier": "web", "weird": "x7"}

LABEL_CASES = [
    pytest.param(Requirement("zone", "In", ("a", "b")), True, id="In"),
    pytest.param(Requirement("zone", "In", ("b",)), False, id="In, other value"),
    pytest.param(Requirement("missing", "In", ("a",)), False, id="In, no label"),
    pytest.param(Requirement("zone", "NotIn", ("b",)), True, id="NotIn"),
    pytest.param(Requirement("zone", "NotIn", ("a",)), False, id="NotIn, value listed"),
    pytest.param(Requirement("missing", "NotIn", ("a",)), True, id="NotIn, no label holds"),
    pytest.param(Requirement("zone", "Exists"), True, id="Exists"),
    pytest.param(Requirement("missing", "Exists"), False, id="Exists, no label"),
    pytest.param(Requirement("missing", "DoesNotExist"), True, id="DoesNotExist"),
    pytest.param(Requirement("zone", "DoesNotExist"), False, id="DoesNotExist, label there"),
    pytest.param(Requirement("gpus", "Gt", ("3",)), True, id="Gt"),
    pytest.param(Requirement("gpus", "Gt", ("4",)), False, id="Gt is strict"),
    pytest.param(Requirement("gpus", "Lt", ("5",)), True, id="Lt"),
    pytest.param(Requirement("gpus", "Lt", ("4",)), False, id="Lt is strict"),
    pytest.param(Requirement("gpus", "Gt", ("-1",)), True, id="Gt, negative value"),
    pytest.param(Requirement("gpus", "Gt", ("+3",)), True, id="Gt, value with a sign"),
    pytest.param(Requirement("weird", "Gt", ("1",)), False, id="Gt, label not an integer"),
    pytest.param(Requirement("missing", "Lt", ("9",)), False, id="Lt, no label"),
    pytest.param(Requirement("gpus", "Gt", ("3", "4")), False, id="Gt, two values: invalid"),
    pytest.param(Requirement("gpus", "Gt", ("1_0",)), False, id="Gt, not a Go integer"),
    pytest.param(Requirement("gpus", "Gt", (str(2**63),)), False, id="Gt, beyond int64"),
    pytest.param(Requirement("zone", "In", ()), False, id="In without values: invalid"),
    pytest.param(Requirement("zone", "Exists", ("a",)), False, id="Exists with values: invalid"),
    pytest.param(Requirement("zone", "Equals", ("a",)), False, id="unknown operator"),
]


@pytest.mark.parametrize(("requirement", "matches"), LABEL_CASES)
def test_label_requirement(requirement: Requirement, matches: bool) -> None:
    assert label_requirement_matches(requirement, LABELS) is matches


FIELD_CASES = [
    pytest.param(Requirement("metadata.name", "In", ("node-2",)), True, id="In"),
    pytest.param(Requirement("metadata.name", "In", ("node-1",)), False, id="In, other name"),
    pytest.param(Requirement("metadata.name", "NotIn", ("node-1",)), True, id="NotIn"),
    pytest.param(Requirement("metadata.name", "NotIn", ("node-2",)), False, id="NotIn, own name"),
    pytest.param(Requirement("metadata.name", "In", ("node-1", "node-2")), False, id="2 values"),
    pytest.param(Requirement("metadata.name", "Exists"), False, id="Exists is not for fields"),
]


@pytest.mark.parametrize(("requirement", "matches"), FIELD_CASES)
def test_field_requirement(requirement: Requirement, matches: bool) -> None:
    assert field_requirement_matches(requirement, {"metadata.name": "node-2"}) is matches


NODE = NodeFacts("node-2", labels={"zone": "a", "disk": "ssd"})
ZONE_A = Requirement("zone", "In", ("a",))
ZONE_B = Requirement("zone", "In", ("b",))
NAMED_2 = Requirement("metadata.name", "In", ("node-2",))
NAMED_1 = Requirement("metadata.name", "In", ("node-1",))

AFFINITY_CASES = [
    pytest.param(Placement(), True, id="nothing asked"),
    pytest.param(Placement(node_selector={"disk": "ssd"}), True, id="nodeSelector"),
    pytest.param(Placement(node_selector={"disk": "hdd"}), False, id="nodeSelector, other value"),
    pytest.param(Placement(node_selector={"gpu": ""}), False, id="nodeSelector, no such label"),
    pytest.param(Placement(required_terms=(SelectorTerm((ZONE_A,)),)), True, id="one term"),
    pytest.param(
        Placement(required_terms=(SelectorTerm((ZONE_B,)), SelectorTerm((ZONE_A,)))),
        True,
        id="terms are ORed",
    ),
    pytest.param(
        Placement(required_terms=(SelectorTerm((ZONE_A, Requirement("disk", "In", ("hdd",)))),)),
        False,
        id="expressions of a term are ANDed",
    ),
    pytest.param(
        Placement(required_terms=(SelectorTerm((ZONE_A,), (NAMED_2,)),)),
        True,
        id="expressions and fields",
    ),
    pytest.param(
        Placement(required_terms=(SelectorTerm((ZONE_A,), (NAMED_1,)),)),
        False,
        id="fields are ANDed with expressions",
    ),
    pytest.param(
        Placement(required_terms=(SelectorTerm((), (NAMED_2,)),)), True, id="matchFields alone"
    ),
    pytest.param(Placement(required_terms=(SelectorTerm(),)), False, id="an empty term: nothing"),
    pytest.param(
        Placement(required_terms=(SelectorTerm(), SelectorTerm((ZONE_A,)))),
        True,
        id="an empty term is skipped",
    ),
    pytest.param(Placement(required_terms=()), False, id="no terms: nothing"),
    pytest.param(
        Placement(node_selector={"disk": "hdd"}, required_terms=(SelectorTerm((ZONE_A,)),)),
        False,
        id="nodeSelector and affinity must both hold",
    ),
    pytest.param(
        Placement(required_terms=(SelectorTerm((Requirement("zone", "Bogus", ("a",)),)),)),
        False,
        id="an invalid requirement fails its term",
    ),
]


@pytest.mark.parametrize(("placement", "matches"), AFFINITY_CASES)
def test_node_affinity(placement: Placement, matches: bool) -> None:
    assert matches_node_affinity(placement, NODE) is matches


FREE = parse_resources({"cpu": "2", "memory": "4Gi", "pods": "10"})
ONE_CPU = parse_resources({"cpu": "1", "pods": "1"})

FIT_CASES = [
    pytest.param(Placement(requests=ONE_CPU), NodeFacts("n"), (), id="fits"),
    pytest.param(
        Placement(requests=ONE_CPU),
        NodeFacts("n", unschedulable=True),
        (NODE_UNSCHEDULABLE,),
        id="cordoned",
    ),
    pytest.param(
        Placement(
            requests=ONE_CPU,
            tolerations=(Toleration("node.kubernetes.io/unschedulable", "Exists"),),
        ),
        NodeFacts("n", unschedulable=True),
        (),
        id="tolerating the unschedulable taint tolerates a cordon",
    ),
    pytest.param(
        Placement(requests=ONE_CPU),
        NodeFacts("n", taints=(NOT_READY,)),
        (UNTOLERATED_TAINT,),
        id="taint",
    ),
    pytest.param(
        Placement(requests=ONE_CPU, node_selector={"x": "y"}),
        NodeFacts("n"),
        (AFFINITY_MISMATCH,),
        id="selector",
    ),
    pytest.param(
        Placement(requests=parse_resources({"cpu": "3", "memory": "8Gi", "pods": "1"})),
        NodeFacts("n"),
        ("Insufficient cpu", "Insufficient memory"),
        id="every short resource is a reason",
    ),
    pytest.param(
        Placement(requests=parse_resources({"nvidia.com/gpu": "1", "pods": "1"})),
        NodeFacts("n"),
        ("Insufficient nvidia.com/gpu",),
        id="a resource the node lacks",
    ),
    pytest.param(
        Placement(requests=parse_resources({"cpu": "3", "pods": "1"}), node_selector={"x": "y"}),
        NodeFacts("n", unschedulable=True, taints=(NOT_READY,)),
        (NODE_UNSCHEDULABLE,),
        id="the first failing filter gives the reason",
    ),
    pytest.param(
        Placement(requests=ONE_CPU, node_selector={"x": "y"}),
        NodeFacts("n", taints=(NOT_READY,)),
        (UNTOLERATED_TAINT,),
        id="taints are checked before affinity",
    ),
    pytest.param(
        Placement(requests=parse_resources({"cpu": "9", "pods": "1"}), host_ports=(HostPort(80),)),
        NodeFacts("n"),
        (PORTS_TAKEN,),
        id="ports are checked before resources",
    ),
]


@pytest.mark.parametrize(("placement", "node", "reasons"), FIT_CASES)
def test_fit_failures(placement: Placement, node: NodeFacts, reasons: tuple[str, ...]) -> None:
    assert fit_failures(placement, node, FREE, [HostPort(80)]) == reasons


PORT_CASES = [
    pytest.param(HostPort(80), HostPort(80), True, id="same port"),
    pytest.param(HostPort(80), HostPort(81), False, id="other port"),
    pytest.param(HostPort(80, "UDP"), HostPort(80), False, id="other protocol"),
    pytest.param(
        HostPort(80, host_ip="127.0.0.2"), HostPort(80, host_ip="127.0.0.3"), False, id="ips"
    ),
    pytest.param(HostPort(80, host_ip="127.0.0.2"), HostPort(80), True, id="0.0.0.0 takes all"),
]


@pytest.mark.parametrize(("wanted", "used", "conflict"), PORT_CASES)
def test_host_port_conflicts(wanted: HostPort, used: HostPort, conflict: bool) -> None:
    assert wanted.conflicts(used) is conflict


def test_insufficient_resources_are_named_in_node_resources_fit_order() -> None:
    wanted = parse_resources(
        {
            "example.com/foo": "1",
            "memory": "1Ti",
            "pods": "1",
            "cpu": "64",
            "ephemeral-storage": "1Ti",
        }
    )
    assert insufficient_resources({}, wanted) == (
        "Too many pods",
        "Insufficient cpu",
        "Insufficient memory",
        "Insufficient ephemeral-storage",
        "Insufficient example.com/foo",
    )
    assert insufficient_resources({"cpu": Decimal(1)}, {"cpu": Decimal(0)}) == ()


def test_fit_error_counts_each_reason_over_the_nodes_sorted_as_text() -> None:
    failures = [(UNTOLERATED_TAINT,), (AFFINITY_MISMATCH,), (AFFINITY_MISMATCH,)]
    assert fit_error(3, failures) == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    assert fit_error(2, [("Insufficient cpu", "Insufficient memory"), ("Insufficient cpu",)]) == (
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."
    )
    assert fit_error(0, []) == "no nodes available to schedule pods"


def test_wire_objects_are_read() -> None:
    spec = {
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"operator": "Exists"},
            "not a toleration",
        ],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "zone", "operator": "In", "values": ["a"]}
                            ],
                            "matchFields": [
                                {"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}
                            ],
                        },
                        {},
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": []}}
                ],
            }
        },
        "containers": [{"ports": [{"containerPort": 8080, "hostPort": 80}, {"containerPort": 9}]}],
        "initContainers": [{"ports": [{"hostPort": 53, "protocol": "UDP", "hostIP": "127.0.0.5"}]}],
    }
    assert read_node_selector(spec) == {"disk": "ssd"}
    assert read_tolerations(spec) == (
        Toleration("dedicated", "Equal", "gpu", "NoSchedule"),
        Toleration("", "Exists"),
    )
    assert read_required_terms(spec) == (
        SelectorTerm((ZONE_A,), (Requirement("metadata.name", "NotIn", ("n9",)),)),
        SelectorTerm(),
    )
    assert read_required_terms({"affinity": {"nodeAffinity": {}}}) is None
    assert read_required_terms({}) is None
    assert read_host_ports(spec) == (HostPort(53, "UDP", "127.0.0.5"), HostPort(80))
    node_spec = {"taints": [{"key": "k", "value": "v", "effect": "NoExecute", "timeAdded": "t"}]}
    assert read_taints(node_spec) == (Taint("k", "NoExecute", "v"),)
    assert read_taints({}) == ()
