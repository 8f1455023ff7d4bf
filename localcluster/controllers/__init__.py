"""Controllers of the local control plane, run as API clients like kube-controller-manager's.

`start_controllers(kubeconfig_path, stop)` starts the garbage collector, the namespace controller,
the Deployment and ReplicaSet controllers, the batch/v1 Job and CronJob controllers and the
endpoints controller on background threads and returns them. Each talks to the API server named by
the kubeconfig over HTTPS and lists and watches what it needs. Set `stop` to end them: the returned
threads finish within about a second; their watch threads are daemons and end with their watches
(at most ten seconds).
"""

from __future__ import annotations

import threading
from pathlib import Path

from localcluster.controllers.client import load_kubeconfig
from localcluster.controllers.cronjobs import CronJobController
from localcluster.controllers.endpoints import EndpointsController
from localcluster.controllers.gc import GarbageCollector
from localcluster.controllers.jobs import JobController
from localcluster.controllers.namespaces import NamespaceController
from localcluster.controllers.workloads.controllers import (
    DeploymentController,
    ReplicaSetController,
)

__all__ = ["start_controllers"]


def start_controllers(kubeconfig_path: Path, stop: threading.Event) -> list[threading.Thread]:
    """Start the garbage collector, the namespace controller, the workload, Job and CronJob
    controllers and the endpoints controller; return their threads."""
    access = load_kubeconfig(kubeconfig_path)
    threads: list[threading.Thread] = [
        GarbageCollector(access, stop),
        NamespaceController(access, stop),
        DeploymentController(access, stop),
        ReplicaSetController(access, stop),
        JobController(access, stop),
        CronJobController(access, stop),
        EndpointsController(access, stop),
    ]
    for thread in threads:
        thread.start()
    return threads
