"""One plugin set for every process: the webhook, the controller and the command line read the
registry in `shared.plugins`, so a plugin registered there is known to all of them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.job.decide.model import PlanSettings
from controller.job.decide.plugins import (
    BEHAVIOURS,
    build_plugins,
    owned_children,
    owned_memory_keys,
)
from shared import plugins
from shared.fielderrors import FieldError
from shared.models import Job
from shared.plugins import ChildObject, Flag, FlagKind, PluginCheck, PluginDescriptor
from vcctl.render import UNKNOWN_PLUGIN, job_view
from webhook.job.create import validate_create
from webhook.job.defaulting import default_job
from webhook.job.rules.job_warnings import job_warnings
from webhook.settings import Settings

Raw = dict[str, Any]


def raw_job(plugin_args: dict[str, list[str]], name: str = "job") -> Raw:
    template = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "uid": "u-1"},
        "spec": {
            "tasks": [
                {"name": "head", "replicas": 1, "template": template},
                {"name": "master", "replicas": 1, "template": template},
                {"name": "worker", "replicas": 2, "template": template},
            ],
            "plugins": plugin_args,
        },
    }


def webhook_accepts(name: str) -> bool:
    errors = validate_create(raw_job({name: []}, name=f"job-{len(name)}"), None, Settings())
    return not [e for e in errors if e.field.startswith("spec.plugins")]


def controller_knows(name: str) -> bool:
    job = Job.from_wire(default_job(raw_job({name: []}), "volcano"))
    _, unknown = build_plugins(job, PlanSettings(), {}, {})
    return name not in unknown


def vcctl_knows(name: str) -> bool:
    text = job_view(raw_job({name: []}), [], datetime.now(UTC))
    return UNKNOWN_PLUGIN not in text


def test_webhook_controller_and_vcctl_see_the_same_plugins() -> None:
    registered = set(plugins.names())
    candidates = registered | {"volcano-unknown", "Svc", "ssh2"}
    assert {n for n in candidates if webhook_accepts(n)} == registered
    assert {n for n in candidates if controller_knows(n)} == registered
    assert {n for n in candidates if vcctl_knows(n)} == registered
    # Every plugin the controller implements is a registered one.
    assert set(BEHAVIOURS) == registered


def test_the_webhook_lists_the_registered_plugins_when_it_refuses_one() -> None:
    errors = validate_create(raw_job({"nope": []}), None, Settings())
    [error] = [e for e in errors if e.field == "spec.plugins[nope]"]
    assert error.detail == "supported values: " + ", ".join(f'"{n}"' for n in plugins.names())


def _size_rule(check: PluginCheck) -> list[FieldError]:
    if check.parsed.integer("size") > len(check.task_names):
        return [FieldError.invalid(check.path, check.arguments, "--size exceeds the task count")]
    return []


GANG = PluginDescriptor(
    name="gang-test",
    flags={"size": Flag(FlagKind.INT, 1), "legacy": Flag(FlagKind.BOOL, False)},
    no_effect=frozenset({"legacy"}),
    implies=("svc",),
    validate=_size_rule,
    children=(ChildObject("ConfigMap", "-gang"),),
    memory_keys=("gangTest",),
)


@pytest.fixture
def registered() -> Iterator[PluginDescriptor]:
    plugins.register(GANG)
    try:
        yield GANG
    finally:
        plugins.unregister(GANG.name)


def test_a_registered_plugin_is_seen_everywhere(registered: PluginDescriptor) -> None:
    name = registered.name
    # webhook: admitted, its rule runs, its implied plugin is added, its flags are parsed
    assert webhook_accepts(name)
    refused = validate_create(raw_job({name: ["--size=4"]}), None, Settings())
    assert [(e.field, e.detail) for e in refused] == [
        (f"spec.plugins[{name}]", "--size exceeds the task count")
    ]
    assert default_job(raw_job({name: []}), "volcano")["spec"]["plugins"] == {name: [], "svc": []}
    assert job_warnings(raw_job({name: ["--legacy", "--nope"]})) == [
        f"spec.plugins[{name}][1]: '--nope': unknown flag --nope; supported flags: --size, "
        "--legacy; the flags from here on keep their defaults",
        f"spec.plugins[{name}][0]: '--legacy': --legacy was removed from Volcano's {name} "
        "plugin and has no effect",
    ]
    # controller: built (with no behaviour of its own), its children and memory are cleaned up
    assert controller_knows(name)
    kinds, names = owned_children("job")
    assert "ConfigMap" in kinds and "job-gang" in names
    assert "gangTest" in owned_memory_keys()
    # command line: not marked as unknown
    assert vcctl_knows(name)


def test_an_unregistered_plugin_is_unknown_again() -> None:
    assert not webhook_accepts(GANG.name)
    assert not controller_knows(GANG.name)
    assert not vcctl_knows(GANG.name)
