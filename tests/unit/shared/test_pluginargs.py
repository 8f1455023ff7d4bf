"""Plugin arguments parsed like Go's flag package, with every problem reported."""

from __future__ import annotations

import pytest

from shared import plugins


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
    parsed = plugins.parse_arguments(plugin, args)
    assert parsed.errors == []
    assert parsed.values == values


def test_defaults_when_absent() -> None:
    parsed = plugins.parse_arguments("mpi", [])
    assert (parsed.string("master"), parsed.string("worker"), parsed.integer("port")) == (
        "master",
        "worker",
        22,
    )
    assert plugins.parse_arguments("svc", []).boolean("inject-hosts-env") is True


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
    errors = plugins.parse_arguments(plugin, args).errors
    assert len(errors) == 1
    assert errors[0].index == index
    assert detail in errors[0].detail


def test_every_problem_is_reported_but_values_stop_at_the_first() -> None:
    """Go's flag package stops at the first problem; what follows keeps its default."""
    parsed = plugins.parse_arguments("mpi", ["--port=2", "--nope", "stray", "--master=boss"])
    assert [e.index for e in parsed.errors] == [1, 2]
    assert parsed.string("master") == "master"
    assert parsed.integer("port") == 2


@pytest.mark.parametrize(
    ("plugin", "args", "name", "value"),
    [
        pytest.param("ssh", ["--ssh-port=2222"], "ssh-port", 2222, id="ssh-port"),
        pytest.param("pytorch", ["--wait-master-timeout", "60"], "wait-master-timeout", 60),
        pytest.param("pytorch", ["--wait-master-image=b:1"], "wait-master-image", "b:1"),
        pytest.param("ray", ["--headContainer=ray"], "headContainer", "ray", id="ray-camel"),
        pytest.param("ray", ["--dashboardPort=1"], "dashboardPort", 1, id="ray-port"),
        pytest.param("hcclrank", ["--master=m"], "master", "m", id="hcclrank"),
    ],
)
def test_volcano_flags(plugin: str, args: list[str], name: str, value: object) -> None:
    parsed = plugins.parse_arguments(plugin, args)
    assert parsed.errors == []
    assert parsed.get(name) == value


@pytest.mark.parametrize(
    ("plugin", "name", "default"),
    [
        ("ray", "port", 6379),
        ("ray", "clientPort", 10001),
        ("ray", "worker", "worker"),
        ("pytorch", "wait-master-timeout", 300),
        ("pytorch", "wait-master-image", "busybox:1.36.1"),
        ("ssh", "ssh-port", 22),
        ("hcclrank", "worker", "worker"),
    ],
)
def test_volcano_defaults(plugin: str, name: str, default: object) -> None:
    assert plugins.parse_arguments(plugin, []).get(name) == default


def test_bool_flag_followed_by_a_word_sets_true_and_stops() -> None:
    """`--inject-hosts-env false` is true in Go, and parsing stops at the word."""
    parsed = plugins.parse_arguments(
        "svc", ["--inject-hosts-env", "false", "--disable-network-policy"]
    )
    assert parsed.boolean("inject-hosts-env") is True
    assert parsed.boolean("disable-network-policy") is False
    assert "--inject-hosts-env=false" in parsed.errors[0].detail
