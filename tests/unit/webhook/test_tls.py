"""The certificate reloader's view of its files: what keeps them from loading, and the wait for a
pair that is not there yet (an empty Secret that another tool fills later)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from shared import certgen
from webhook.tls import CertReloader


def pair(directory: Path) -> CertReloader:
    return CertReloader(directory / "tls.crt", directory / "tls.key")


def write_pair(directory: Path) -> None:
    bundle = certgen.issue(["127.0.0.1"])
    (directory / "tls.key").write_bytes(bundle.serving.key_pem)
    (directory / "tls.crt").write_bytes(bundle.serving.cert_pem)


def test_what_keeps_the_files_from_loading(tmp_path: Path) -> None:
    reloader = pair(tmp_path)
    assert reloader.problem() == f"{tmp_path / 'tls.crt'}: No such file or directory"
    (tmp_path / "tls.crt").write_bytes(b"")
    (tmp_path / "tls.key").write_bytes(b"")
    assert reloader.problem() == f"{tmp_path / 'tls.crt'} is empty"
    (tmp_path / "tls.crt").write_bytes(b"not a certificate")
    assert reloader.problem() == f"{tmp_path / 'tls.key'} is empty"
    (tmp_path / "tls.key").write_bytes(b"not a key")
    problem = reloader.problem()
    assert problem is not None
    assert problem.startswith(
        f"{tmp_path / 'tls.crt'} and {tmp_path / 'tls.key'} are not a PEM certificate and its key"
    )
    write_pair(tmp_path)
    assert reloader.problem() is None


def test_the_wait_ends_when_a_pair_arrives_and_says_each_problem_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "tls.crt").write_bytes(b"")
    (tmp_path / "tls.key").write_bytes(b"")
    reloader = pair(tmp_path)

    async def scenario() -> bool:
        stop = asyncio.Event()
        waiting = asyncio.create_task(reloader.loadable(0.01, stop))
        await asyncio.sleep(0.1)
        assert not waiting.done()
        write_pair(tmp_path)
        return await asyncio.wait_for(waiting, timeout=5)

    with caplog.at_level(logging.INFO, logger="webhook.tls"):
        assert asyncio.run(scenario()) is True
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "waiting for the serving certificate; the TLS listener starts once it loads",
        "serving certificate found",
    ]
    assert caplog.records[0].problem == f"{tmp_path / 'tls.crt'} is empty"  # type: ignore[attr-defined]


def test_a_stop_ends_the_wait(tmp_path: Path) -> None:
    (tmp_path / "tls.crt").write_bytes(b"")
    (tmp_path / "tls.key").write_bytes(b"")

    async def scenario() -> bool:
        stop = asyncio.Event()
        waiting = asyncio.create_task(pair(tmp_path).loadable(10, stop))
        await asyncio.sleep(0.05)
        stop.set()
        return await asyncio.wait_for(waiting, timeout=5)

    assert asyncio.run(scenario()) is False


def test_a_loadable_pair_needs_no_wait(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_pair(tmp_path)
    with caplog.at_level(logging.INFO, logger="webhook.tls"):
        assert asyncio.run(pair(tmp_path).loadable(10, asyncio.Event())) is True
    assert caplog.records == []
