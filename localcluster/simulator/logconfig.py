"""Logging for the local control plane's processes: JSON lines by default, plain text on request."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

LOG_FORMATS = ("json", "text")

# Attributes every LogRecord has; anything else on a record came from `extra=` and is context.
_STANDARD_ATTRIBUTES = frozenset(
    logging.LogRecord("", 0, "", 0, "", None, None).__dict__.keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRIBUTES and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        context = {
            k: v
            for k, v in record.__dict__.items()
            if k not in _STANDARD_ATTRIBUTES and not k.startswith("_")
        }
        if context:
            text += " " + " ".join(f"{k}={v}" for k, v in context.items())
        return text


def configure_logging(log_format: str, level: int = logging.INFO) -> None:
    """Send every log record to stderr in the chosen format (replacing earlier handlers)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # httpx logs every request at INFO; that is noise for a long-running simulator.
    logging.getLogger("httpx").setLevel(logging.WARNING)
