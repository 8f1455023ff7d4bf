"""SPDY/3.1 framing and header blocks, table-tested against hand-built bytes."""

from __future__ import annotations

import hashlib
import struct
import zlib

import pytest

from localcluster.simulator import spdy


def test_the_dictionary_is_spdy3s() -> None:
    # Length and digest of the dictionary in the SPDY/3 draft (and every SPDY/3 peer).
    assert len(spdy.DICTIONARY) == 1423
    assert hashlib.sha256(spdy.DICTIONARY).hexdigest() == (
        "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02"
    )


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        (spdy.data(5, b"hi"), b"\x00\x00\x00\x05\x00\x00\x00\x02hi"),
        (spdy.data(5, b"", fin=True), b"\x00\x00\x00\x05\x01\x00\x00\x00"),
        (spdy.ping(7), b"\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x07"),
        (
            spdy.rst_stream(3, spdy.CANCEL),
            b"\x80\x03\x00\x03\x00\x00\x00\x08\x00\x00\x00\x03\x00\x00\x00\x05",
        ),
        (
            spdy.goaway(9),
            b"\x80\x03\x00\x07\x00\x00\x00\x08\x00\x00\x00\x09\x00\x00\x00\x00",
        ),
        (spdy.syn_reply(1, b"HB"), b"\x80\x03\x00\x02\x00\x00\x00\x06\x00\x00\x00\x01HB"),
    ],
)
def test_frames_encode_as_the_wire_has_them(frame: bytes, expected: bytes) -> None:
    assert frame == expected


def test_the_reader_cuts_frames_across_arbitrary_chunks() -> None:
    wire = spdy.data(1, b"abc") + spdy.ping(2) + spdy.data(3, b"", fin=True)
    reader = spdy.FrameReader()
    frames = [f for i in range(len(wire)) for f in reader.feed(wire[i : i + 1])]
    assert frames == [
        spdy.DataFrame(1, 0, b"abc"),
        spdy.ControlFrame(spdy.PING, 0, struct.pack(">I", 2)),
        spdy.DataFrame(3, spdy.FLAG_FIN, b""),
    ]
    ping, last = frames[1], frames[2]
    assert isinstance(ping, spdy.ControlFrame) and isinstance(last, spdy.DataFrame)
    assert last.fin
    assert spdy.parse_ping(ping) == 2


def test_another_spdy_version_is_a_protocol_error() -> None:
    with pytest.raises(spdy.ProtocolError, match="version 2"):
        spdy.FrameReader().feed(b"\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01")


def client_syn_stream(stream_id: int, headers: spdy.Headers, deflate: zlib._Compress) -> bytes:
    block = deflate.compress(spdy.pack_headers(headers)) + deflate.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", stream_id, 0, 0, 0) + block
    return spdy.control(spdy.SYN_STREAM, 0, payload)


def test_syn_streams_decode_with_one_zlib_stream_per_connection() -> None:
    deflate = zlib.compressobj(zdict=spdy.DICTIONARY)
    codec = spdy.HeaderCodec()
    reader = spdy.FrameReader()
    asked = [
        {"streamtype": ["error"], "port": ["8080"], "requestid": ["0"]},
        {"streamtype": ["data"], "port": ["8080"], "requestid": ["0"]},
    ]
    wire = b"".join(client_syn_stream(1 + 2 * i, h, deflate) for i, h in enumerate(asked))
    seen = []
    for frame in reader.feed(wire):
        assert isinstance(frame, spdy.ControlFrame)
        syn = spdy.parse_syn_stream(frame)
        seen.append((syn.stream_id, codec.decode(syn.header_block)))
    assert seen == [(1, asked[0]), (3, asked[1])]


def test_encoded_header_blocks_inflate_with_the_dictionary() -> None:
    codec = spdy.HeaderCodec()
    inflate = zlib.decompressobj(zdict=spdy.DICTIONARY)
    first = inflate.decompress(codec.encode({}))
    second = inflate.decompress(codec.encode({"a": ["1", "2"]}))
    assert spdy.unpack_headers(first) == {}
    assert spdy.unpack_headers(second) == {"a": ["1", "2"]}


@pytest.mark.parametrize(
    ("block", "error"),
    [
        (b"\x00\x00", "truncated"),
        (b"\x00\x00\x00\x01\x00\x00\x00\x05ab", "truncated"),
        (spdy.pack_headers({"x": ["1"]}).replace(b"x", b"X"), "not lower-case"),
        (b"\x00\x00\x00\x02" + spdy.pack_headers({"x": ["1"]})[4:] * 2, "appears twice"),
    ],
)
def test_bad_header_blocks_are_protocol_errors(block: bytes, error: str) -> None:
    with pytest.raises(spdy.ProtocolError, match=error):
        spdy.unpack_headers(block)


def test_syn_stream_round_trips_through_the_parser() -> None:
    deflate_side = spdy.HeaderCodec()
    inflate_side = spdy.HeaderCodec()
    headers = {"streamtype": ["stdout"]}
    (frame,) = spdy.FrameReader().feed(spdy.syn_stream(5, deflate_side.encode(headers), fin=True))
    assert isinstance(frame, spdy.ControlFrame)
    syn = spdy.parse_syn_stream(frame)
    assert (syn.stream_id, syn.associated_to, syn.fin) == (5, 0, True)
    assert inflate_side.decode(syn.header_block) == headers
