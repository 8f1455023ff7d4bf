"""PodGroup, Pod and HyperNode rules, one table per rule; messages contain Volcano's phrases."""

from __future__ import annotations

from typing import Any

import pytest

from shared.fielderrors import Path
from shared.models import Queue
from webhook.hypernode.validation import regex_problem, validate_hypernode, validate_selector
from webhook.pod.validation import validate_pod
from webhook.podgroup.defaulting import default_podgroup_queue
from webhook.podgroup.validation import validate_podgroup, validate_queue_open


def queue(state: str | None) -> Queue:
    status = {"state": state} if state else {}
    return Queue.from_wire({"metadata": {"name": "q"}, "status": status})


@pytest.mark.parametrize(
    ("spec", "annotation", "expected"),
    [
        ({}, "team", "team"),
        ({"queue": "default"}, "team", "team"),
        ({"queue": "mine"}, "team", "mine"),
        ({"queue": "default"}, None, "default"),
        ({}, None, None),
    ],
)
def test_default_podgroup_queue(
    spec: dict[str, Any], annotation: str | None, expected: Any
) -> None:
    defaulted = default_podgroup_queue({"spec": spec}, annotation)
    assert defaulted["spec"].get("queue") == expected


@pytest.mark.parametrize(
    ("name", "found", "expected"),
    [
        ("q", queue("Open"), []),
        ("q", queue(None), []),  # no controller has given it a state yet: counts as Open
        (None, None, []),
        (
            "q",
            queue("Closed"),
            [
                'spec.queue: Invalid value: "q": can only submit PodGroup to queue with state '
                "`Open`, queue `q` status is `Closed`"
            ],
        ),
        (
            "q",
            queue("Closing"),
            [
                'spec.queue: Invalid value: "q": can only submit PodGroup to queue with state '
                "`Open`, queue `q` status is `Closing`"
            ],
        ),
        (
            "gone",
            None,
            [
                'spec.queue: Not found: "gone": unable to find queue: '
                'queue.scheduling.volcano.sh "gone" not found'
            ],
        ),
    ],
)
def test_validate_queue_open(name: Any, found: Queue | None, expected: list[str]) -> None:
    assert [str(e) for e in validate_queue_open(name, found, Path.of("spec", "queue"))] == expected


def test_validate_podgroup_reports_every_problem() -> None:
    podgroup = {
        "spec": {
            "queue": "q",
            "networkTopology": {"highestTierAllowed": 1, "highestTierName": "rack"},
            "subGroupPolicy": [
                {"name": "ok"},
                {"name": "w", "networkTopology": {"highestTierAllowed": 2, "highestTierName": "x"}},
            ],
        }
    }
    errors = [str(e) for e in validate_podgroup(podgroup, queue("Closed"), check_queue=True)]
    assert errors == [
        'spec.queue: Invalid value: "q": can only submit PodGroup to queue with state `Open`, '
        "queue `q` status is `Closed`",
        "spec.networkTopology.highestTierName: Forbidden: must not specify 'highestTierAllowed' "
        "and 'highestTierName' in networkTopology simultaneously",
        "spec.subGroupPolicy[1].networkTopology.highestTierName: Forbidden: in subGroupPolicy "
        "'w': must not specify 'highestTierAllowed' and 'highestTierName' in networkTopology "
        "simultaneously",
    ]
    assert validate_podgroup({"spec": {"queue": "q"}}, None, check_queue=False) == []


MIN = "volcano.sh/jdb-min-available"
MAX = "volcano.sh/jdb-max-unavailable"


def pod(annotations: dict[str, str], scheduler: str = "volcano") -> dict[str, Any]:
    return {"metadata": {"annotations": annotations}, "spec": {"schedulerName": scheduler}}


@pytest.mark.parametrize(
    ("annotations", "errors", "warnings"),
    [
        ({}, [], []),
        ({MIN: "2"}, [], []),
        ({MAX: "50%"}, [], []),
        ({MIN: "99%"}, [], []),
        (
            {MIN: "-1"},
            [
                'metadata.annotations[volcano.sh/jdb-min-available]: Invalid value: "-1": invalid '
                'value <"-1"> for volcano.sh/jdb-min-available, it must be a positive integer'
            ],
            [],
        ),
        (
            {MAX: "0"},
            [
                'metadata.annotations[volcano.sh/jdb-max-unavailable]: Invalid value: "0": invalid '
                'value <"0"> for volcano.sh/jdb-max-unavailable, it must be a positive integer'
            ],
            [],
        ),
        (
            {MIN: "0%"},
            [
                'metadata.annotations[volcano.sh/jdb-min-available]: Invalid value: "0%": invalid '
                'value <"0%"> for volcano.sh/jdb-min-available, it must be a valid percentage '
                "which between 1% ~ 99%"
            ],
            [],
        ),
        (
            {MIN: "100%"},
            [
                'metadata.annotations[volcano.sh/jdb-min-available]: Invalid value: "100%": '
                'invalid value <"100%"> for volcano.sh/jdb-min-available, '
                "it must be a valid percentage which between 1% ~ 99%"
            ],
            [],
        ),
        (
            {MIN: "abc"},
            [
                'metadata.annotations[volcano.sh/jdb-min-available]: Invalid value: "abc": invalid '
                "value for volcano.sh/jdb-min-available: must be a positive integer or a "
                "percentage between 1% and 99%"
            ],
            [],
        ),
        (
            {MIN: "2", MAX: "0"},
            [
                'metadata.annotations[volcano.sh/jdb-max-unavailable]: Invalid value: "0": invalid '
                'value <"0"> for volcano.sh/jdb-max-unavailable, it must be a positive integer',
                "metadata.annotations[volcano.sh/jdb-max-unavailable]: Forbidden: not allow "
                "configure multiple annotations <[volcano.sh/jdb-min-available "
                "volcano.sh/jdb-max-unavailable]> at same time: set either a minimum available "
                "or a maximum unavailable",
            ],
            [],
        ),
        (
            {MAX: "%50"},
            [],
            [
                "metadata.annotations[volcano.sh/jdb-max-unavailable]: '%50' is read as 50%; "
                "write it as 50% (one percent sign, at the end)"
            ],
        ),
    ],
)
def test_validate_pod(annotations: dict[str, str], errors: list[str], warnings: list[str]) -> None:
    verdict = validate_pod(pod(annotations), ("volcano",))
    assert ([str(e) for e in verdict.errors], verdict.warnings) == (errors, warnings)


def test_pods_of_other_schedulers_are_not_judged() -> None:
    assert validate_pod(pod({MIN: "-1"}, "default-scheduler"), ("volcano",)).errors == []


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("node-[0-9]+", None),
        ("^gpu-(a|b)$", None),
        ("a(b", "error parsing regexp: missing ), unterminated subpattern at position 1"),
        ("node-(?!x)", "error parsing regexp: lookaround assertions"),
        ("(a)\\1", "error parsing regexp: backreferences"),
    ],
)
def test_regex_problem(pattern: str, problem: str | None) -> None:
    found = regex_problem(pattern)
    assert (found is None, (found or "").startswith(problem or "")) == (problem is None, True)


SEL = Path.of("spec", "members").index(0).child("selector")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({"exactMatch": {"name": "node-1"}}, []),
        ({"labelMatch": {"matchLabels": {"zone": "a"}}}, []),
        (
            {},
            [
                "spec.members[0].selector: Required value: Either ExactMatch or RegexMatch or "
                "LabelMatch must be specified"
            ],
        ),
        (
            {"exactMatch": {"name": "n"}, "regexMatch": {"pattern": "n.*"}},
            [
                "spec.members[0].selector.regexMatch: Forbidden: Only one of ExactMatch, "
                "RegexMatch, or LabelMatch can be specified (found exactMatch, regexMatch)"
            ],
        ),
        (
            {"exactMatch": {"name": "Node_1"}},
            [
                'spec.members[0].selector.exactMatch.name: Invalid value: "Node_1": a lowercase '
                "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                "'.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                "regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
        ),
        (
            {"regexMatch": {"pattern": ""}},
            [
                'spec.members[0].selector.regexMatch.pattern: Invalid value: "": should be at '
                "least 1 chars long"
            ],
        ),
        (
            {"regexMatch": {"pattern": "a(b"}},
            [
                'spec.members[0].selector.regexMatch.pattern: Invalid value: "a(b": member '
                "regexMatch pattern is invalid: error parsing regexp: missing ), unterminated "
                "subpattern at position 1"
            ],
        ),
        (
            {"labelMatch": {"matchExpressions": [{"key": "k", "operator": "In"}]}},
            [
                "spec.members[0].selector.labelMatch.matchExpressions[0].values: Required value: "
                "must be specified when `operator` is 'In' or 'NotIn'"
            ],
        ),
    ],
)
def test_validate_selector(selector: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_selector(selector, SEL)] == expected


def test_validate_hypernode() -> None:
    assert [str(e) for e in validate_hypernode({"spec": {"tier": 1}}).errors] == [
        "spec.members: Invalid value: []: member must have at least one member"
    ]
    verdict = validate_hypernode(
        {
            "spec": {
                "tier": 2,
                "members": [
                    {"type": "Switch", "selector": {"exactMatch": {"name": "s1"}}},
                    {"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"a": "b"}}}},
                    {"type": "Node", "selector": {"regexMatch": {"pattern": "a(b"}}},
                ],
            }
        }
    )
    assert [e.field for e in verdict.errors] == [
        "spec.members[0].type",
        "spec.members[2].selector.regexMatch.pattern",
    ]
    assert verdict.warnings == [
        "spec.members[1].selector.labelMatch: a label selector only takes effect for members of "
        "type Node; the scheduler ignores this member"
    ]
