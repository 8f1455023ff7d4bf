"""`vcjob pod list` (vcctl pod list): the pods of Volcano Jobs, filtered by job or queue."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from shared.labels import JOB_NAME_KEY
from vcctl import render, render_pods
from vcctl.common import RefusedError, connection_options, open_api, output_option, reported


@click.group("pod", context_settings={"help_option_names": ["-h", "--help"]})
def pod_group() -> None:
    """List the pods of Volcano Jobs (vcctl pod)."""


@pod_group.command("list")
@click.option("-j", "-J", "--job", default="", help="Only the pods of this job.")
@click.option(
    "-q",
    "--queue",
    default="",
    help="Only the pods of the jobs of this queue (and other pods put in it by the "
    "scheduling.volcano.sh/queue-name annotation).",
)
@click.option(
    "-n",
    "--namespace",
    default=None,
    help="Namespace (default: the kubeconfig context's namespace, else `default`).",
)
@click.option("-A", "--all-namespaces", is_flag=True, help="Pods of every namespace.")
@output_option("json", "yaml")
@connection_options
@reported("list", "pod")
def list_command(
    job: str,
    queue: str,
    namespace: str | None,
    all_namespaces: bool,
    output: str | None,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """List the pods created by Volcano Jobs with vcctl's columns: Name, Ready, Status,
    Restart, Age (Namespace first with --all-namespaces)."""
    api = open_api(kubeconfig, master)
    try:
        scope = None if all_namespaces else namespace or api.namespace
        if job:
            pods = api.list_pods(scope, f"{JOB_NAME_KEY}={job}")
            if queue:
                mismatch = render_pods.queue_mismatch(api.list_jobs(scope), job, queue)
                if mismatch is not None:
                    raise RefusedError(mismatch)
        elif queue:
            pods = render_pods.pods_in_queue(api.list_pods(scope), api.list_jobs(scope), queue)
        else:
            pods = api.list_pods(scope, JOB_NAME_KEY)
    finally:
        api.close()
    if output:
        click.echo(render.dump(render.as_list(pods), output))
        return
    click.echo(render_pods.pod_table(pods, datetime.now(UTC), all_namespaces))
