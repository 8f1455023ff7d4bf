"""Resource quantities through the official client's parser."""

from __future__ import annotations

from decimal import Decimal

import pytest

from shared import quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Decimal(1)),
        ("1000m", Decimal(1)),
        ("500m", Decimal("0.5")),
        ("2Gi", Decimal(2 * 1024**3)),
        ("1k", Decimal(1000)),
        (4, Decimal(4)),
    ],
)
def test_parse(text: str | int, value: Decimal) -> None:
    assert quantity.parse(text) == value


@pytest.mark.parametrize("bad", ["", "1x", "abc", None, True, [1], {"a": 1}])
def test_try_parse_returns_none_for_garbage(bad: object) -> None:
    assert quantity.try_parse(bad) is None


def test_add_quantities() -> None:
    total = quantity.add_quantities(
        {"cpu": Decimal(1)}, {"cpu": Decimal("0.5"), "memory": Decimal(2)}
    )
    assert total == {"cpu": Decimal("1.5"), "memory": Decimal(2)}


def test_parse_resource_list_keeps_the_quantities_only() -> None:
    raw = {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 2, "bad": "lots", "flag": True}
    assert quantity.parse_resource_list(raw) == {
        "cpu": Decimal("0.5"),
        "memory": Decimal(1024**3),
        "nvidia.com/gpu": Decimal(2),
    }
    assert quantity.parse_resource_list(["cpu"]) == {}
    assert quantity.parse_resource_list(None) == {}


def test_max_quantities_takes_each_resource_s_largest_amount() -> None:
    amounts = [{"cpu": Decimal(1), "memory": Decimal(4)}, {"cpu": Decimal(3)}, {}]
    assert quantity.max_quantities(amounts) == {"cpu": Decimal(3), "memory": Decimal(4)}
