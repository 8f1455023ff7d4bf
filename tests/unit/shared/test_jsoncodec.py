"""orjson where it gives the standard library's value, the standard library otherwise."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared import jsoncodec


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b'{"a":[1,2.5,"x",null,true]}', id="ordinary"),
        pytest.param('{"a":"é"}', id="text"),
        pytest.param(b'{"a":123456789012345678901234567890}', id="beyond 64 bits"),
        pytest.param(b'{"a":-9223372036854775809}', id="just below int64"),
        pytest.param(b'{"a":NaN}', id="NaN, refused by orjson"),
        pytest.param(b'{"a":1e400}', id="infinite float"),
    ],
)
def test_loads_gives_the_standard_librarys_value(body: bytes | str) -> None:
    assert jsoncodec.loads(body) == json.loads(body)


def test_loads_raises_the_standard_librarys_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        jsoncodec.loads(b"{not json")


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"a": [1, 2.5, "é", None]}, id="ordinary"),
        pytest.param({"a": 2**70}, id="beyond 64 bits"),
    ],
)
def test_dumps_is_compact_json_of_the_same_value(value: Any) -> None:
    encoded = jsoncodec.dumps(value)
    assert json.loads(encoded) == value
    assert b", " not in encoded and b": " not in encoded


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(
            {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}},
            id="pod template",
        ),
        pytest.param({"a": 2**70, "b": [1.5, True, None, "é"]}, id="beyond 64 bits"),
        pytest.param({}, id="empty"),
    ],
)
def test_copy_tree_is_an_equal_copy_sharing_nothing(value: Any) -> None:
    copied = jsoncodec.copy_tree(value)
    assert copied == value
    copied.setdefault("spec", {}).setdefault("containers", []).append({"name": "added"})
    assert "added" not in json.dumps(value)
