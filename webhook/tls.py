"""Serving certificates reloaded in place: no restart and no failed request during rotation.

The reloader owns the SSLContext uvicorn serves with. Every few seconds it compares the files'
identity (resolved path, inode, size, mtime — a Kubernetes Secret volume swaps a `..data`
symlink, which changes the resolved path) and, when they changed and the new pair loads, calls
`load_cert_chain` on the live context: new handshakes get the new certificate, open connections
keep theirs.

Protocols and ciphers: TLS 1.2 and 1.3 only. On 1.2 only ECDHE key exchange with an AEAD cipher
(AES-GCM, ChaCha20-Poly1305) is offered — forward secrecy, no CBC/SHA-1/SHA-2 MAC suites (the
kube-apiserver's Go client prefers exactly these). TLS 1.3 suites are all AEAD and kept as
OpenSSL ships them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

log = logging.getLogger(__name__)

Signature = tuple[tuple[str, int, int, int], ...]

# OpenSSL cipher string for TLS 1.2 (TLS 1.3 suites are set apart and left alone).
TLS12_CIPHERS: Final = "ECDHE+AESGCM:ECDHE+CHACHA20"


def harden(context: ssl.SSLContext) -> ssl.SSLContext:
    """TLS 1.2 minimum, and on 1.2 ECDHE with AEAD ciphers only."""
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    return context


class CertReloader:
    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context: ssl.SSLContext | None = None
        self._signature: Signature | None = None
        self.reloads = 0

    def _current_signature(self) -> Signature | None:
        parts = []
        for path in (self.cert_file, self.key_file):
            try:
                stat = path.stat()
            except OSError:
                return None
            parts.append((os.path.realpath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns))
        return tuple(parts)

    def context_factory(
        self, _config: Any, default: Callable[[], ssl.SSLContext]
    ) -> ssl.SSLContext:
        """uvicorn's `ssl_context_factory`: build the context once and keep hold of it."""
        self._signature = self._current_signature()
        self.context = harden(default())
        return self.context

    def problem(self) -> str | None:
        """Why the files do not hold a serving pair (yet), or None when they load: a Secret made
        empty, to be filled by another tool, reaches a Pod as empty files."""
        for path in (self.cert_file, self.key_file):
            try:
                size = path.stat().st_size
            except OSError as exc:
                return f"{path}: {exc.strerror or exc}"
            if size == 0:
                return f"{path} is empty"
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as exc:
            return (
                f"{self.cert_file} and {self.key_file} are not a PEM certificate and its key "
                f"({exc})"
            )
        return None

    def check(self) -> bool:
        """Reload when the files changed and the new pair is valid; True when reloaded."""
        signature = self._current_signature()
        if self.context is None or signature is None or signature == self._signature:
            return False
        try:
            # Load into a scratch context first: a half-written pair must not touch the live one.
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.cert_file, self.key_file)
            self.context.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as exc:
            log.warning(
                "serving certificate not reloaded; will retry",
                extra={"cert_file": str(self.cert_file), "error": str(exc)},
            )
            return False
        self._signature = signature
        self.reloads += 1
        log.info("serving certificate reloaded", extra={"cert_file": str(self.cert_file)})
        return True

    async def loadable(self, interval: float, stop: asyncio.Event) -> bool:
        """Wait until the files hold a serving pair (True), checking every `interval` seconds,
        or until `stop` (False). What is missing is said once, and again when it changes."""
        said: str | None = None
        while (problem := self.problem()) is not None:
            if problem != said:
                log.warning(
                    "waiting for the serving certificate; the TLS listener starts once it loads",
                    extra={"problem": problem, "retry_seconds": interval},
                )
                said = problem
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval)
            except TimeoutError:
                continue
            return False
        if said is not None:
            log.info("serving certificate found", extra={"cert_file": str(self.cert_file)})
        return True

    async def run(self, interval: float, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval)
            except TimeoutError:
                self.check()
