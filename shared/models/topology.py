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


class RegexMatch(KubeModel):
    pattern: str = Field(min_length=1)


class MemberSelector(KubeModel):
    """Exactly one way of naming the member: a name, a regular expression, or a label selector."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": SELECTOR_RULES})

    exact_match: ExactMatch | None = None
    regex_match: RegexMatch | None = None
    label_match: dict[str, Any] | None = Field(default=None, json_schema_extra=LABEL_SELECTOR)


class MemberSpec(KubeModel):
    type: str = Field(json_schema_extra={"enum": list(MEMBER_TYPES)})
    selector: MemberSelector | None = None


class HyperNodeSpec(KubeModel):
    tier: int = Field(ge=0)
    tier_name: str | None = Field(default=None, max_length=253)
    members: list[MemberSpec] | None = Field(default=None, min_length=1)


class HyperNodeCondition(KubeModel):
    type: str | None = None
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = Field(
        default=None, json_schema_extra={"format": "date-time"}
    )
    observed_generation: int | None = Field(default=None, ge=0)


class HyperNodeStatus(KubeModel):
    conditions: list[HyperNodeCondition] | None = None
    node_count: int | None = Field(default=None, ge=0)


class HyperNode(KubeObject):
    """A HyperNode: a performance domain of the network (a switch, a rack, a NVLink island) whose
    members are nodes or lower-tier HyperNodes."""

    api_version: str | None = f"{TOPOLOGY_GROUP}/{TOPOLOGY_VERSION}"
    kind: str | None = HYPERNODE_KIND
    spec: HyperNodeSpec
    status: HyperNodeStatus | None = None
