"""SPDY/3.1 framing and header blocks: what kube-apiserver and kubectl speak to a kubelet for exec,
attach and port-forward.

Pure: bytes in, frames out, and back. A connection has one zlib stream per direction for its
header blocks, seeded with the SPDY/3 dictionary, so `HeaderCodec` keeps that state; everything
else is a function of its arguments.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01

# RST_STREAM status codes.
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
CANCEL = 5

MAX_LENGTH = (1 << 24) - 1
STREAM_MASK = 0x7FFFFFFF

_WORDS = (
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
)
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
# The zlib dictionary of SPDY/3 (draft 3, section 2.6.10.1): length-prefixed header words, then a
# run of common values.
DICTIONARY = (
    b"".join(struct.pack(">I", len(word)) + word.encode() for word in _WORDS) + _TAIL.encode()
)

Headers = dict[str, list[str]]


class ProtocolError(Exception):
    """The peer sent something that is not SPDY/3; the connection cannot go on."""


@dataclass(frozen=True)
class DataFrame:
    stream_id: int
    flags: int
    data: bytes

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


@dataclass(frozen=True)
class ControlFrame:
    """A control frame with its payload still packed; `parse_*` read the ones a server needs."""

    kind: int
    flags: int
    payload: bytes


Frame = DataFrame | ControlFrame


@dataclass(frozen=True)
class SynStream:
    stream_id: int
    associated_to: int
    fin: bool
    header_block: bytes


@dataclass
class FrameReader:
    """Cuts a byte stream into frames; feed it whatever arrived, take the whole frames out."""

    buffer: bytearray = field(default_factory=bytearray)

    def feed(self, data: bytes) -> list[Frame]:
        self.buffer += data
        frames: list[Frame] = []
        while len(self.buffer) >= 8:
            length = int.from_bytes(self.buffer[5:8], "big")
            if len(self.buffer) < 8 + length:
                break
            head = bytes(self.buffer[:8])
            payload = bytes(self.buffer[8 : 8 + length])
            del self.buffer[: 8 + length]
            frames.append(decode_frame(head, payload))
        return frames


def decode_frame(head: bytes, payload: bytes) -> Frame:
    first, flags = struct.unpack(">IB", head[:5])
    if first & 0x80000000:
        version = (first >> 16) & 0x7FFF
        if version != VERSION:
            raise ProtocolError(f"unsupported SPDY version {version}")
        return ControlFrame(first & 0xFFFF, flags, payload)
    return DataFrame(first & STREAM_MASK, flags, payload)


def control(kind: int, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_LENGTH:
        raise ValueError(f"control frame of {len(payload)} bytes exceeds {MAX_LENGTH}")
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload


def data(stream_id: int, payload: bytes, fin: bool = False) -> bytes:
    """One DATA frame; callers split payloads larger than MAX_LENGTH."""
    if len(payload) > MAX_LENGTH:
        raise ValueError(f"data frame of {len(payload)} bytes exceeds {MAX_LENGTH}")
    flags = FLAG_FIN if fin else 0
    return struct.pack(">II", stream_id & STREAM_MASK, (flags << 24) | len(payload)) + payload


def syn_reply(stream_id: int, header_block: bytes, fin: bool = False) -> bytes:
    payload = struct.pack(">I", stream_id & STREAM_MASK) + header_block
    return control(SYN_REPLY, FLAG_FIN if fin else 0, payload)


def rst_stream(stream_id: int, status: int) -> bytes:
    return control(RST_STREAM, 0, struct.pack(">II", stream_id & STREAM_MASK, status))


def ping(ping_id: int) -> bytes:
    return control(PING, 0, struct.pack(">I", ping_id))


def goaway(last_good_stream_id: int, status: int = 0) -> bytes:
    return control(GOAWAY, 0, struct.pack(">II", last_good_stream_id & STREAM_MASK, status))


def parse_syn_stream(frame: ControlFrame) -> SynStream:
    if len(frame.payload) < 10:
        raise ProtocolError("SYN_STREAM shorter than 10 bytes")
    stream_id, associated = struct.unpack(">II", frame.payload[:8])
    if stream_id & STREAM_MASK == 0:
        raise ProtocolError("SYN_STREAM for stream 0")
    return SynStream(
        stream_id & STREAM_MASK,
        associated & STREAM_MASK,
        bool(frame.flags & FLAG_FIN),
        frame.payload[10:],
    )


def parse_stream_id(frame: ControlFrame) -> int:
    """The stream a RST_STREAM, HEADERS or WINDOW_UPDATE frame is about."""
    if len(frame.payload) < 4:
        raise ProtocolError(f"control frame {frame.kind} shorter than 4 bytes")
    return int(struct.unpack(">I", frame.payload[:4])[0]) & STREAM_MASK


def parse_ping(frame: ControlFrame) -> int:
    if len(frame.payload) != 4:
        raise ProtocolError("PING payload is not 4 bytes")
    return int(struct.unpack(">I", frame.payload)[0])


def pack_headers(headers: Headers) -> bytes:
    """An uncompressed header block: names lower-cased, several values joined by NUL."""
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        raw_name = name.lower().encode()
        raw_value = "\0".join(values).encode()
        out += [struct.pack(">I", len(raw_name)), raw_name]
        out += [struct.pack(">I", len(raw_value)), raw_value]
    return b"".join(out)


def unpack_headers(block: bytes) -> Headers:
    def take(at: int) -> tuple[bytes, int]:
        if at + 4 > len(block):
            raise ProtocolError("header block truncated")
        size = int.from_bytes(block[at : at + 4], "big")
        if at + 4 + size > len(block):
            raise ProtocolError("header block truncated")
        return block[at + 4 : at + 4 + size], at + 4 + size

    if len(block) < 4:
        raise ProtocolError("header block truncated")
    count = int.from_bytes(block[:4], "big")
    headers: Headers = {}
    at = 4
    for _ in range(count):
        raw_name, at = take(at)
        raw_value, at = take(at)
        name = raw_name.decode("latin-1")
        if not name or name != name.lower():
            raise ProtocolError(f"header name {name!r} is empty or not lower-case")
        if name in headers:
            raise ProtocolError(f"header {name!r} appears twice")
        headers[name] = raw_value.decode("latin-1").split("\0")
    return headers


class HeaderCodec:
    """The two zlib streams of one connection: what the peer sent, and what we send."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=DICTIONARY)

    def decode(self, compressed: bytes) -> Headers:
        try:
            block = self._inflate.decompress(compressed)
        except zlib.error as exc:
            raise ProtocolError(f"header block does not inflate: {exc}") from exc
        return unpack_headers(block)

    def encode(self, headers: Headers) -> bytes:
        packed = pack_headers(headers)
        return self._deflate.compress(packed) + self._deflate.flush(zlib.Z_SYNC_FLUSH)


def syn_stream(stream_id: int, header_block: bytes, fin: bool = False) -> bytes:
    """A client's SYN_STREAM (no associated stream, priority 0): what a test client opens."""
    payload = struct.pack(">IIBB", stream_id & STREAM_MASK, 0, 0, 0) + header_block
    return control(SYN_STREAM, FLAG_FIN if fin else 0, payload)
