"""What kubelet's `GET /containerLogs/NAMESPACE/POD/CONTAINER` returns, decided without I/O: the
query's PodLogOptions (decoded and validated as kubelet does), which run's file to read, and which
bytes of it to send (tail, since, timestamps, limit).

A container's output is captured to one plain file per run (`N.log` for restart N), without a time
per line, so a line's time is derived: the lines already in the file when they are read carry the
file's last modification time (the latest they can have been written), lines read while following
carry the time they were read. `sinceSeconds`/`sinceTime` filter by those times.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Query = Mapping[str, Sequence[str]]

# kubelet's plain-text answers to a query it cannot use (go-restful writes the error as the body).
UNDECODABLE_QUERY = '{"message": "Unable to decode query."}'
INVALID_REQUEST = '{"message": "Invalid request."}'
LOG_STREAM_ALL = "All"


class LogRequestError(Exception):
    """A request kubelet answers with `status` and the plain-text `message`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class LogOptions:
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    since_seconds: int | None = None
    since_time: dt.datetime | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None


def _first(query: Query, key: str) -> str | None:
    values = query.get(key)
    return values[0] if values else None


def _flag(query: Query, key: str) -> bool:
    """apimachinery's query-to-bool conversion: only absent, `0` and `false` are false."""
    value = _first(query, key)
    return value is not None and value != "0" and value.lower() != "false"


def _integer(query: Query, key: str) -> int | None:
    value = _first(query, key)
    if value is None:
        return None
    try:
        return int(value, 10)
    except ValueError:
        raise LogRequestError(400, UNDECODABLE_QUERY) from None


def _moment(query: Query, key: str) -> dt.datetime | None:
    value = _first(query, key)
    if value is None or value in ("", "null"):
        return None
    try:
        moment = dt.datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        raise LogRequestError(400, UNDECODABLE_QUERY) from None
    if moment.tzinfo is None:  # RFC 3339 requires an offset
        raise LogRequestError(400, UNDECODABLE_QUERY)
    return moment


def parse_log_options(query: Query) -> LogOptions:
    """The query's PodLogOptions (v1), validated; `tail` is kubelet's older name for tailLines."""
    tail = _first(query, "tail")
    if tail:
        query = {**query, "tailLines": [tail]}
        if tail == "all":
            query = {k: v for k, v in query.items() if k != "tailLines"}
    options = LogOptions(
        follow=_flag(query, "follow"),
        previous=_flag(query, "previous"),
        timestamps=_flag(query, "timestamps"),
        since_seconds=_integer(query, "sinceSeconds"),
        since_time=_moment(query, "sinceTime"),
        tail_lines=_integer(query, "tailLines"),
        limit_bytes=_integer(query, "limitBytes"),
    )
    invalid = (
        (options.tail_lines is not None and options.tail_lines < 0)
        or (options.limit_bytes is not None and options.limit_bytes < 1)
        or (options.since_seconds is not None and options.since_time is not None)
        or (options.since_seconds is not None and options.since_seconds < 1)
    )
    if invalid:
        raise LogRequestError(422, INVALID_REQUEST)
    stream = _first(query, "stream")
    if stream is not None and stream != LOG_STREAM_ALL:
        # A container's stdout and stderr share one file here: they cannot be told apart.
        raise LogRequestError(
            400,
            f'unable to return the given log stream: "{stream}": this node keeps a '
            "container's stdout and stderr in one file",
        )
    return options


def since(options: LogOptions, now: dt.datetime) -> dt.datetime | None:
    """The earliest time a line may have, as kubelet combines sinceSeconds and sinceTime."""
    if options.since_seconds is not None:
        return now - dt.timedelta(seconds=options.since_seconds)
    return options.since_time


def run_to_read(restart_count: int, previous: bool) -> int | None:
    """The run whose file is read: the current one, or the one before it (None: there is none)."""
    if not previous:
        return restart_count
    return restart_count - 1 if restart_count > 0 else None


def previous_not_found(container: str, pod: str) -> str:
    return f'previous terminated container "{container}" in pod "{pod}" not found'


def waiting_to_start(container: str, pod: str, reason: str = "ContainerCreating") -> str:
    return f'container "{container}" in pod "{pod}" is waiting to start: {reason}'


def stamp(at: dt.datetime) -> bytes:
    """RFC 3339 with nine fractional digits, kubelet's fixed-width form, and its space."""
    utc = at.astimezone(dt.UTC)
    return f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond:06d}000Z ".encode()


def split_lines(data: bytes) -> list[bytes]:
    """Lines cut at `\\n` only, as kubelet reads them (a progress bar's `\\r` stays inside its
    line), each with its newline; a last line without one is kept as it is."""
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def render(lines: Sequence[bytes], at: dt.datetime, options: LogOptions) -> bytes:
    if not options.timestamps:
        return b"".join(lines)
    prefix = stamp(at)
    return b"".join(prefix + line for line in lines)


def existing_output(
    data: bytes, written_by: dt.datetime, options: LogOptions, now: dt.datetime
) -> bytes:
    """What the file held when it was opened, as sent: tail first (as kubelet seeks to the tail),
    then the since filter, then timestamps; `limit_bytes` is applied by `ByteBudget`."""
    lines = split_lines(data)
    if options.tail_lines is not None:
        lines = lines[max(len(lines) - options.tail_lines, 0) :]
    earliest = since(options, now)
    if earliest is not None and written_by < earliest:
        lines = []
    return render(lines, written_by, options)


@dataclass
class ByteBudget:
    """limitBytes over the whole answer, following included."""

    remaining: int | None

    def take(self, chunk: bytes) -> bytes:
        if self.remaining is None:
            return chunk
        kept = chunk[: self.remaining]
        self.remaining -= len(kept)
        return kept

    @property
    def spent(self) -> bool:
        return self.remaining is not None and self.remaining <= 0


@dataclass
class LineBuffer:
    """While following, output goes out in whole lines; a partial line waits for its end."""

    pending: bytes = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self.pending + chunk
        cut = data.rfind(b"\n") + 1
        self.pending = data[cut:]
        return split_lines(data[:cut])

    def flush(self) -> list[bytes]:
        rest, self.pending = self.pending, b""
        return [rest] if rest else []
