"""The event recorder: client-go's time-ordered names, and repeats counted on one Event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubeio.clock import ManualClock
from kubeio.events import EventRecorder, SimilarEvents, event_name, unix_nanos
from tests.support import FakeKube


def events(kube: FakeKube) -> dict[str, dict[str, Any]]:
    """The stored Events by name."""
    return {name: o for (plural, _ns, name), o in kube.objects.items() if plural == "events"}


JOB = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
       "metadata": {"name": "j", "namespace": "ns", "uid": "u1"}}  # fmt: skip


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(1970, 1, 1, tzinfo=UTC), "j.0"),
        (datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC), "j.3b9aca00"),
        (datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=UTC), f"j.{1767225600000001000:x}"),
    ],
    ids=["epoch", "one second", "microseconds kept"],
)
def test_event_name_is_the_object_and_its_unix_nanoseconds_in_hex(
    moment: datetime, expected: str
) -> None:
    assert event_name("j", unix_nanos(moment)) == expected


def test_names_follow_the_order_of_recording_even_on_a_clock_that_stands_still() -> None:
    kube = FakeKube()
    recorder = EventRecorder(kube, "me", ManualClock())
    for reason in ("First", "Second", "Third"):
        recorder.record(JOB, "Normal", reason, reason)
    by_name = [
        events(kube)[n]["reason"] for n in sorted(events(kube), key=lambda n: int(n[2:], 16))
    ]
    assert by_name == ["First", "Second", "Third"]


def test_a_repeat_counts_on_the_first_event() -> None:
    kube = FakeKube()
    clock = ManualClock()
    recorder = EventRecorder(kube, "me", clock)
    recorder.record(JOB, "Warning", "FailedCreatePod", "create j-w-0: Invalid")
    clock.advance(timedelta(seconds=5).total_seconds())
    recorder.record(JOB, "Warning", "FailedCreatePod", "create j-w-0: Invalid")
    assert len(events(kube)) == 1
    event = next(iter(events(kube).values()))
    assert event["count"] == 2
    assert event["lastTimestamp"] > event["firstTimestamp"]


def test_similar_events_are_combined_from_the_tenth_distinct_message_on() -> None:
    kube = FakeKube()
    clock = ManualClock()
    recorder = EventRecorder(kube, "me", clock)
    for i in range(12):
        clock.advance(1)
        recorder.record(JOB, "Warning", "FailedCreatePod", f"create j-w-{i}: Invalid")
    written = sorted(events(kube).values(), key=lambda e: int(e["metadata"]["name"][2:], 16))
    assert [e["count"] for e in written] == [1] * 9 + [3]
    combined = written[-1]
    assert combined["message"] == "(combined from similar events): create j-w-11: Invalid"


@pytest.mark.parametrize(
    ("messages", "gap", "combined"),
    [
        (9, 1.0, False),
        (10, 1.0, True),
        (10, 100.0, False),  # the 10 minutes start over: no combining
    ],
    ids=["nine distinct", "ten distinct", "spread over more than the window"],
)
def test_similar_events_window(messages: int, gap: float, combined: bool) -> None:
    similar = SimilarEvents()
    last = ("", "")
    for i in range(messages):
        last = similar.observe(("u", "Warning", "R"), f"m{i}", i * gap)
    assert last[1].startswith("(combined") is combined
    assert (last[0] == "") is combined
