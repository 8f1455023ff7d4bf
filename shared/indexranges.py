"""Kubernetes' compressed index intervals (`"1,3-5,7"`), as used by `succeededIndexes`.

Rendering matches `orderedIntervals.String()` of the Job controller: a run of two prints as
`1,2`, a run of three or more as `1-3`.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_LENGTH = 64 * 1024


class IndexRangeError(ValueError):
    """The text is not a well-formed, ascending, non-overlapping interval list."""


def parse(text: str) -> list[tuple[int, int]]:
    """Parse into inclusive (first, last) intervals; raises IndexRangeError with the reason."""
    if len(text) > MAX_LENGTH:
        raise IndexRangeError(f"must not be longer than {MAX_LENGTH} characters")
    if text == "":
        return []
    intervals: list[tuple[int, int]] = []
    for part in text.split(","):
        bounds = part.split("-")
        if len(bounds) > 2 or any(not b.isdigit() or not b.isascii() for b in bounds):
            raise IndexRangeError(
                f'"{part}" is not an index or a range "a-b" of non-negative integers'
            )
        first, last = int(bounds[0]), int(bounds[-1])
        if first > last:
            raise IndexRangeError(f'range "{part}" must have its first index before its last')
        if intervals and first <= intervals[-1][1]:
            raise IndexRangeError(
                f'"{part}" must be above the previous range (ascending, no overlap)'
            )
        intervals.append((first, last))
    return intervals


def expand(text: str) -> set[int]:
    return {i for first, last in parse(text) for i in range(first, last + 1)}


def count(text: str) -> int:
    return sum(last - first + 1 for first, last in parse(text))


def max_index(text: str) -> int | None:
    intervals = parse(text)
    return intervals[-1][1] if intervals else None


def render(indexes: Iterable[int]) -> str:
    """Canonical compressed form of any set of non-negative indexes."""
    ordered = sorted(set(indexes))
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{ordered[i]}-{ordered[j]}")
        else:
            parts.extend(str(x) for x in ordered[i : j + 1])
        i = j + 1
    return ",".join(parts)


def canonical(text: str) -> str:
    return render(expand(text))
