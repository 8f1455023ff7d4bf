"""`vcjob queue create|list|get|operate|delete` (vcctl queue). Here `-n` is the queue's name."""

from __future__ import annotations

import click

from vcctl import render
from vcctl.build import build_queue, build_queue_command
from vcctl.common import UsageError, connection_options, open_api, output_option, reported

ACTIONS = {"open": "OpenQueue", "close": "CloseQueue"}


@click.group("queue", context_settings={"help_option_names": ["-h", "--help"]})
def queue_group() -> None:
    """Create, list, get, open, close, reweight and delete Queues (vcctl queue)."""


@queue_group.command("create")
@click.option("-n", "--name", default="test", show_default=True, help="Name of the queue.")
@click.option("-w", "--weight", type=int, default=1, show_default=True)
@click.option("-S", "--state", default="Open", show_default=True, help="Open or Closed.")
@connection_options
@reported("create", "queue")
def create_command(
    name: str, weight: int, state: str, kubeconfig: str | None, master: str | None
) -> None:
    """Create a queue (the controller sets its state to Open)."""
    api = open_api(kubeconfig, master)
    try:
        api.create_queue(build_queue(name, weight, state))
    finally:
        api.close()
    click.echo(f"create queue {name} successfully")


@queue_group.command("delete")
@click.option("-n", "--name", default="", help="Name of the queue.")
@connection_options
@reported("delete", "queue")
def delete_command(name: str, kubeconfig: str | None, master: str | None) -> None:
    """Delete a queue."""
    if not name:
        raise UsageError("queue name must be specified")
    api = open_api(kubeconfig, master)
    try:
        api.delete_queue(name)
    finally:
        api.close()
    click.echo(f"delete queue {name} successfully")


@queue_group.command("operate")
@click.option("-n", "--name", default="", help="Name of the queue.")
@click.option("-w", "--weight", type=int, default=0, help="New weight (with --action update).")
@click.option("-a", "--action", default="", help="open, close or update.")
@connection_options
@reported("operate", "queue")
def operate_command(
    name: str, weight: int, action: str, kubeconfig: str | None, master: str | None
) -> None:
    """Open or close a queue (through a Command), or change its weight."""
    if not name:
        raise UsageError("queue name must be specified")
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
        command = api.create_command("default", build_queue_command(queue, ACTIONS[action]))
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
@click.option("-n", "--name", default="", help="Name of the queue.")
@output_option("json", "yaml")
@connection_options
@reported("get", "queue")
def get_command(name: str, output: str | None, kubeconfig: str | None, master: str | None) -> None:
    """Show one queue."""
    if not name:
        raise UsageError("name is mandatory to get the particular queue details")
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
