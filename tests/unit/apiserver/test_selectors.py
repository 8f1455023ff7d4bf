"""Label and field selectors, one case per operator rule."""

from __future__ import annotations

import pytest

from shared import selectors

LABELS = {"app": "web", "tier": "fe", "env": "prod"}

CASES = [
    ("empty selects everything", "", True),
    ("equals", "app=web", True),
    ("double equals", "app==web", True),
    ("equals mismatch", "app=db", False),
    ("not equals", "app!=db", True),
    ("not equals matches a missing key", "missing!=x", True),
    ("in", "tier in (fe,be)", True),
    ("in mismatch", "tier in (be)", False),
    ("notin", "tier notin (be)", True),
    ("notin matches a missing key", "missing notin (a)", True),
    ("exists", "env", True),
    ("exists missing", "missing", False),
    ("does not exist", "!missing", True),
    ("does not exist present", "!app", False),
    ("all terms must hold", "app=web,tier in (fe),!missing", True),
    ("one failing term fails", "app=web,tier=be", False),
    ("spaces are tolerated", " app = web , tier in ( fe , be ) ", True),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_label_selector_matches(text: str, expected: bool) -> None:
    assert selectors.matches(selectors.parse_labels(text), LABELS) is expected


BAD = [
    ("unbalanced parentheses", "tier in (fe"),
    ("empty set", "tier in ()"),
    ("invalid key", "-bad=x"),
    ("invalid value", "app=bad value"),
    ("dangling comma", "app=web,"),
]


@pytest.mark.parametrize("text", [c[1] for c in BAD], ids=[c[0] for c in BAD])
def test_label_selector_errors(text: str) -> None:
    with pytest.raises(selectors.SelectorError):
        selectors.parse_labels(text)


def test_field_selectors_take_free_text_values_and_no_sets() -> None:
    parsed = selectors.parse_fields("status.phase=Running,spec.nodeName!=")
    assert selectors.matches(parsed, {"status.phase": "Running", "spec.nodeName": "n1"})
    assert not selectors.matches(parsed, {"status.phase": "Running", "spec.nodeName": ""})
    with pytest.raises(selectors.SelectorError):
        selectors.parse_fields("status.phase in (Running)")


def test_label_selector_objects() -> None:
    parsed = selectors.from_label_selector(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["be"]}],
        }
    )
    assert selectors.matches(parsed, LABELS)
    assert not selectors.matches(parsed, {"app": "web", "tier": "be"})
    with pytest.raises(selectors.SelectorError):
        selectors.from_label_selector({"matchExpressions": [{"key": "a", "operator": "Near"}]})
