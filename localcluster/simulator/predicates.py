"""Whether a pod may go on a node, as kube-scheduler's filter plugins decide it (pure).

The plugins run in kube-scheduler's default order and the first that rejects a node gives the
reasons for it: NodeUnschedulable, TaintToleration, NodeAffinity (`nodeSelector` and the required
node affinity), NodePorts, NodeResourcesFit. `fit_error` words the outcome over every node the way
`kubectl describe pod` shows kube-scheduler's FailedScheduling message, e.g. `0/3 nodes are
available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector.`

Wire objects are read leniently (a malformed entry is skipped or never matches); kube-apiserver has
validated them already.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from localcluster.simulator.resources import POD_SLOT, Resources

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
# The taints kube-scheduler filters on; PreferNoSchedule only weighs in scoring.
FILTERED_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
UNSCHEDULABLE_TAINT_KEY = "node.kubernetes.io/unschedulable"
NODE_NAME_FIELD = "metadata.name"
# A host port's address when none is given: every address of the node.
ANY_ADDRESS = "0.0.0.0"  # noqa: S104 - a pod spec's value, compared, never bound

# kube-scheduler v1.34's reasons, word for word.
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
PORTS_TAKEN = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS = "Too many pods"
NO_NODES = "no nodes available to schedule pods"
# NodeResourcesFit checks these first, in this order, then any other resource by name.
FIRST_RESOURCES = ("cpu", "memory", "ephemeral-storage")

IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT = "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"
# What strconv.ParseInt(s, 10, 64) accepts.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str = ""


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = ""  # "" means Equal
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """core/v1 Toleration.ToleratesTaint: an empty effect or key matches any; Exists matches
        any value; an empty key with Exists tolerates every taint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == EXISTS


@dataclass(frozen=True)
class Requirement:
    """A NodeSelectorRequirement: `key` `operator` `values`."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class SelectorTerm:
    """A NodeSelectorTerm: every expression (on labels) and every field requirement must hold."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_expressions and not self.match_fields


@dataclass(frozen=True)
class HostPort:
    port: int
    protocol: str = "TCP"
    host_ip: str = ANY_ADDRESS

    def conflicts(self, other: HostPort) -> bool:
        """Same port and protocol on the same address, 0.0.0.0 overlapping every address."""
        if (self.port, self.protocol) != (other.port, other.protocol):
            return False
        return self.host_ip == other.host_ip or ANY_ADDRESS in (self.host_ip, other.host_ip)


@dataclass(frozen=True)
class Placement:
    """What of a pod decides where it may go."""

    requests: Resources = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    # None: no required node affinity; a tuple (even empty): the terms, ORed.
    required_terms: tuple[SelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    host_ports: tuple[HostPort, ...] = ()


@dataclass(frozen=True)
class NodeFacts:
    """What of a node the filters read."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False


# -- wire objects ----------------------------------------------------------------------------


def _entries(raw: Any) -> list[Mapping[str, Any]]:
    """The mappings of a wire list (anything else reads as an empty list)."""
    if not isinstance(raw, list):
        return []
    return [entry for entry in raw if isinstance(entry, Mapping)]


def read_taints(node_spec: Mapping[str, Any]) -> tuple[Taint, ...]:
    return tuple(
        Taint(str(t.get("key") or ""), str(t.get("effect") or ""), str(t.get("value") or ""))
        for t in _entries(node_spec.get("taints"))
    )


def read_tolerations(pod_spec: Mapping[str, Any]) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or ""),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in _entries(pod_spec.get("tolerations"))
    )


def _requirements(raw: Any) -> tuple[Requirement, ...]:
    return tuple(
        Requirement(
            str(r.get("key") or ""),
            str(r.get("operator") or ""),
            tuple(str(v) for v in r.get("values") or ()),
        )
        for r in _entries(raw)
    )


def read_required_terms(pod_spec: Mapping[str, Any]) -> tuple[SelectorTerm, ...] | None:
    affinity = pod_spec.get("affinity")
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    if not isinstance(node_affinity, Mapping):
        return None
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, Mapping):
        return None
    return tuple(
        SelectorTerm(_requirements(t.get("matchExpressions")), _requirements(t.get("matchFields")))
        for t in _entries(required.get("nodeSelectorTerms"))
    )


def read_host_ports(pod_spec: Mapping[str, Any]) -> tuple[HostPort, ...]:
    ports = []
    for container in _entries(pod_spec.get("initContainers")) + _entries(
        pod_spec.get("containers")
    ):
        for port in _entries(container.get("ports")):
            host_port = port.get("hostPort")
            if isinstance(host_port, int) and host_port > 0:
                ports.append(
                    HostPort(
                        host_port,
                        str(port.get("protocol") or "TCP"),
                        str(port.get("hostIP") or ANY_ADDRESS),
                    )
                )
    return tuple(ports)


def read_node_selector(pod_spec: Mapping[str, Any]) -> dict[str, str]:
    selector = pod_spec.get("nodeSelector")
    return {str(k): str(v) for k, v in selector.items()} if isinstance(selector, Mapping) else {}


# -- the rules -------------------------------------------------------------------------------


def untolerated_taint(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> Taint | None:
    """The first NoSchedule/NoExecute taint no toleration tolerates."""
    for taint in taints:
        if taint.effect in FILTERED_EFFECTS and not any(t.tolerates(taint) for t in tolerations):
            return taint
    return None


def _int64(text: str) -> int | None:
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if value in _INT64 else None


def _valid_expression(req: Requirement) -> bool:
    """labels.NewRequirement's checks of the operator and the number of values."""
    if req.operator in (IN, NOT_IN):
        return bool(req.values)
    if req.operator in (EXISTS, DOES_NOT_EXIST):
        return not req.values
    if req.operator in (GT, LT):
        return len(req.values) == 1 and _int64(req.values[0]) is not None
    return False


def label_requirement_matches(req: Requirement, labels: Mapping[str, str]) -> bool:
    """labels.Requirement.Matches: NotIn and DoesNotExist hold for a missing label; Gt and Lt
    compare integers and fail on a label that is not one."""
    if not _valid_expression(req):
        return False
    value = labels.get(req.key)
    if req.operator == IN:
        return value is not None and value in req.values
    if req.operator == NOT_IN:
        return value is None or value not in req.values
    if req.operator == EXISTS:
        return value is not None
    if req.operator == DOES_NOT_EXIST:
        return value is None
    have = None if value is None else _int64(value)
    want = _int64(req.values[0])
    if have is None or want is None:
        return False
    return have > want if req.operator == GT else have < want


def field_requirement_matches(req: Requirement, fields: Mapping[str, str]) -> bool:
    """A matchFields requirement: In or NotIn with exactly one value (a missing field reads as
    the empty string, as fields.Set does)."""
    if req.operator not in (IN, NOT_IN) or len(req.values) != 1:
        return False
    equal = fields.get(req.key, "") == req.values[0]
    return equal if req.operator == IN else not equal


def term_matches(term: SelectorTerm, node: NodeFacts) -> bool:
    """Every requirement of the term holds; an empty term matches no node."""
    if term.empty:
        return False
    fields = {NODE_NAME_FIELD: node.name}
    return all(label_requirement_matches(r, node.labels) for r in term.match_expressions) and all(
        field_requirement_matches(r, fields) for r in term.match_fields
    )


def matches_node_affinity(placement: Placement, node: NodeFacts) -> bool:
    """`nodeSelector` (every label equal) and the required node affinity (any term) both hold."""
    if any(node.labels.get(k) != v for k, v in placement.node_selector.items()):
        return False
    if placement.required_terms is None:
        return True
    return any(term_matches(term, node) for term in placement.required_terms)


def resource_order(name: str) -> tuple[int, str]:
    """NodeResourcesFit's order: the pod slot, cpu, memory, ephemeral-storage, then by name."""
    if name == POD_SLOT:
        return (0, "")
    if name in FIRST_RESOURCES:
        return (1 + FIRST_RESOURCES.index(name), "")
    return (len(FIRST_RESOURCES) + 1, name)


def insufficient_resources(free: Resources, requests: Resources) -> tuple[str, ...]:
    """NodeResourcesFit's reasons: one per requested resource the node has not enough of left."""
    reasons = []
    for name in sorted(requests, key=resource_order):
        wanted = requests[name]
        if wanted > 0 and wanted > free.get(name, Decimal(0)):
            reasons.append(TOO_MANY_PODS if name == POD_SLOT else f"Insufficient {name}")
    return tuple(reasons)


def fit_failures(
    placement: Placement,
    node: NodeFacts,
    free: Resources,
    ports_in_use: Iterable[HostPort] = (),
) -> tuple[str, ...]:
    """Why the pod cannot go on the node, from the first filter that rejects it; () when it fits."""
    if node.unschedulable:
        cordon = Taint(UNSCHEDULABLE_TAINT_KEY, NO_SCHEDULE)
        if not any(t.tolerates(cordon) for t in placement.tolerations):
            return (NODE_UNSCHEDULABLE,)
    if untolerated_taint(node.taints, placement.tolerations) is not None:
        return (UNTOLERATED_TAINT,)
    if not matches_node_affinity(placement, node):
        return (AFFINITY_MISMATCH,)
    in_use = tuple(ports_in_use)
    if any(wanted.conflicts(used) for wanted in placement.host_ports for used in in_use):
        return (PORTS_TAKEN,)
    return insufficient_resources(free, placement.requests)


def fit_error(node_count: int, failures: Iterable[Sequence[str]]) -> str:
    """kube-scheduler's FitError message: each reason with the number of nodes it applies to,
    sorted as text."""
    if node_count == 0:
        return NO_NODES
    counts = Counter(reason for reasons in failures for reason in reasons)
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    return f"0/{node_count} nodes are available: {', '.join(histogram)}."
