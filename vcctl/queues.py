"""`vcjob queue create|list|get|operate|delete` (vcctl queue). Here `-n` is the queue's name,
which may also be given as a plain argument (`vcjob queue get NAME`)."""

from __future__ import annotations

from typing import Final

import click

from vcctl import render
from vcctl.build import COMMAND_NAMESPACE, build_queue, build_queue_command
from vcctl.common import (
    UsageError,
    connection_options,
    name_argument,
    one_name,
    open_api,
    output_option,
    reported,
)

ACTIONS = {"open": "OpenQueue", "close": "CloseQueue"}
NAME_FLAGS: Final = "--name/-n"
# vcctl's `queue create` names the queue `test` when no name is given.
DEFAULT_NAME: Final = "test"
STATES: Final = ("Open", "Closed")


def _name_option(func: click.decorators.FC) -> click.decorators.FC:
    return click.option("-n", "--name", default="", help="Name of the queue.")(func)


def _required_name(name_argument: str, name: str, message: str) -> str:
    name = one_name(name_argument, name, NAME_FLAGS)
    if not name:
        raise UsageError(f"{message} (give NAME or {NAME_FLAGS})")
    return name


@click.group("queue", context_settings={"help_option_names": ["-h", "--help"]})
def queue_group() -> None:
    """Create, list, get, open, close, reweight and delete Queues (vcctl queue)."""


@queue_group.command("create")
@name_argument
@click.option("-n", "--name", default="", help=f"Name of the queue (default: {DEFAULT_NAME}).")
@click.option("-w", "--weight", type=int, default=1, show_default=True)
@click.option(
    "-S",
    "--state",
    type=click.Choice(STATES, case_sensitive=False),
    metavar="[" + "|".join(STATES) + "]",
    default="Open",
    show_default=True,
    help="The state the queue starts in.",
)
@connection_options
@reported("create", "queue")
def create_command(
    name_argument: str,
    name: str,
    weight: int,
    state: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Create the queue NAME (or --name/-n). The API server drops the state of a new queue and
    the controller opens it, so a queue asked to start Closed is closed right after with a
    CloseQueue Command, as `vcjob queue operate -a close` does."""
    name = one_name(name_argument, name, NAME_FLAGS) or DEFAULT_NAME
    api = open_api(kubeconfig, master)
    try:
        created = api.create_queue(build_queue(name, weight, state))
        command = None
        if state == "Closed":
            command = api.create_command(
                COMMAND_NAMESPACE, build_queue_command(created, ACTIONS["close"])
            )
    finally:
        api.close()
    click.echo(f"create queue {name} successfully")
    if command is not None:
        click.echo(
            f"command.bus.volcano.sh/{command['metadata']['name']} created "
            f"({ACTIONS['close']} {name})"
        )


@queue_group.command("delete")
@name_argument
@_name_option
@connection_options
@reported("delete", "queue")
def delete_command(
    name_argument: str, name: str, kubeconfig: str | None, master: str | None
) -> None:
    """Delete the queue NAME (or --name/-n)."""
    name = _required_name(name_argument, name, "queue name must be specified")
    api = open_api(kubeconfig, master)
    try:
        api.delete_queue(name)
    finally:
        api.close()
    click.echo(f"delete queue {name} successfully")


@queue_group.command("operate")
@name_argument
@_name_option
@click.option("-w", "--weight", type=int, default=0, help="New weight (with --action update).")
@click.option("-a", "--action", default="", help="open, close or update.")
@connection_options
@reported("operate", "queue")
def operate_command(
    name_argument: str,
    name: str,
    weight: int,
    action: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Open or close the queue NAME (or --name/-n) through a Command, or change its weight."""
    name = _required_name(name_argument, name, "queue name must be specified")
    if not action:
        raise UsageError("action can not be null")
    if action not in (*ACTIONS, "update"):
        raise UsageError(f"action {action} invalid, valid actions are open, close and update")
    if action == "update" and weight <= 0:
        raise UsageError(
            f"when update queue {name}, weight must be specified, the value must be greater than 0"
        )
    api = open_api(kubeconfig, master)
    try:
        if action == "update":
            api.patch_queue(name, {"spec": {"weight": weight}})
            click.echo(f"queue {name} weight set to {weight}")
            return
        queue = api.get_queue(name)
        command = api.create_command(COMMAND_NAMESPACE, build_queue_command(queue, ACTIONS[action]))
    finally:
        api.close()
    click.echo(
        f"command.bus.volcano.sh/{command['metadata']['name']} created ({ACTIONS[action]} {name})"
    )


@queue_group.command("list")
@output_option("json", "yaml")
@connection_options
@reported("list", "queue")
def list_command(output: str | None, kubeconfig: str | None, master: str | None) -> None:
    """List queues with their PodGroup counts per phase."""
    api = open_api(kubeconfig, master)
    try:
        queues = sorted(api.list_queues(), key=lambda q: q["metadata"]["name"])
        if output:
            click.echo(render.dump(render.as_list(queues), output))
            return
        phases = render.podgroup_phases(api.list_podgroups()) if queues else {}
    finally:
        api.close()
    click.echo(render.queue_table(queues, phases))


@queue_group.command("get")
@name_argument
@_name_option
@output_option("json", "yaml")
@connection_options
@reported("get", "queue")
def get_command(
    name_argument: str,
    name: str,
    output: str | None,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Show the queue NAME (or --name/-n)."""
    name = _required_name(
        name_argument, name, "name is mandatory to get the particular queue details"
    )
    api = open_api(kubeconfig, master)
    try:
        queue = api.get_queue(name)
        if output:
            click.echo(render.dump(queue, output))
            return
        phases = render.podgroup_phases(api.list_podgroups())
    finally:
        api.close()
    click.echo(render.queue_table([queue], phases))
