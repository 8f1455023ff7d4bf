"""`make demo`: the whole system on this machine, step by step, the way a user would drive it.

Starts the local cluster (the real control plane, webhook, controller, node agent), submits a
small Job with kubectl, shows it move to Completed, submits an invalid Job and shows the webhook's
denial, then stops everything. Exits non-zero when a step fails.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
import yaml

from localcluster.running import ClusterStartError, LocalCluster, running_cluster
from localcluster.simulator.client import ApiError, Resource
from localcluster.tools import PROJECT_ROOT, tool_path

EXAMPLE = PROJECT_ROOT / "examples" / "demo-job.yaml"
COMPLETION_TIMEOUT = 120
JOBS = Resource("batch.volcano.sh", "v1alpha1", "jobs", namespaced=True)

# Two tasks with the same name, and a minAvailable larger than the job: the webhook reports both.
INVALID_JOB = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: demo-invalid
spec:
  minAvailable: 5
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: worker
              image: busybox:1.36
    - name: worker
      replicas: 1
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: worker
              image: busybox:1.36
"""


class DemoStepError(Exception):
    """A demo step did not do what it should; the message says what happened."""


def say(text: str) -> None:
    click.secho(f"\n==> {text}", bold=True)


def show(text: str) -> None:
    for line in text.rstrip().splitlines():
        click.echo(f"    {line}")


def run_kubectl(cluster: LocalCluster, *args: str, input: str | None = None) -> str:
    click.echo(f"$ kubectl {' '.join(args)}")
    result = cluster.kubectl(*args, check=False, input=input)
    if result.returncode != 0:
        show(result.stderr)
        raise DemoStepError(f"kubectl {' '.join(args)} failed")
    show(result.stdout)
    return result.stdout


def job_manifest() -> tuple[str, str, str]:
    """(source shown to the user, manifest text, job name)."""
    text = EXAMPLE.read_text()
    document: Any = yaml.safe_load(text)
    return str(EXAMPLE.relative_to(PROJECT_ROOT)), text, str(document["metadata"]["name"])


def follow_job(cluster: LocalCluster, name: str) -> None:
    say(f"Watching job {name} and its pods (kubectl get vcjob,pods) until it completes")
    deadline = time.monotonic() + COMPLETION_TIMEOUT
    last = ""
    while time.monotonic() < deadline:
        listing = cluster.kubectl("get", "vcjob,pods", "-o", "wide", check=False).stdout
        if listing != last:
            click.echo(time.strftime("%H:%M:%S"))
            show(listing)
            last = listing
        phase = cluster.kubectl(
            "get", f"vcjob/{name}", "-o", "jsonpath={.status.state.phase}", check=False
        ).stdout
        if phase in ("Completed", "Failed", "Aborted", "Terminated"):
            break
        time.sleep(1.5)
    run_kubectl(
        cluster,
        "wait",
        f"vcjob/{name}",
        "--for=jsonpath={.status.state.phase}=Completed",
        f"--timeout={COMPLETION_TIMEOUT}s",
    )


def reject_invalid_job(cluster: LocalCluster) -> None:
    say("Submitting an invalid job: two tasks named 'worker' and minAvailable 5 for 3 replicas")
    show(INVALID_JOB)
    click.echo("$ kubectl create -f -")
    result = cluster.kubectl("create", "-f", "-", check=False, input=INVALID_JOB)
    if result.returncode == 0:
        show(result.stdout)
        raise DemoStepError("the invalid job was accepted; the webhook should have denied it")
    show(result.stderr)
    # kubectl prints an Invalid error by its causes; the Status message itself names the webhook.
    click.echo("The API server's answer, as the Python client sees it:")
    client = cluster.rest_client()
    manifest = yaml.safe_load(INVALID_JOB)
    try:
        client.create(JOBS, manifest, "default")
    except ApiError as err:
        message = str(err.status.get("message", ""))
        show(f"{err.code} {err.reason}: {message}")
        if "denied the request" not in message:
            raise DemoStepError("the job was refused, but not by the admission webhook") from err
    else:
        raise DemoStepError("the invalid job was accepted on the second try")
    click.echo("The webhook rejected the job and named every problem with its field path.")


def run_demo(workdir: Path) -> None:
    say(
        "Starting the local cluster: etcd, kube-apiserver, kube-controller-manager, "
        "kube-scheduler, the webhook, the controller and the node agent"
    )
    with running_cluster(workdir, controller=True, pod_runtime="5s") as cluster:
        show(f"kubeconfig: {cluster.kubeconfig}\nlogs:       {workdir / 'logs'}")
        say("The cluster: simulated nodes, the default queue and the vcjob CRDs")
        run_kubectl(cluster, "get", "nodes,queues")
        source, manifest, name = job_manifest()
        say(f"Submitting a job from {source}")
        show(manifest)
        run_kubectl(cluster, "create", "-f", "-", input=manifest)
        follow_job(cluster, name)
        run_kubectl(cluster, "get", "vcjob,pods")
        reject_invalid_job(cluster)
        say(f"Stopping the local control plane (its logs stay in {workdir / 'logs'})")


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--dir",
    "directory",
    default=Path(".vcjob") / "demo",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for the demo cluster's kubeconfig and logs (kept afterwards for a look).",
)
def main(directory: Path) -> None:
    """Run vcjob end to end on the local control plane."""
    if tool_path("kubectl") is None:
        raise click.ClickException("kubectl is not installed; run `make tools` first")
    try:
        run_demo(directory)
    except (DemoStepError, ClusterStartError) as err:
        click.secho(f"\ndemo failed: {err}", fg="red", err=True)
        sys.exit(1)
    click.secho("\ndemo finished: the job completed and the invalid job was rejected", fg="green")


if __name__ == "__main__":
    main()
