"""`ttl.ttl_outcome`: delete once ttlSecondsAfterFinished passed, else wait."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from controller.job.decide.ttl import TtlOutcome, ttl_outcome

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ttl", "finished", "expected"),
    [
        (None, NOW, None),
        (30, None, None),
        (0, NOW, TtlOutcome(delete=True)),
        (30, NOW - timedelta(seconds=30), TtlOutcome(delete=True)),
        (30, NOW - timedelta(seconds=10), TtlOutcome(delete=False, wait=timedelta(seconds=20))),
    ],
    ids=["no ttl", "not finished", "ttl 0", "expired exactly", "20s to go"],
)
def test_ttl_outcome(
    ttl: int | None, finished: datetime | None, expected: TtlOutcome | None
) -> None:
    assert ttl_outcome(ttl, finished, NOW) == expected
