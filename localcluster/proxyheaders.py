"""The fault proxy's header rules, pure: what of a request goes on to kube-apiserver and what of
its response comes back to the client (RFC 9110's hop-by-hop headers go, `Host` names the
upstream, a body read whole gets its own `Content-Length`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

HOP_BY_HOP: Final = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)

Headers = list[tuple[bytes, bytes]]


def connection_tokens(headers: Iterable[tuple[bytes, bytes]]) -> set[bytes]:
    """Header names listed in `Connection`, which are hop-by-hop for this message."""
    tokens: set[bytes] = set()
    for name, value in headers:
        if name.lower() == b"connection":
            tokens.update(t.strip().lower() for t in value.split(b",") if t.strip())
    return tokens


def upstream_request_headers(
    headers: Sequence[tuple[bytes, bytes]],
    authority: bytes,
    body_length: int | None,
    upgrade: bool = False,
) -> Headers:
    """The request's headers as sent to kube-apiserver: `Host` names the upstream, hop-by-hop
    headers go (but `Connection`/`Upgrade` stay on an upgrade), and the body, read whole, gets
    its own `Content-Length` (`body_length=None`: the request had no body framing at all)."""
    dropped = HOP_BY_HOP | connection_tokens(headers) | {b"host", b"content-length", b"expect"}
    kept: Headers = [(b"Host", authority)]
    for name, value in headers:
        lower = name.lower()
        switching = upgrade and lower in (b"connection", b"upgrade")
        if switching or lower not in dropped:
            kept.append((name, value))
    if body_length is not None:
        kept.append((b"Content-Length", str(body_length).encode()))
    return kept


def downstream_response_headers(headers: Sequence[tuple[bytes, bytes]]) -> Headers:
    """kube-apiserver's response headers as sent to the client: hop-by-hop headers go, and a
    `Content-Length` stays only when the body was not chunked (the client's framing is redone)."""
    chunked = any(name.lower() == b"transfer-encoding" for name, _ in headers)
    dropped = HOP_BY_HOP | connection_tokens(headers)
    if chunked:
        dropped = dropped | {b"content-length"}
    return [(name, value) for name, value in headers if name.lower() not in dropped]


def request_has_body(headers: Sequence[tuple[bytes, bytes]]) -> bool:
    return any(name.lower() in (b"content-length", b"transfer-encoding") for name, _ in headers)


def header(headers: Sequence[tuple[bytes, bytes]], wanted: bytes) -> str:
    for name, value in headers:
        if name.lower() == wanted:
            return value.decode("latin-1")
    return ""
