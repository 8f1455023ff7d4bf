"""The commands of `vcjob jobflow` and `vcjob jobtemplate` (vcctl's `create`, `list`, `get`,
`delete`, `describe`), built once for either kind: the two differ only in their kind, their words
and the table `list` and `get` print."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click

from shared.wire import WireObject
from vcctl import manifests, render, render_flows
from vcctl.api import ApiError
from vcctl.common import (
    FAILURE_EXIT,
    NAME_FLAGS,
    UsageError,
    connection_options,
    name_argument,
    namespace_option,
    one_name,
    open_api,
    output_option,
    reported,
)


@dataclass(frozen=True)
class FlowKind:
    """One flow.volcano.sh kind as the CLI shows it."""

    kind: str  # `JobFlow`: the API's kind, and vcctl's word in `Created JobFlow: ns/name`
    command: str  # `jobflow`: the command group, and the word of one-line errors
    words: str  # `jobflow` or `job template`: vcctl's words in help texts and usage errors
    table: Callable[[Sequence[WireObject], datetime], str]


def _read_file(filename: str, kind: str, *, named: bool = False) -> list[WireObject]:
    try:
        text = Path(filename).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read {filename}: {exc.strerror}") from None
    return manifests.flow_documents(text, kind, filename, named=named)


def _each_document(
    documents: Sequence[WireObject],
    namespace: str,
    act: Callable[[str, str, WireObject], str],
    failed: str,
) -> None:
    """`act(namespace, name, document)` for every document, its line on stdout; a failure is a
    line on stderr (`<failed>: ns/name: why`) and the others are still done. Exit 1 when any
    failed (vcctl exits 0 whatever happened)."""
    failures = 0
    for document in documents:
        target, name, document = manifests.with_namespace(document, namespace)
        try:
            click.echo(act(target, name, document))
        except ApiError as exc:
            click.echo(f"{failed}: {target}/{name}: {exc}", err=True)
            failures += 1
    if failures:
        raise SystemExit(FAILURE_EXIT)


def build_group(flow: FlowKind) -> click.Group:
    """The `vcjob <command>` group with its five commands."""
    kind, command, words = flow.kind, flow.command, flow.words

    @click.group(
        command,
        help=f"Create, list, get, delete and describe {kind}s (vcctl {command}).",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    def group() -> None:
        pass

    @group.command("create", help=f"Create the {kind}s of a YAML file (one per document).")
    @click.option(
        "-f",
        "--file",
        "filename",
        default="",
        help=f"The path to the YAML file containing the {words}.",
    )
    @connection_options
    @reported("create", command)
    def create(filename: str, kubeconfig: str | None, master: str | None) -> None:
        if not filename:
            raise UsageError(f"the YAML file containing the {words} must be given with -f/--file")
        documents = _read_file(filename, kind)
        api = open_api(kubeconfig, master)

        def create_one(namespace: str, name: str, document: WireObject) -> str:
            created = api.create_flow_object(kind, namespace, document)
            return f"Created {kind}: {namespace}/{created['metadata']['name']}"

        try:
            _each_document(documents, api.namespace, create_one, f"Failed to create {kind}")
        finally:
            api.close()

    @group.command("list", help=f"List {kind}s.")
    @namespace_option
    @click.option("-A", "--all-namespaces", is_flag=True, help=f"{kind}s of every namespace.")
    @output_option("json", "yaml")
    @connection_options
    @reported("list", command)
    def list_(
        namespace: str | None,
        all_namespaces: bool,
        output: str | None,
        kubeconfig: str | None,
        master: str | None,
    ) -> None:
        api = open_api(kubeconfig, master)
        try:
            items = api.list_flow_objects(
                kind, None if all_namespaces else namespace or api.namespace
            )
        finally:
            api.close()
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        if output:
            click.echo(render.dump(render.as_list(items), output))
            return
        click.echo(flow.table(items, datetime.now(UTC)))

    @group.command("get", help=f"Show the {kind} NAME (or --name/-N).")
    @name_argument
    @click.option("-N", "--name", default="", help=f"The name of the {words}.")
    @namespace_option
    @output_option("json", "yaml")
    @connection_options
    @reported("get", command)
    def get(
        name_argument: str,
        name: str,
        namespace: str | None,
        output: str | None,
        kubeconfig: str | None,
        master: str | None,
    ) -> None:
        name = one_name(name_argument, name, NAME_FLAGS)
        if not name:
            raise UsageError(
                f"name is mandatory to get the particular {words} details (give NAME or "
                f"{NAME_FLAGS})"
            )
        api = open_api(kubeconfig, master)
        try:
            item = api.get_flow_object(kind, namespace or api.namespace, name)
        finally:
            api.close()
        if output:
            click.echo(render.dump(item, output))
            return
        click.echo(flow.table([item], datetime.now(UTC)))

    @group.command(
        "delete",
        help=f"Delete the {kind} NAME (or --name/-N), or every {kind} of a YAML file (-f).",
    )
    @name_argument
    @click.option("-N", "--name", default="", help=f"The name of the {words}.")
    @namespace_option
    @click.option(
        "-f",
        "--file",
        "filename",
        default="",
        help=f"The path to the YAML file containing the {words}.",
    )
    @connection_options
    @reported("delete", command)
    def delete(
        name_argument: str,
        name: str,
        namespace: str | None,
        filename: str,
        kubeconfig: str | None,
        master: str | None,
    ) -> None:
        name = one_name(name_argument, name, NAME_FLAGS)
        if name and filename:
            raise UsageError(f"give the {words} name or a file (-f/--file), not both")
        if not name and not filename:
            raise UsageError(f"{words} name must be specified (give NAME, {NAME_FLAGS} or -f FILE)")
        documents = _read_file(filename, kind, named=True) if filename else []
        api = open_api(kubeconfig, master)

        def delete_one(target: str, target_name: str, document: WireObject) -> str:
            api.delete_flow_object(kind, target, target_name)
            return f"Deleted {kind}: {target}/{target_name}"

        try:
            target = namespace or api.namespace
            if filename:
                _each_document(documents, target, delete_one, f"Failed to delete {kind}")
                return
            line = delete_one(target, name, {})
        finally:
            api.close()
        click.echo(line)

    @group.command(
        "describe",
        help=f"Print the {kind} NAME (or --name/-N) as YAML or JSON; without a name, every "
        f"{kind} of the namespace.",
    )
    @name_argument
    @click.option("-N", "--name", default="", help=f"The name of the {words}.")
    @namespace_option
    @click.option(
        "-o",
        "--format",
        "--output",
        "output",
        type=click.Choice(["yaml", "json"]),
        default="yaml",
        show_default=True,
        help="The format of output.",
    )
    @connection_options
    @reported("describe", command)
    def describe(
        name_argument: str,
        name: str,
        namespace: str | None,
        output: str,
        kubeconfig: str | None,
        master: str | None,
    ) -> None:
        name = one_name(name_argument, name, NAME_FLAGS)
        api = open_api(kubeconfig, master)
        try:
            target = namespace or api.namespace
            if name:
                items = [api.get_flow_object(kind, target, name)]
            else:
                items = api.list_flow_objects(kind, target)
        finally:
            api.close()
        items.sort(key=lambda o: o["metadata"]["name"])
        click.echo(render_flows.describe(items, kind, output))

    return group
