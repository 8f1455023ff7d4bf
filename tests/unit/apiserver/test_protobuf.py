"""The protobuf bodies Helm sends (Secret, DeleteOptions) decode to their JSON form."""

from __future__ import annotations

import pytest

from localcluster.apiserver import protobuf
from localcluster.apiserver.errors import StatusError


def _varint(value: int) -> bytes:
    out = b""
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out += bytes([byte | 0x80])
        else:
            return out + bytes([byte])


def _bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _entry(number: int, key: str, value: bytes) -> bytes:
    return _bytes(number, _bytes(1, key.encode()) + _bytes(2, value))


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = _bytes(1, api_version.encode()) + _bytes(2, kind.encode())
    return protobuf.MAGIC + _bytes(1, type_meta) + _bytes(2, raw)


def test_secret() -> None:
    meta = _bytes(1, b"sh.helm.release.v1.demo.v1") + _entry(11, "owner", b"helm")
    raw = (
        _bytes(1, meta) + _entry(2, "release", b"\x00\x01binary") + _bytes(3, b"helm.sh/release.v1")
    )
    secret = protobuf.decode(_envelope("v1", "Secret", raw))
    assert secret == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "sh.helm.release.v1.demo.v1", "labels": {"owner": "helm"}},
        "data": {"release": "AAFiaW5hcnk="},
        "type": "helm.sh/release.v1",
    }


def test_delete_options() -> None:
    raw = _int(1, 0) + _bytes(4, b"Background") + _bytes(2, _bytes(1, b"uid-1"))
    options = protobuf.decode(_envelope("v1", "DeleteOptions", raw))
    assert options["gracePeriodSeconds"] == 0
    assert options["propagationPolicy"] == "Background"
    assert options["preconditions"] == {"uid": "uid-1"}


def test_other_kinds_are_unsupported_media_types() -> None:
    with pytest.raises(StatusError) as raised:
        protobuf.decode(_envelope("v1", "Pod", b""))
    assert raised.value.code == 415
    with pytest.raises(StatusError) as raised:
        protobuf.decode(b"not protobuf")
    assert raised.value.code == 415
