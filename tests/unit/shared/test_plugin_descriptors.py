"""Each plugin's descriptor: what it declares, and its own admission rule."""

from __future__ import annotations

import pytest

from shared import plugins
from shared.fielderrors import FieldError, Path
from shared.plugins import PluginCheck

# name → (flag defaults, no-effect flags, implied plugins, children of job "j", memory keys)
EXPECTED: dict[
    str, tuple[dict[str, object], set[str], tuple[str, ...], set[tuple[str, str]], set[str]]
] = {
    "env": ({}, set(), (), set(), set()),
    "svc": (
        {
            "publish-not-ready-addresses": False,
            "disable-network-policy": False,
            "inject-hosts-env": True,
        },
        set(),
        (),
        {("ConfigMap", "j-svc"), ("Service", "j"), ("NetworkPolicy", "j")},
        set(),
    ),
    "ssh": (
        {
            "ssh-key-file-path": "/root/.ssh",
            "ssh-private-key": "",
            "ssh-public-key": "",
            "ssh-port": 22,
            "no-root": False,
        },
        {"no-root"},
        (),
        {("Secret", "j-ssh")},
        {"sshKey"},
    ),
    "tensorflow": (
        {"ps": "ps", "worker": "worker", "chief": "chief", "evaluator": "evaluator", "port": 2222},
        set(),
        ("svc",),
        set(),
        set(),
    ),
    "pytorch": (
        {
            "master": "master",
            "worker": "worker",
            "port": 23456,
            "wait-master-enabled": False,
            "wait-master-timeout": 300,
            "wait-master-image": "busybox:1.36.1",
        },
        set(),
        ("svc",),
        set(),
        set(),
    ),
    "mpi": (
        {"master": "master", "worker": "worker", "port": 22},
        set(),
        ("svc", "ssh"),
        set(),
        set(),
    ),
    "ray": (
        {
            "head": "head",
            "headContainer": "head",
            "worker": "worker",
            "workerContainer": "worker",
            "port": 6379,
            "dashboardPort": 8265,
            "clientPort": 10001,
        },
        set(),
        ("svc",),
        {("Service", "j-head-svc")},
        set(),
    ),
    "hcclrank": ({"master": "master", "worker": "worker"}, set(), (), set(), set()),
}


def test_the_registry_holds_volcanos_plugins_in_its_order() -> None:
    assert plugins.names() == (
        "env",
        "svc",
        "ssh",
        "tensorflow",
        "pytorch",
        "mpi",
        "ray",
        "hcclrank",
    )


@pytest.mark.parametrize("name", list(EXPECTED))
def test_descriptor(name: str) -> None:
    defaults, no_effect, implies, children, memory = EXPECTED[name]
    descriptor = plugins.get(name)
    assert descriptor is not None
    assert {flag: spec.default for flag, spec in descriptor.flags.items()} == defaults
    assert set(descriptor.no_effect) == no_effect
    assert no_effect <= set(descriptor.flags)
    assert descriptor.implies == implies
    assert {(c.kind, c.name("j")) for c in descriptor.children} == children
    assert set(descriptor.memory_keys) == memory
    assert plugins.parse_arguments(name, []).values == {}
    for flag, default in defaults.items():
        assert plugins.parse_arguments(name, []).get(flag) == default


WHERE = Path.of("spec", "plugins").key("x")


def _check(name: str, arguments: list[str], tasks: set[str]) -> list[FieldError]:
    descriptor = plugins.get(name)
    assert descriptor is not None
    parsed = plugins.parse_arguments(name, arguments)
    return descriptor.validate(PluginCheck(arguments, parsed, frozenset(tasks), WHERE))


@pytest.mark.parametrize(
    ("name", "arguments", "tasks", "details"),
    [
        pytest.param("env", [], set(), [], id="env-no-rule"),
        pytest.param("svc", ["--disable-network-policy"], set(), [], id="svc-no-rule"),
        pytest.param("ssh", ["--ssh-port=70000"], set(), [], id="ssh-port-not-checked"),
        pytest.param("hcclrank", ["--master=nope"], set(), [], id="hcclrank-no-task-rule"),
        pytest.param("tensorflow", ["--port=1"], set(), [], id="tensorflow-port-ok"),
        pytest.param(
            "tensorflow",
            ["--port=0"],
            set(),
            ["--port must be between 1 and 65535"],
            id="tensorflow-port-0",
        ),
        pytest.param(
            "pytorch",
            ["--port=65536"],
            set(),
            ["--port must be between 1 and 65535"],
            id="pytorch-port-high",
        ),
        pytest.param("mpi", [], {"master"}, [], id="mpi-master-exists"),
        pytest.param(
            "mpi",
            ["--master=boss", "--port=0"],
            {"master"},
            [
                "--port must be between 1 and 65535",
                'the mpi master task "boss" does not exist in spec.tasks '
                "(set it with --master=<task>)",
            ],
            id="mpi-port-then-master",
        ),
        pytest.param("ray", [], {"head"}, [], id="ray-head-exists"),
        pytest.param(
            "ray",
            ["--dashboardPort=0", "--clientPort=99999", "--port=0"],
            {"worker"},
            [
                "--port must be between 1 and 65535",
                'the ray head task "head" does not exist in spec.tasks (set it with --head=<task>)',
                "--dashboardPort must be between 1 and 65535",
                "--clientPort must be between 1 and 65535",
            ],
            id="ray-every-rule-in-order",
        ),
    ],
)
def test_validate(name: str, arguments: list[str], tasks: set[str], details: list[str]) -> None:
    errors = _check(name, arguments, tasks)
    assert [e.detail for e in errors] == details
    assert all(e.field == str(WHERE) for e in errors)
    assert all(e.value == arguments for e in errors)


def test_register_refuses_a_second_plugin_of_a_name() -> None:
    svc = plugins.get("svc")
    assert svc is not None
    with pytest.raises(ValueError, match="already registered"):
        plugins.register(svc)


def test_register_refuses_an_implied_plugin_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="implies unknown plugins"):
        plugins.register(plugins.PluginDescriptor(name="lonely", implies=("nowhere",)))
    assert plugins.get("lonely") is None
