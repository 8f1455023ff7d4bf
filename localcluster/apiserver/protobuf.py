"""Decode the few protobuf request bodies real clients send (Helm stores releases as Secrets).

client-go sends `application/vnd.kubernetes.protobuf` for core types when asked to, and Helm's
release storage does so for Secrets (and ConfigMaps with the configmap driver). Responses are
always JSON, which those clients accept. Only Secret, ConfigMap and DeleteOptions bodies are
understood; any other protobuf body is answered 415 so the client knows to send JSON.
"""

from __future__ import annotations

import base64
from typing import Any

from localcluster.apiserver import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

Fields = list[tuple[int, int, Any]]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Fields:
    """(field number, wire type, value) triples; length-delimited values stay bytes."""
    out: Fields = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            value = data[pos : pos + length]
            pos += length
        elif wire == 1:
            value = data[pos : pos + 8]
            pos += 8
        elif wire == 5:
            value = data[pos : pos + 4]
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _map_entry(data: bytes) -> tuple[str, bytes]:
    key = b""
    value = b""
    for number, _, raw in _fields(data):
        if number == 1:
            key = raw
        elif number == 2:
            value = raw
    return key.decode(), value


def _time(data: bytes) -> str:
    import datetime as dt

    seconds = next((v for n, _, v in _fields(data) if n == 1), 0)
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _owner_reference(data: bytes) -> dict[str, Any]:
    names = {5: "apiVersion", 1: "kind", 3: "name", 4: "uid"}
    ref: dict[str, Any] = {}
    for number, _, value in _fields(data):
        if number in names:
            ref[names[number]] = value.decode()
        elif number == 6:
            ref["controller"] = bool(value)
        elif number == 7:
            ref["blockOwnerDeletion"] = bool(value)
    return ref


def _object_meta(data: bytes) -> dict[str, Any]:
    strings = {1: "name", 2: "generateName", 3: "namespace", 5: "uid", 6: "resourceVersion"}
    meta: dict[str, Any] = {}
    for number, _, value in _fields(data):
        if number in strings:
            if value:
                meta[strings[number]] = value.decode()
        elif number in (11, 12):
            key, raw = _map_entry(value)
            meta.setdefault("labels" if number == 11 else "annotations", {})[key] = raw.decode()
        elif number == 14:
            meta.setdefault("finalizers", []).append(value.decode())
        elif number == 13:
            meta.setdefault("ownerReferences", []).append(_owner_reference(value))
        elif number == 8 and value:
            meta["creationTimestamp"] = _time(value)
    return meta


def _secret(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret", "metadata": {}}
    for number, _, value in _fields(data):
        if number == 1:
            obj["metadata"] = _object_meta(value)
        elif number == 2:
            key, raw = _map_entry(value)
            obj.setdefault("data", {})[key] = base64.b64encode(raw).decode()
        elif number == 3:
            obj["type"] = value.decode()
        elif number == 4:
            key, raw = _map_entry(value)
            obj.setdefault("stringData", {})[key] = raw.decode()
        elif number == 5:
            obj["immutable"] = bool(value)
    return obj


def _config_map(data: bytes) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
    for number, _, value in _fields(data):
        if number == 1:
            obj["metadata"] = _object_meta(value)
        elif number == 2:
            key, raw = _map_entry(value)
            obj.setdefault("data", {})[key] = raw.decode()
        elif number == 3:
            key, raw = _map_entry(value)
            obj.setdefault("binaryData", {})[key] = base64.b64encode(raw).decode()
        elif number == 4:
            obj["immutable"] = bool(value)
    return obj


def _delete_options(data: bytes) -> dict[str, Any]:
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
    for number, _, value in _fields(data):
        if number == 1:
            options["gracePeriodSeconds"] = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 2:
            names = {1: "uid", 2: "resourceVersion"}
            options["preconditions"] = {
                names[n]: v.decode() for n, _, v in _fields(value) if n in names
            }
        elif number == 3:
            options["orphanDependents"] = bool(value)
        elif number == 4:
            options["propagationPolicy"] = value.decode()
        elif number == 5:
            options.setdefault("dryRun", []).append(value.decode())
    return options


DECODERS = {
    ("v1", "Secret"): _secret,
    ("v1", "ConfigMap"): _config_map,
    ("v1", "DeleteOptions"): _delete_options,
    ("meta.k8s.io/v1", "DeleteOptions"): _delete_options,
}


def unsupported(kind: str) -> errors.StatusError:
    return errors.StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"application/json, application/yaml ({MEDIA_TYPE} only for Secret and ConfigMap, "
        f"got {kind or 'an unknown kind'})",
    )


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded Secret or ConfigMap as its JSON form."""
    if not body.startswith(MAGIC):
        raise unsupported("")
    try:
        api_version = kind = ""
        raw = b""
        for number, _, value in _fields(body[len(MAGIC) :]):
            if number == 1:
                for inner, _, text in _fields(value):
                    if inner == 1:
                        api_version = text.decode()
                    elif inner == 2:
                        kind = text.decode()
            elif number == 2:
                raw = value
        decoder = DECODERS.get((api_version, kind))
        if decoder is None:
            raise unsupported(f"{api_version}/{kind}")
        return decoder(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"invalid protobuf body: {exc}") from exc


# -- encoding: the OpenAPI v2 document kubectl asks for as protobuf ----------------------------

# The spelling kube-openapi answers with (Go's mime parser refuses the `@` of the older one).
OPENAPI_V2_MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _encode_varint(field << 3 | 2) + _encode_varint(len(payload)) + payload


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def openapi_v2_document(title: str, version: str) -> bytes:
    """A gnostic `openapi_v2.Document` with `swagger` and `info` only.

    kubectl and helm read `/openapi/v2` (always as protobuf) only for kinds the per-group v3
    documents do not describe; this server's v2 and v3 documents describe the same kinds, so for
    those kinds a real v2 document would have no schema either, and the client goes on to its
    usual "no matches for kind" answer instead of failing to parse the document.
    """
    info = _length_delimited(1, title.encode()) + _length_delimited(2, version.encode())
    return _length_delimited(1, b"2.0") + _length_delimited(2, info)
