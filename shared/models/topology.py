"""topology.volcano.sh/v1alpha1 HyperNode: a group of nodes (or of other HyperNodes) at one tier
of the network, field for field as Volcano's API declares it."""

from __future__ import annotations

from typing import Any, Final

from pydantic import ConfigDict, Field
from pydantic.config import JsonValue

from shared import labels
from shared.models.base import KubeModel, KubeObject
from shared.models.job import LABEL_SELECTOR
from shared.models.scheduling import DNS_SUBDOMAIN_PATTERN

TOPOLOGY_GROUP: Final = labels.TOPOLOGY_GROUP
TOPOLOGY_VERSION: Final = labels.TOPOLOGY_VERSION
HYPERNODE_KIND: Final = "HyperNode"
MEMBER_TYPES: Final = ("Node", "HyperNode")
# The API server's CEL rules on a member's selector; the webhook checks the same (rules.hypernodes).
SELECTOR_RULES: Final[list[JsonValue]] = [
    {
        "rule": "has(self.exactMatch) || has(self.regexMatch) || has(self.labelMatch)",
        "message": "Either ExactMatch or RegexMatch or LabelMatch must be specified",
    },
    {
        "rule": "(has(self.exactMatch) ? 1 : 0) + (has(self.regexMatch) ? 1 : 0)"
        " + (has(self.labelMatch) ? 1 : 0) <= 1",
        "message": "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified",
    },
]


class ExactMatch(KubeModel):
    name: str = Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)
    """The member's name: a Node's, or a lower-tier HyperNode's."""


class RegexMatch(KubeModel):
    pattern: str = Field(min_length=1)
    """A regular expression (RE2) the members' names match."""


class MemberSelector(KubeModel):
    """Exactly one way of naming the member: a name, a regular expression, or a label selector."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": SELECTOR_RULES})

    exact_match: ExactMatch | None = None
    """The member by name."""
    regex_match: RegexMatch | None = None
    """The members whose names match a regular expression."""
    label_match: dict[str, Any] | None = Field(default=None, json_schema_extra=LABEL_SELECTOR)


class MemberSpec(KubeModel):
    type: str = Field(json_schema_extra={"enum": list(MEMBER_TYPES)})
    """Node or HyperNode."""
    selector: MemberSelector | None = None
    """Which nodes or HyperNodes are members."""


class HyperNodeSpec(KubeModel):
    tier: int = Field(ge=0)
    """The HyperNode's tier: 1 for a group of nodes, higher for groups of HyperNodes."""
    tier_name: str | None = Field(default=None, max_length=253)
    """A name for the tier (e.g. leaf, spine)."""
    members: list[MemberSpec] | None = Field(default=None, min_length=1)
    """The nodes or lower-tier HyperNodes in this one."""


class HyperNodeCondition(KubeModel):
    type: str | None = None
    """The condition's type."""
    status: str | None = None
    """True, False or Unknown."""
    reason: str | None = None
    """Why, in one word."""
    message: str | None = None
    """Why, for people."""
    last_transition_time: str | None = Field(
        default=None, json_schema_extra={"format": "date-time"}
    )
    """When the status last changed."""
    observed_generation: int | None = Field(default=None, ge=0)
    """The generation the condition was set for."""


class HyperNodeStatus(KubeModel):
    conditions: list[HyperNodeCondition] | None = None
    """The HyperNode's conditions."""
    node_count: int | None = Field(default=None, ge=0)
    """How many nodes the HyperNode holds, through its members."""


class HyperNode(KubeObject):
    """A HyperNode: a performance domain of the network (a switch, a rack, a NVLink island) whose
    members are nodes or lower-tier HyperNodes."""

    api_version: str | None = f"{TOPOLOGY_GROUP}/{TOPOLOGY_VERSION}"
    kind: str | None = HYPERNODE_KIND
    spec: HyperNodeSpec
    """The HyperNode's tier and members."""
    status: HyperNodeStatus | None = None
    """What the scheduler observed of the HyperNode."""
