"""Plugin arguments parsed like Go's flag package, with every problem reported."""

from __future__ import annotations

import pytest

from shared import pluginargs


@pytest.mark.parametrize(
    ("plugin", "args", "values"),
    [
        pytest.param("mpi", ["--master=boss"], {"master": "boss"}, id="double-dash-equals"),
        pytest.param("mpi", ["-master=boss"], {"master": "boss"}, id="single-dash"),
        pytest.param("mpi", ["--master", "boss"], {"master": "boss"}, id="separate-value"),
        pytest.param("mpi", ["--port=0x10"], {"port": 16}, id="go-int-base-prefix"),
        pytest.param("mpi", ["--port=010"], {"port": 8}, id="go-octal"),
        pytest.param(
            "svc", ["--disable-network-policy"], {"disable-network-policy": True}, id="bool"
        ),
        pytest.param(
            "svc",
            ["--publish-not-ready-addresses=F"],
            {"publish-not-ready-addresses": False},
            id="bool-F",
        ),
        pytest.param(
            "svc", ["--inject-hosts-env=false"], {"inject-hosts-env": False}, id="inject-hosts"
        ),
        pytest.param("ssh", ["--ssh-key-file-path=/x"], {"ssh-key-file-path": "/x"}, id="ssh-path"),
        pytest.param(
            "pytorch", ["--wait-master-enabled"], {"wait-master-enabled": True}, id="pytorch"
        ),
        pytest.param(
            "tensorflow", ["--ps=p", "--chief=c"], {"ps": "p", "chief": "c"}, id="tensorflow"
        ),
        pytest.param("env", [], {}, id="env-empty"),
    ],
)
def test_parses(plugin: str, args: list[str], values: dict[str, object]) -> None:
    parsed = pluginargs.parse(plugin, args)
    assert parsed.errors == []
    assert parsed.values == values


def test_defaults_when_absent() -> None:
    parsed = pluginargs.parse("mpi", [])
    assert (parsed.string("master"), parsed.string("worker"), parsed.integer("port")) == (
        "master",
        "worker",
        22,
    )
    assert pluginargs.parse("svc", []).boolean("inject-hosts-env") is True


@pytest.mark.parametrize(
    ("plugin", "args", "index", "detail"),
    [
        pytest.param("mpi", ["--nope=1"], 0, "unknown flag --nope", id="unknown"),
        pytest.param("mpi", ["boss"], 0, "positional arguments are not accepted", id="positional"),
        pytest.param("mpi", ["--master"], 0, "needs a value", id="missing-value"),
        pytest.param("mpi", ["--port=x"], 0, "invalid integer value 'x'", id="bad-int"),
        pytest.param("svc", ["--disable-network-policy=yes"], 0, "invalid boolean", id="bad-bool"),
        pytest.param("mpi", ["---master=x"], 0, "bad flag syntax", id="three-dashes"),
        pytest.param("mpi", ["--", "x"], 1, "positional arguments", id="after-terminator"),
    ],
)
def test_reports(plugin: str, args: list[str], index: int, detail: str) -> None:
    errors = pluginargs.parse(plugin, args).errors
    assert len(errors) == 1
    assert errors[0].index == index
    assert detail in errors[0].detail


def test_every_problem_and_every_later_flag_counts() -> None:
    parsed = pluginargs.parse("mpi", ["--nope", "stray", "--master=boss"])
    assert [e.index for e in parsed.errors] == [0, 1]
    assert parsed.string("master") == "boss"
