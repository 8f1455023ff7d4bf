"""Structured logs for every vcjob process: one JSON object per line, or text.

`--log-format auto` (the default of every command) writes text when stderr is a terminal, where a
person reads it, and JSON lines otherwise (a pipe, a file, a container log), where tools read it.

Fields: `ts` (UTC, RFC 3339), `level`, `logger`, `msg`, plus whatever the caller passed in
`extra=` (job, namespace, uid, admission_uid, …). uvicorn's loggers are routed through the same
handler so a process writes one format only; a process that serves several ports runs several
uvicorn servers, and their identical lifecycle lines ("Started server process [pid]") are written
once.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
import threading
from typing import Any, Final, Literal, TextIO

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD: Final = frozenset(vars(logging.LogRecord("", logging.INFO, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",  # uvicorn's ANSI-coloured copy of msg
}
_ROUTED_LOGGERS: Final = ("uvicorn", "uvicorn.error", "uvicorn.access", "kubernetes", "urllib3")
LOG_FORMATS: Final = ("json", "text")
# What `--log-format` accepts: `auto` is text on a terminal, JSON elsewhere.
LOG_FORMAT_CHOICES: Final = ("auto", *LOG_FORMATS)
# uvicorn logs its lifecycle (process started, startup complete, shutting down) on this logger,
# once per server; the per-port "Uvicorn running on …" lines differ and all pass.
_UVICORN_LIFECYCLE: Final = "uvicorn.error"


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update(_extras(record))
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        return dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extras = _extras(record)
        if extras:
            text += " " + " ".join(f"{k}={v}" for k, v in extras.items())
        return text


class OncePerProcess(logging.Filter):
    """Drops a uvicorn lifecycle line already written (the same text from the same logger)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != _UVICORN_LIFECYCLE or record.levelno > logging.INFO:
            return True
        text = record.getMessage()
        with self._lock:
            if text in self._seen:
                return False
            self._seen.add(text)
        return True


def announce(logger: logging.Logger, msg: str, **fields: Any) -> None:
    """An INFO record written whatever the configured level: what tools read from a process's
    log to find it (the ports it chose), like kube-apiserver's "Serving securely on"."""
    record = logger.makeRecord(
        logger.name, logging.INFO, "(announce)", 0, msg, (), None, extra=fields
    )
    logger.handle(record)


def resolve_log_format(fmt: str, is_terminal: bool) -> Literal["json", "text"]:
    """The format to write: `auto` is text for a terminal and JSON for anything else."""
    if fmt == "auto":
        return "text" if is_terminal else "json"
    if fmt == "json":
        return "json"
    if fmt == "text":
        return "text"
    raise ValueError(f"log format must be auto, json or text, not {fmt!r}")


def stderr_log_format(fmt: str) -> Literal["json", "text"]:
    """`resolve_log_format` for a process that logs to its stderr."""
    return resolve_log_format(fmt, _is_terminal(sys.stderr))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def configure_logging(
    level: str | int = "info",
    fmt: Literal["auto", "json", "text"] | str = "json",
    stream: TextIO | None = None,
) -> None:
    """Send every log record (ours, uvicorn's, the kubernetes client's) to one handler."""
    out = stream or sys.stderr
    chosen = resolve_log_format(fmt, _is_terminal(out))
    handler = logging.StreamHandler(out)
    handler.setFormatter(JsonFormatter() if chosen == "json" else TextFormatter())
    handler.addFilter(OncePerProcess())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper() if isinstance(level, str) else level)
    for name in _ROUTED_LOGGERS:
        routed = logging.getLogger(name)
        routed.handlers.clear()
        routed.propagate = True
        # uvicorn's logging setup may have raised levels or disabled loggers: inherit the root's.
        routed.setLevel(logging.NOTSET)
        routed.disabled = False
    # The client libraries are chatty at debug level; keep them at warning unless asked.
    if root.level > logging.DEBUG:
        for chatty in ("urllib3", "kubernetes", "httpx"):
            logging.getLogger(chatty).setLevel(logging.WARNING)
