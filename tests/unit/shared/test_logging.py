"""JSON logs by default, text on request, uvicorn routed through the same handler."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from shared.logging import announce, configure_logging


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_with_extras() -> None:
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    logging.getLogger("webhook.test").info("job admitted", extra={"job": "ns/j", "uid": "u"})
    logging.getLogger("webhook.test").debug("hidden")
    entry = json.loads(stream.getvalue())
    assert entry["msg"] == "job admitted"
    assert (entry["level"], entry["logger"], entry["job"], entry["uid"]) == (
        "info",
        "webhook.test",
        "ns/j",
        "u",
    )
    assert entry["ts"].endswith("+00:00")
    assert len(stream.getvalue().splitlines()) == 1


def test_text_format() -> None:
    stream = io.StringIO()
    configure_logging("debug", "text", stream)
    logging.getLogger("x").debug("hello", extra={"k": 1})
    line = stream.getvalue().strip()
    assert "DEBUG" in line
    assert line.endswith("x: hello k=1")


def test_uvicorn_goes_through_the_same_handler() -> None:
    stream = io.StringIO()
    logging.getLogger("uvicorn.error").addHandler(logging.NullHandler())
    configure_logging("info", "json", stream)
    logging.getLogger("uvicorn.error").info("Started server process")
    assert json.loads(stream.getvalue())["logger"] == "uvicorn.error"
    assert logging.getLogger("uvicorn.error").handlers == []


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="json or text"):
        configure_logging("info", "xml")


def test_uvicorn_lifecycle_lines_are_written_once_per_process() -> None:
    stream = io.StringIO()
    configure_logging("info", "text", stream)
    uvicorn = logging.getLogger("uvicorn.error")
    for port in (1, 2, 3):  # a process serving three ports runs three uvicorn servers
        uvicorn.info("Started server process [%d]", 42)
        uvicorn.info("Uvicorn running on http://127.0.0.1:%d (Press CTRL+C to quit)", port)
    lines = stream.getvalue().splitlines()
    assert sum("Started server process [42]" in line for line in lines) == 1
    assert sum("Uvicorn running on" in line for line in lines) == 3
    logging.getLogger("webhook.x").info("Started server process [42]")
    assert len(stream.getvalue().splitlines()) == 5  # only uvicorn's own lines are folded


def test_an_announcement_is_written_whatever_the_level() -> None:
    stream = io.StringIO()
    configure_logging("warning", "json", stream)
    log = logging.getLogger("controller.runner")
    log.info("hidden")
    announce(log, "controller health port 1 metrics port 2", health_port=1, metrics_port=2)
    (entry,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (entry["level"], entry["msg"], entry["health_port"]) == (
        "info",
        "controller health port 1 metrics port 2",
        1,
    )
