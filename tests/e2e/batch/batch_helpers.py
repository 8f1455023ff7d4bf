"""Helpers for the CronJob, queue and CLI tests: console scripts, JSON reads, waiting."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from localcluster.running import LocalCluster, tools_env
from tests.support import polling

WAIT = 60.0
BIN = Path(sys.executable).parent


def script_env(cluster: LocalCluster) -> dict[str, str]:
    """KUBECONFIG set, the pinned kubectl and this venv's console scripts on PATH."""
    env = tools_env()
    env["PATH"] = f"{env['PATH']}{os.pathsep}{BIN}"
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    return env


def run_script(
    cluster: LocalCluster, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A console script (`vcjob …`, `kubectl vcjob …`) as a user would run it."""
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=60,
        env=env or script_env(cluster),
        check=False,
    )


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


wait_for = functools.partial(polling.wait_for, timeout=WAIT)


def job_manifest(name: str, queue: str = "default", replicas: int = 1) -> str:
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "minAvailable": replicas,
                "schedulerName": "volcano",
                "queue": queue,
                "tasks": [
                    {
                        "name": "worker",
                        "replicas": replicas,
                        "template": {
                            "spec": {
                                "restartPolicy": "Never",
                                "containers": [{"name": "main", "image": "busybox"}],
                            }
                        },
                    }
                ],
            },
        }
    )
