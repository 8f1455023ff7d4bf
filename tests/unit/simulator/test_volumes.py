"""Volume contents and the atomic writer."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from localcluster.simulator.volumes import (
    VolumeError,
    current_files,
    service_account_volume,
    volume_files,
    write_atomically,
)

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"containers": []}}
OBJECTS: dict[tuple[str, str], dict[str, Any]] = {
    ("ns", "s"): {"data": {"tls.crt": base64.b64encode(b"CERT").decode()}},
    ("ns", "cm"): {"data": {"a": "1", "b": "2"}},
    ("ns", "kube-root-ca.crt"): {"data": {"ca.crt": "CA"}},
}


def lookup(namespace: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((namespace, name))


def token(audience: str, seconds: int) -> str:
    return f"token-for-{audience or 'api'}-{seconds}"


def files(volume: dict[str, Any]) -> dict[str, bytes] | None:
    return volume_files(POD, volume, lookup, lookup, token)


@pytest.mark.parametrize(
    ("volume", "expected"),
    [
        ({"name": "v", "emptyDir": {}}, None),
        ({"name": "v", "secret": {"secretName": "s"}}, {"tls.crt": b"CERT"}),
        (
            {"name": "v", "configMap": {"name": "cm", "items": [{"key": "b", "path": "x/b"}]}},
            {"x/b": b"2"},
        ),
        (
            {
                "name": "v",
                "downwardAPI": {
                    "items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]
                },
            },
            {"n": b"p"},
        ),
        ({"name": "v", "secret": {"secretName": "gone", "optional": True}}, {}),
        (
            service_account_volume("ns"),
            {"token": b"token-for-api-3607", "ca.crt": b"CA", "namespace": b"ns"},
        ),
        (
            {
                "name": "v",
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "audience": "vault",
                                "expirationSeconds": 600,
                                "path": "t",
                            }
                        }
                    ]
                },
            },
            {"t": b"token-for-vault-600"},
        ),
    ],
)
def test_volume_files(volume: dict[str, Any], expected: dict[str, bytes] | None) -> None:
    assert files(volume) == expected


@pytest.mark.parametrize(
    "volume",
    [
        {"name": "v", "secret": {"secretName": "gone"}},
        {"name": "v", "configMap": {"name": "cm", "items": [{"key": "zz", "path": "z"}]}},
        {"name": "v", "hostPath": {"path": "/etc"}},
    ],
)
def test_volume_errors(volume: dict[str, Any]) -> None:
    with pytest.raises(VolumeError, match=r'volume "v"|secret "gone"|no key'):
        files(volume)


def test_atomic_writer_swaps_the_whole_set(tmp_path: Path) -> None:
    target = tmp_path / "vol"
    assert write_atomically(target, {"a": b"1", "d/b": b"2"})
    assert (target / "a").read_bytes() == b"1" and (target / "d" / "b").read_bytes() == b"2"
    assert not write_atomically(target, {"a": b"1", "d/b": b"2"})
    assert write_atomically(target, {"a": b"3"})
    assert current_files(target) == {"a": b"3"}
    assert not (target / "d").exists()
    assert len([p for p in target.iterdir() if p.name.startswith("..2")]) == 1
