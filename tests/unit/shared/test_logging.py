"""JSON logs for tools, text for a terminal (`auto`) or on request, uvicorn routed through the
same handler."""

from __future__ import annotations

import io
import json
import logging
import os
import pty
import subprocess
import sys
from collections.abc import Iterator

import pytest

from shared.logging import announce, configure_logging, resolve_log_format


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
    log = logging.getLogger("controller.job.shell.runner")
    log.info("hidden")
    announce(log, "controller health port 1 metrics port 2", health_port=1, metrics_port=2)
    (entry,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (entry["level"], entry["msg"], entry["health_port"]) == (
        "info",
        "controller health port 1 metrics port 2",
        1,
    )


@pytest.mark.parametrize(
    ("fmt", "is_terminal", "chosen"),
    [
        ("auto", True, "text"),
        ("auto", False, "json"),
        ("json", True, "json"),
        ("json", False, "json"),
        ("text", True, "text"),
        ("text", False, "text"),
    ],
)
def test_auto_is_text_on_a_terminal_and_json_elsewhere(
    fmt: str, is_terminal: bool, chosen: str
) -> None:
    assert resolve_log_format(fmt, is_terminal) == chosen


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, json or text"):
        resolve_log_format("yaml", True)


_LOG_ONE_LINE = (
    "import logging; from shared.logging import configure_logging; "
    "configure_logging('info', 'auto'); logging.getLogger('t').info('hello', extra={'k': 1})"
)


def _stderr_of_a_process(*, terminal: bool) -> str:
    """What a process that logs with the default format writes to its stderr: a pseudo-terminal
    or a pipe."""
    if not terminal:
        done = subprocess.run(
            [sys.executable, "-c", _LOG_ONE_LINE], capture_output=True, text=True, timeout=60
        )
        return done.stderr
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            [sys.executable, "-c", _LOG_ONE_LINE], stderr=follower, timeout=60, check=True
        )
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode()
    finally:
        os.close(leader)


def test_a_process_logs_text_to_a_terminal_and_json_to_a_pipe() -> None:
    on_terminal = _stderr_of_a_process(terminal=True)
    assert " INFO    t: hello k=1" in on_terminal, on_terminal
    assert not on_terminal.lstrip().startswith("{")
    entry = json.loads(_stderr_of_a_process(terminal=False))
    assert (entry["msg"], entry["k"]) == ("hello", 1)


@pytest.mark.parametrize("command", [["webhook"], ["controller"], ["local", "up"]])
def test_every_command_defaults_to_auto(command: list[str]) -> None:
    import click

    from shared.cli import main

    found: click.Command = main
    for name in command:
        assert isinstance(found, click.Group)
        with click.Context(found) as ctx:
            sub = found.get_command(ctx, name)
        assert sub is not None
        found = sub
    [option] = [p for p in found.params if p.name == "log_format"]
    assert option.default == "auto"
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == ["auto", "json", "text"]
