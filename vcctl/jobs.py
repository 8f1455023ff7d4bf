"""`vcjob job run|list|view|why|suspend|resume|delete`, and the `vcjob suspend|resume` aliases."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import yaml

from shared.wire import WireObject, dig, metadata, spec_of, uid_of
from vcctl import render, why
from vcctl.api import VolcanoApi
from vcctl.build import build_command, build_run_job, command_refusal, parse_resources
from vcctl.common import (
    NAME_FLAGS,
    RefusedError,
    UsageError,
    connection_options,
    name_argument,
    namespace_option,
    one_name,
    open_api,
    output_option,
    reported,
)


def _name_option(func: Any) -> Any:
    return click.option("-N", "--name", default="", help="Name of the job.")(func)


@click.group("job", context_settings={"help_option_names": ["-h", "--help"]})
def job_group() -> None:
    """Run, list, view, explain (why), suspend, resume and delete Volcano Jobs (vcctl job)."""


@job_group.command("run")
@name_argument
@click.option("-i", "--image", default="busybox", show_default=True, help="Container image.")
@namespace_option
@_name_option
@click.option("-m", "--min", "min_available", type=int, default=1, show_default=True)
@click.option("-r", "--replicas", type=int, default=1, show_default=True)
@click.option("-R", "--requests", default="cpu=1000m,memory=100Mi", show_default=True)
@click.option("-L", "--limits", default="cpu=1000m,memory=100Mi", show_default=True)
@click.option("-S", "--scheduler", default="volcano", show_default=True)
@click.option("-f", "--filename", default="", help="A Job manifest (.yaml or .yml).")
@connection_options
@reported("run", "job")
def run_command(
    name_argument: str,
    image: str,
    namespace: str | None,
    name: str,
    min_available: int,
    replicas: int,
    requests: str,
    limits: str,
    scheduler: str,
    filename: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Create a Job named NAME (or --name/-N): one task from the flags, or the manifest given
    with -f. Fields the Job's schema does not know are refused, as by kubectl."""
    name = one_name(name_argument, name, NAME_FLAGS)
    if not name and not filename:
        raise UsageError("job name cannot be left blank")
    parsed_requests = parse_resources(requests, "--requests")
    parsed_limits = parse_resources(limits, "--limits")
    api = open_api(kubeconfig, master)
    try:
        target = namespace or api.namespace
        if filename:
            job = _read_manifest(filename)
        else:
            job = build_run_job(
                name=name,
                namespace=target,
                image=image,
                min_available=min_available,
                replicas=replicas,
                requests=parsed_requests,
                limits=parsed_limits,
                scheduler=scheduler,
            )
        job.setdefault("metadata", {})["namespace"] = target
        created = api.create_job(target, job)
        click.echo(f"run job {created['metadata']['name']} successfully")
    finally:
        api.close()


def _read_manifest(filename: str) -> dict[str, Any]:
    if ".yaml" not in filename and ".yml" not in filename:
        raise UsageError(f"only support yaml file, got {filename}")
    try:
        job = yaml.safe_load(Path(filename).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {filename}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{filename} is not valid YAML: {exc}") from None
    if not isinstance(job, dict) or job.get("kind") not in (None, "Job"):
        raise UsageError(f"{filename} does not hold a batch.volcano.sh/v1alpha1 Job")
    job.setdefault("apiVersion", "batch.volcano.sh/v1alpha1")
    job.setdefault("kind", "Job")
    return job


@job_group.command("list")
@namespace_option
@click.option("-A", "--all-namespaces", is_flag=True, help="Jobs of every namespace.")
@click.option("-q", "--queue", default="", help="Only jobs of this queue.")
@click.option("-S", "--scheduler", default="", help="Only jobs of this scheduler.")
@click.option("--selector", default="", help="Only jobs whose name contains this text.")
@output_option("json", "yaml", "wide")
@connection_options
@reported("list", "job")
def list_command(
    namespace: str | None,
    all_namespaces: bool,
    queue: str,
    scheduler: str,
    selector: str,
    output: str | None,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """List jobs with vcctl's columns."""
    api = open_api(kubeconfig, master)
    try:
        jobs = api.list_jobs(None if all_namespaces else (namespace or api.namespace))
    finally:
        api.close()
    jobs = [
        j
        for j in jobs
        if (not queue or spec_of(j).get("queue") == queue)
        and (not scheduler or spec_of(j).get("schedulerName") == scheduler)
        and (not selector or selector in str(metadata(j).get("name")))
    ]
    jobs.sort(key=lambda j: (j["metadata"].get("namespace", ""), j["metadata"]["name"]))
    if output in ("json", "yaml"):
        click.echo(render.dump(render.as_list(jobs), output))
        return
    click.echo(render.job_table(jobs, all_namespaces, None, wide=output == "wide"))


@job_group.command("view")
@name_argument
@namespace_option
@_name_option
@output_option("json", "yaml")
@connection_options
@reported("view", "job")
def view_command(
    name_argument: str,
    namespace: str | None,
    name: str,
    output: str | None,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Describe the job NAME (or --name/-N) and its events."""
    name = one_name(name_argument, name, NAME_FLAGS)
    if not name:
        raise UsageError(
            "job name (specified by NAME, --name or -N) is mandatory to view a particular job"
        )
    api = open_api(kubeconfig, master)
    try:
        target = namespace or api.namespace
        job = api.get_job(target, name)
        if output:
            click.echo(render.dump(job, output))
            return
        events = [
            e
            for e in api.list_events(target)
            if str(metadata(e).get("name", "")).startswith(f"{name}.")
            and dig(e, "involvedObject", "kind") in (None, "Job")
        ]
    finally:
        api.close()
    click.echo(render.job_view(job, events, datetime.now(UTC)))


@job_group.command("why")
@name_argument
@namespace_option
@_name_option
@connection_options
@reported("explain", "job")
def why_command(
    name_argument: str,
    namespace: str | None,
    name: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Why the job NAME (or --name/-N) is not running (or failed): its PodGroup, Queue, pods,
    events, and what would unblock it."""
    target_name = one_name(name_argument, name, NAME_FLAGS)
    if not target_name:
        raise UsageError("job name (NAME or --name/-N) is mandatory to explain a job")
    api = open_api(kubeconfig, master)
    try:
        target = namespace or api.namespace
        job = api.get_job(target, target_name)
        facts = (
            _dispatched_facts(api, target, job)
            if why.dispatched_by_multikueue(job)
            else _local_facts(api, target, target_name, job)
        )
    finally:
        api.close()
    click.echo(why.explain(facts))


def _dispatched_facts(api: VolcanoApi, namespace: str, job: WireObject) -> why.WhyFacts:
    """A job MultiKueue dispatches runs elsewhere: its Workload here and each worker's copy."""
    uid = uid_of(job)
    workload = api.find_job_workload(namespace, uid)
    workers: dict[str, WireObject | str] = {}
    if workload is not None:
        name_there = str(workload["metadata"]["name"])
        for cluster in why.clusters_to_ask(workload):
            workers[cluster] = api.worker_workload(cluster, namespace, name_there)
    return why.WhyFacts(job, workload=workload, worker_workloads=workers)


def _local_facts(api: VolcanoApi, namespace: str, name: str, job: WireObject) -> why.WhyFacts:
    """A job that runs here: its PodGroup (Volcano's or Kubernetes' own), Queue, pods, events."""
    uid = uid_of(job)
    expected = f"{name}-{uid}"
    groups = api.list_namespace_podgroups(namespace)
    return why.WhyFacts(
        job,
        next((g for g in groups if g["metadata"].get("name") == expected), None),
        api.find_queue(str(spec_of(job).get("queue") or "default")),
        api.list_job_pods(namespace, name),
        api.list_events(namespace),
        api.list_native_pod_groups(namespace, name, uid),
        api.find_native_composite(namespace, expected),
    )


def _issue(
    action: str, namespace: str | None, name: str, kubeconfig: str | None, master: str | None
) -> None:
    api = open_api(kubeconfig, master)
    try:
        target = namespace or api.namespace
        job = api.get_job(target, name)
        refusal = command_refusal(job, action)
        if refusal is not None:
            raise RefusedError(refusal)
        command = api.create_command(target, build_command(job, action))
    finally:
        api.close()
    click.echo(
        f"command.bus.volcano.sh/{command['metadata']['name']} created ({action} {target}/{name})"
    )


def _require(name_argument: str, name: str, verb: str) -> str:
    name = one_name(name_argument, name, NAME_FLAGS)
    if not name:
        raise UsageError(
            f"job name is mandatory to {verb} a particular job (give NAME or {NAME_FLAGS})"
        )
    return name


@job_group.command("suspend")
@name_argument
@namespace_option
@_name_option
@connection_options
@reported("suspend", "job")
def suspend_command(
    name_argument: str,
    namespace: str | None,
    name: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Suspend (abort) the job NAME (or --name/-N): its unfinished pods are deleted; `resume`
    restarts it. A job that is finished, finishing or already suspended is refused."""
    _issue("AbortJob", namespace, _require(name_argument, name, "suspend"), kubeconfig, master)


@job_group.command("resume")
@name_argument
@namespace_option
@_name_option
@connection_options
@reported("resume", "job")
def resume_command(
    name_argument: str,
    namespace: str | None,
    name: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Resume the suspended job NAME (or --name/-N) without using its retry budget."""
    _issue("ResumeJob", namespace, _require(name_argument, name, "resume"), kubeconfig, master)


@job_group.command("delete")
@name_argument
@namespace_option
@_name_option
@connection_options
@reported("delete", "job")
def delete_command(
    name_argument: str,
    namespace: str | None,
    name: str,
    kubeconfig: str | None,
    master: str | None,
) -> None:
    """Delete the job NAME (or --name/-N)."""
    name = _require(name_argument, name, "delete")
    api = open_api(kubeconfig, master)
    try:
        api.delete_job(namespace or api.namespace, name)
    finally:
        api.close()
    click.echo(f"delete job {name} successfully")


# --- `vcjob suspend JOB` / `vcjob resume JOB`: the positional form kept from earlier releases ---


def _alias(action: str, verb: str, doc: str) -> click.Command:
    @click.command(verb, help=doc)
    @name_argument
    @namespace_option
    @_name_option
    @connection_options
    @reported(verb, "job")
    def alias(
        name_argument: str,
        namespace: str | None,
        name: str,
        kubeconfig: str | None,
        master: str | None,
    ) -> None:
        _issue(action, namespace, _require(name_argument, name, verb), kubeconfig, master)

    return alias


suspend_alias = _alias(
    "AbortJob", "suspend", "Suspend (abort) a job: the same as `vcjob job suspend`."
)
resume_alias = _alias(
    "ResumeJob", "resume", "Resume a suspended job: the same as `vcjob job resume`."
)
