"""Compressed index intervals as `succeededIndexes` uses them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared import indexranges


@pytest.mark.parametrize(
    ("text", "intervals"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("0", [(0, 0)], id="single"),
        pytest.param("1,3-5,7", [(1, 1), (3, 5), (7, 7)], id="mixed"),
        pytest.param("0-0", [(0, 0)], id="degenerate-range"),
        pytest.param("2,3", [(2, 2), (3, 3)], id="adjacent-singles"),
    ],
)
def test_parse_well_formed(text: str, intervals: list[tuple[int, int]]) -> None:
    assert indexranges.parse(text) == intervals


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("a", "not an index", id="letters"),
        pytest.param("1,,2", "not an index", id="empty-part"),
        pytest.param("-1", "not an index", id="negative"),
        pytest.param("1-2-3", "not an index", id="three-bounds"),
        pytest.param("5-3", "first index before its last", id="descending-range"),
        pytest.param("3,1", "ascending", id="descending"),
        pytest.param("1-3,3", "ascending", id="overlap"),
        pytest.param("1,1", "ascending", id="duplicate"),
        pytest.param(" 1", "not an index", id="space"),
        pytest.param("\u0661", "not an index", id="non-ascii-digit"),
    ],
)
def test_parse_rejects_malformed(text: str, reason: str) -> None:
    with pytest.raises(indexranges.IndexRangeError, match=reason):
        indexranges.parse(text)


def test_parse_rejects_over_64_kib() -> None:
    with pytest.raises(indexranges.IndexRangeError, match="longer than"):
        indexranges.parse("1" * (64 * 1024 + 1))


@pytest.mark.parametrize(
    ("indexes", "rendered"),
    [
        pytest.param([], "", id="none"),
        pytest.param([0], "0", id="one"),
        pytest.param([1, 2], "1,2", id="run-of-two"),
        pytest.param([1, 2, 3], "1-3", id="run-of-three"),
        pytest.param([7, 0, 1, 2, 5, 4], "0-2,4,5,7", id="unordered"),
    ],
)
def test_render_is_canonical(indexes: list[int], rendered: str) -> None:
    assert indexranges.render(indexes) == rendered


def test_count_max_and_canonical() -> None:
    assert indexranges.count("1,3-5,7") == 5
    assert indexranges.max_index("1,3-5,7") == 7
    assert indexranges.max_index("") is None
    assert indexranges.canonical("0-1,2,3") == "0-3"


index_sets = st.sets(st.integers(min_value=0, max_value=300), max_size=60)


@given(index_sets)
def test_render_then_parse_round_trips(indexes: set[int]) -> None:
    text = indexranges.render(indexes)
    assert indexranges.expand(text) == indexes
    assert indexranges.count(text) == len(indexes)


@given(index_sets)
def test_canonical_of_any_spelling_is_the_rendering(indexes: set[int]) -> None:
    spelled = ",".join(str(i) for i in sorted(indexes))  # every index on its own
    assert indexranges.canonical(spelled) == indexranges.render(indexes)
    assert indexranges.render(indexranges.expand(indexranges.render(indexes))) == (
        indexranges.render(indexes)
    )
