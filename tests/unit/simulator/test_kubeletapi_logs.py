"""containerLogs decisions: kubelet's query decoding and validation, the run's file, and which bytes
of it go out (tail, since, timestamps, limit), table-tested."""

from __future__ import annotations

import datetime as dt

import pytest

from localcluster.simulator import containerlogs
from localcluster.simulator.containerlogs import LogOptions, LogRequestError

T0 = dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
FIVE = b"one\ntwo\nthree\nfour\nfive\n"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, LogOptions()),
        ({"follow": ["true"], "timestamps": ["1"]}, LogOptions(follow=True, timestamps=True)),
        # apimachinery: only absent, "0" and "false" (any case) are false; "" is true.
        ({"previous": ["FALSE"], "follow": ["0"]}, LogOptions()),
        ({"previous": [""]}, LogOptions(previous=True)),
        ({"tailLines": ["3"], "limitBytes": ["10"]}, LogOptions(tail_lines=3, limit_bytes=10)),
        ({"tail": ["2"]}, LogOptions(tail_lines=2)),
        ({"tail": ["all"], "tailLines": ["4"]}, LogOptions()),
        ({"sinceSeconds": ["60"]}, LogOptions(since_seconds=60)),
        (
            {"sinceTime": ["2026-03-01T12:00:00Z"]},
            LogOptions(since_time=dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)),
        ),
        ({"stream": ["All"]}, LogOptions()),
    ],
)
def test_query_decodes_as_kubelet_reads_it(
    query: dict[str, list[str]], expected: LogOptions
) -> None:
    assert containerlogs.parse_log_options(query) == expected


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        ({"tailLines": ["x"]}, 400, containerlogs.UNDECODABLE_QUERY),
        ({"limitBytes": [""]}, 400, containerlogs.UNDECODABLE_QUERY),
        ({"sinceTime": ["yesterday"]}, 400, containerlogs.UNDECODABLE_QUERY),
        ({"sinceTime": ["2026-03-01T12:00:00"]}, 400, containerlogs.UNDECODABLE_QUERY),
        ({"tailLines": ["-1"]}, 422, containerlogs.INVALID_REQUEST),
        ({"limitBytes": ["0"]}, 422, containerlogs.INVALID_REQUEST),
        ({"sinceSeconds": ["0"]}, 422, containerlogs.INVALID_REQUEST),
        (
            {"sinceSeconds": ["5"], "sinceTime": ["2026-03-01T12:00:00Z"]},
            422,
            containerlogs.INVALID_REQUEST,
        ),
        ({"stream": ["Stderr"]}, 400, 'unable to return the given log stream: "Stderr"'),
    ],
)
def test_bad_queries_get_kubelets_status_and_text(
    query: dict[str, list[str]], status: int, message: str
) -> None:
    with pytest.raises(LogRequestError) as caught:
        containerlogs.parse_log_options(query)
    assert caught.value.status == status
    assert caught.value.message.startswith(message)


@pytest.mark.parametrize(
    ("restarts", "previous", "run"),
    [(0, False, 0), (3, False, 3), (3, True, 2), (0, True, None)],
)
def test_the_run_read_is_the_current_or_the_one_before(
    restarts: int, previous: bool, run: int | None
) -> None:
    assert containerlogs.run_to_read(restarts, previous) == run


def test_stamps_have_nine_fractional_digits_in_utc() -> None:
    east = dt.timezone(dt.timedelta(hours=2))
    assert containerlogs.stamp(T0.astimezone(east)) == b"2026-03-01T12:00:00.123456000Z "


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (LogOptions(), FIVE),
        (LogOptions(tail_lines=2), b"four\nfive\n"),
        (LogOptions(tail_lines=0), b""),
        (LogOptions(tail_lines=9), FIVE),
        (LogOptions(since_seconds=60), FIVE),  # written 10 s ago
        (LogOptions(since_seconds=5), b""),
        (LogOptions(since_time=T0 - dt.timedelta(seconds=11)), FIVE),
        (LogOptions(since_time=T0), b""),
        (
            LogOptions(tail_lines=1, timestamps=True),
            b"2026-03-01T11:59:50.123456000Z five\n",
        ),
    ],
)
def test_existing_output_is_tailed_filtered_and_stamped(
    options: LogOptions, expected: bytes
) -> None:
    written = T0 - dt.timedelta(seconds=10)
    assert containerlogs.existing_output(FIVE, written, options, now=T0) == expected


def test_a_last_line_without_newline_and_carriage_returns_stay_whole() -> None:
    data = b"progress 10%\rprogress 100%\ndone"
    assert containerlogs.split_lines(data) == [b"progress 10%\rprogress 100%\n", b"done"]
    tailed = containerlogs.existing_output(data, T0, LogOptions(tail_lines=1), now=T0)
    assert tailed == b"done"


def test_the_byte_budget_spans_the_whole_answer() -> None:
    budget = containerlogs.ByteBudget(7)
    assert budget.take(b"four\n") == b"four\n"
    assert budget.remaining == 2
    assert budget.take(b"five\n") == b"fi"
    assert budget.spent
    assert budget.take(b"six\n") == b""
    unlimited = containerlogs.ByteBudget(None)
    assert unlimited.take(FIVE) == FIVE
    assert not unlimited.spent


def test_following_sends_whole_lines_and_the_rest_at_the_end() -> None:
    lines = containerlogs.LineBuffer()
    assert lines.feed(b"par") == []
    assert lines.feed(b"t one\ntwo\nthr") == [b"part one\n", b"two\n"]
    assert lines.feed(b"ee\n") == [b"three\n"]
    assert lines.flush() == []
    assert lines.feed(b"tail") == []
    assert lines.flush() == [b"tail"]


def test_kubelets_wordings() -> None:
    assert (
        containerlogs.previous_not_found("main", "web")
        == 'previous terminated container "main" in pod "web" not found'
    )
    assert (
        containerlogs.waiting_to_start("main", "web")
        == 'container "main" in pod "web" is waiting to start: ContainerCreating'
    )
