"""`meta.k8s.io/v1` Table output, which `kubectl get` asks for.

Built-in types get kube's usual columns (pods: NAME READY STATUS RESTARTS AGE, plus IP and NODE at
priority 1 for `-o wide`); CRDs get their `additionalPrinterColumns`, evaluated with a small
JSONPath subset; everything else gets NAME and AGE.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

from localcluster.apiserver.registry import ResourceType

NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace. It is required when creating "
    "resources, although some resources may allow a client to request the generation of an "
    "appropriate name automatically.",
    "priority": 0,
}
AGE_COLUMN = {
    "name": "Age",
    "type": "string",
    "format": "",
    "description": "CreationTimestamp is a timestamp representing the server time when this "
    "object was created.",
    "priority": 0,
}


def human_duration(seconds: float) -> str:
    """apimachinery's `duration.HumanDuration`."""
    total = int(seconds)
    if total < -1:
        return "<invalid>"
    if total < 0:
        return "0s"
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 10:
        rest = total % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = total // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> dt.datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(value: Any, now: dt.datetime) -> str:
    when = parse_time(value)
    if when is None:
        return "<unknown>"
    return human_duration((now - when).total_seconds())


_SEGMENT = re.compile(
    r"\.([A-Za-z0-9_\-/]+)|\[(\d+|\*)\]|\[\?\(@\.(\w+)\s*==\s*['\"]([^'\"]*)['\"]\)\]"
)


def evaluate_jsonpath(path: str, obj: Any) -> list[Any]:
    """A JSONPath subset: `.a.b`, `[0]`, `[*]`, `[?(@.type=="Ready")]`, with optional `{}`."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    path = path.removeprefix("$")
    values = [obj]
    position = 0
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if not match:
            return []
        position = match.end()
        name, index, filter_key, filter_value = match.groups()
        next_values: list[Any] = []
        for value in values:
            if name is not None and isinstance(value, dict) and name in value:
                next_values.append(value[name])
            elif index is not None and isinstance(value, list):
                if index == "*":
                    next_values.extend(value)
                elif int(index) < len(value):
                    next_values.append(value[int(index)])
            elif filter_key is not None and isinstance(value, list):
                next_values.extend(
                    v
                    for v in value
                    if isinstance(v, dict) and str(v.get(filter_key)) == filter_value
                )
        values = next_values
    return values


def _cell(value: Any, column_type: str, now: dt.datetime) -> Any:
    if column_type == "date":
        return age(value, now)
    if column_type == "integer" and isinstance(value, int | float):
        return int(value)
    if column_type == "number" and isinstance(value, int | float):
        return value
    if column_type == "boolean" and isinstance(value, bool):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return value if isinstance(value, str) else str(value) if value is not None else None


def _crd_columns(resource: ResourceType) -> list[dict[str, Any]]:
    columns = [dict(NAME_COLUMN)]
    if not resource.printer_columns:
        columns.append(
            {
                "name": "Age",
                "type": "date",
                "format": "",
                "description": AGE_COLUMN["description"],
                "priority": 0,
            }
        )
        return columns
    for column in resource.printer_columns:
        columns.append(
            {
                "name": column.get("name", ""),
                "type": column.get("type", "string"),
                "format": column.get("format", ""),
                "description": column.get("description", ""),
                "priority": int(column.get("priority", 0)),
            }
        )
    return columns


def _crd_row(resource: ResourceType, obj: dict[str, Any], now: dt.datetime) -> list[Any]:
    name = obj["metadata"].get("name")
    if not resource.printer_columns:
        return [name, age(obj["metadata"].get("creationTimestamp"), now)]
    cells: list[Any] = [name]
    for column in resource.printer_columns:
        found = evaluate_jsonpath(str(column.get("jsonPath", "")), obj)
        column_type = str(column.get("type", "string"))
        cells.append(_cell(found[0], column_type, now) if found else None)
    return cells


def _column(
    name: str, description: str = "", priority: int = 0, kind: str = "string"
) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "",
        "description": description,
        "priority": priority,
    }


def _pod_row(pod: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    containers = spec.get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    restarts = sum(int(s.get("restartCount") or 0) for s in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    for container_status in statuses:
        state = container_status.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            reason = state["waiting"]["reason"]
        elif "terminated" in state:
            terminated = state["terminated"]
            reason = terminated.get("reason") or (
                f"Signal:{terminated['signal']}"
                if terminated.get("signal")
                else f"ExitCode:{terminated.get('exitCode', 0)}"
            )
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return [
        pod["metadata"].get("name"),
        f"{ready}/{len(containers)}",
        reason,
        restarts,
        age(pod["metadata"].get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


def _node_row(node: dict[str, Any], now: dt.datetime) -> list[Any]:
    status = node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = (
        "Ready" if ready and ready.get("status") == "True" else "NotReady" if ready else "Unknown"
    )
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or []
    internal = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
    return [
        node["metadata"].get("name"),
        state,
        ",".join(roles) or "<none>",
        age(node["metadata"].get("creationTimestamp"), now),
        info.get("kubeletVersion") or "",
        internal or "<none>",
        "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _deployment_row(deployment: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = deployment.get("spec") or {}
    status = deployment.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        deployment["metadata"].get("name"),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(deployment["metadata"].get("creationTimestamp"), now),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in selector.items()),
    ]


def _replica_set_row(replica_set: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = replica_set.get("spec") or {}
    status = replica_set.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        replica_set["metadata"].get("name"),
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(replica_set["metadata"].get("creationTimestamp"), now),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in selector.items()),
    ]


def _namespace_row(namespace: dict[str, Any], now: dt.datetime) -> list[Any]:
    return [
        namespace["metadata"].get("name"),
        (namespace.get("status") or {}).get("phase", "Active"),
        age(namespace["metadata"].get("creationTimestamp"), now),
    ]


BUILTIN_COLUMNS: dict[tuple[str, str], tuple[list[dict[str, Any]], Any]] = {
    ("", "pods"): (
        [
            dict(NAME_COLUMN),
            _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            _column("Status", "The aggregate status of the containers in this pod."),
            _column(
                "Restarts",
                "The number of times the containers in this pod have been restarted",
                kind="string",
            ),
            dict(AGE_COLUMN),
            _column("IP", "IP address allocated to the pod.", 1),
            _column("Node", "Name of the Node this pod is assigned to.", 1),
            _column("Nominated Node", "Nominated node name for this pod.", 1),
            _column("Readiness Gates", "Pod readiness gates.", 1),
        ],
        _pod_row,
    ),
    ("", "nodes"): (
        [
            dict(NAME_COLUMN),
            _column("Status", "The status of the node"),
            _column("Roles", "The roles of the node"),
            dict(AGE_COLUMN),
            _column("Version", "Kubelet Version reported by the node."),
            _column("Internal-IP", "List of internal IPs.", 1),
            _column("External-IP", "List of external IPs.", 1),
            _column("OS-Image", "OS Image reported by the node.", 1),
            _column("Kernel-Version", "Kernel Version reported by the node.", 1),
            _column("Container-Runtime", "Container Runtime Version reported by the node.", 1),
        ],
        _node_row,
    ),
    ("", "namespaces"): (
        [dict(NAME_COLUMN), _column("Status", "The status of the namespace"), dict(AGE_COLUMN)],
        _namespace_row,
    ),
    ("apps", "deployments"): (
        [
            dict(NAME_COLUMN),
            _column("Ready", "Number of the pod with ready state"),
            _column(
                "Up-to-date",
                "Total number of non-terminated pods targeted by this deployment that have "
                "the desired template spec.",
                kind="integer",
            ),
            _column(
                "Available",
                "Total number of available pods (ready for at least minReadySeconds) "
                "targeted by this deployment.",
                kind="integer",
            ),
            dict(AGE_COLUMN),
            _column("Containers", "Names of each container in the template.", 1),
            _column("Images", "Images referenced by each container in the template.", 1),
            _column("Selector", "Label selector for pods.", 1),
        ],
        _deployment_row,
    ),
}


BUILTIN_COLUMNS[("apps", "replicasets")] = (
    [
        dict(NAME_COLUMN),
        _column("Desired", "Number of desired pods.", kind="integer"),
        _column("Current", "Number of actual replicas.", kind="integer"),
        _column("Ready", "Number of ready replicas.", kind="integer"),
        dict(AGE_COLUMN),
        _column("Containers", "Names of each container in the template.", 1),
        _column("Images", "Images referenced by each container in the template.", 1),
        _column("Selector", "Label selector for pods.", 1),
    ],
    _replica_set_row,
)


def _crd_definition_row(crd: dict[str, Any], now: dt.datetime) -> list[Any]:
    return [crd["metadata"].get("name"), crd["metadata"].get("creationTimestamp")]


BUILTIN_COLUMNS[("apiextensions.k8s.io", "customresourcedefinitions")] = (
    [
        dict(NAME_COLUMN),
        {
            "name": "Created At",
            "type": "date",
            "format": "",
            "description": AGE_COLUMN["description"],
            "priority": 0,
        },
    ],
    _crd_definition_row,
)


def _service_row(service: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = service.get("spec") or {}
    ingress = ((service.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    external = [i.get("ip") or i.get("hostname") for i in ingress] + list(
        spec.get("externalIPs") or []
    )
    if spec.get("type") == "ExternalName":
        external = [spec.get("externalName", "")]
    ports = []
    for port in spec.get("ports") or []:
        text = f"{port.get('port')}"
        if port.get("nodePort"):
            text += f":{port['nodePort']}"
        ports.append(f"{text}/{port.get('protocol', 'TCP')}")
    selector = spec.get("selector") or {}
    return [
        service["metadata"].get("name"),
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP") or "<none>",
        ",".join(e for e in external if e)
        or ("<pending>" if spec.get("type") == "LoadBalancer" else "<none>"),
        ",".join(ports) or "<none>",
        age(service["metadata"].get("creationTimestamp"), now),
        ",".join(f"{k}={v}" for k, v in selector.items()) or "<none>",
    ]


def _event_row(event: dict[str, Any], now: dt.datetime) -> list[Any]:
    involved = event.get("involvedObject") or {}
    last = (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event["metadata"].get("creationTimestamp")
    )
    first = event.get("firstTimestamp") or event.get("eventTime") or last
    source = event.get("source") or {}
    return [
        age(last, now),
        event.get("type", ""),
        event.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        str(event.get("message", "")).strip(),
        involved.get("fieldPath") or "",
        source.get("component") or event.get("reportingComponent") or "",
        age(first, now),
        event.get("count", 1),
        event["metadata"].get("name"),
    ]


BUILTIN_COLUMNS[("", "services")] = (
    [
        dict(NAME_COLUMN),
        _column("Type", "The type of the service"),
        _column("Cluster-IP", "The cluster IP of the service"),
        _column("External-IP", "The external IPs of the service"),
        _column("Port(s)", "The ports of the service"),
        dict(AGE_COLUMN),
        _column("Selector", "The label selector of the service", 1),
    ],
    _service_row,
)
BUILTIN_COLUMNS[("", "events")] = (
    [
        _column("Last Seen", "Time since the event was last seen"),
        _column("Type", "Type of the event"),
        _column("Reason", "Reason of the event"),
        _column("Object", "The object the event is about"),
        _column("Message", "Message of the event"),
        _column("Subobject", "The part of the object the event is about", 1),
        _column("Source", "The component that reported the event", 1),
        _column("First Seen", "Time since the event was first seen", 1),
        _column("Count", "How many times the event happened", 1, "integer"),
        _column("Name", "Name of the event", 1),
    ],
    _event_row,
)
BUILTIN_COLUMNS[("", "configmaps")] = (
    [dict(NAME_COLUMN), _column("Data", "Number of entries", kind="integer"), dict(AGE_COLUMN)],
    lambda cm, now: [
        cm["metadata"].get("name"),
        len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
        age(cm["metadata"].get("creationTimestamp"), now),
    ],
)
BUILTIN_COLUMNS[("", "secrets")] = (
    [
        dict(NAME_COLUMN),
        _column("Type", "The type of the secret"),
        _column("Data", "Number of entries", kind="integer"),
        dict(AGE_COLUMN),
    ],
    lambda secret, now: [
        secret["metadata"].get("name"),
        secret.get("type", "Opaque"),
        len(secret.get("data") or {}),
        age(secret["metadata"].get("creationTimestamp"), now),
    ],
)
BUILTIN_COLUMNS[("coordination.k8s.io", "leases")] = (
    [dict(NAME_COLUMN), _column("Holder", "The holder of the lease"), dict(AGE_COLUMN)],
    lambda lease, now: [
        lease["metadata"].get("name"),
        (lease.get("spec") or {}).get("holderIdentity", ""),
        age(lease["metadata"].get("creationTimestamp"), now),
    ],
)


def _template_cells(pod_template: dict[str, Any], selector: dict[str, Any]) -> list[str]:
    """The wide columns of templated workloads: containers, images, selector."""
    containers = (pod_template.get("spec") or {}).get("containers") or []
    return [
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in selector.items()),
    ]


def _job_status(status: dict[str, Any]) -> str:
    """kubectl's Job STATUS: the first true terminal or suspended condition, else Running."""
    true_types = {
        c.get("type") for c in status.get("conditions") or [] if c.get("status") == "True"
    }
    for kind in ("Complete", "Failed", "FailureTarget", "Suspended", "SuccessCriteriaMet"):
        if kind in true_types:
            return kind
    return "Running"


def _job_completions(spec: dict[str, Any], status: dict[str, Any]) -> str:
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism", 1)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_row(job: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    started = parse_time(status.get("startTime"))
    finished = parse_time(status.get("completionTime")) or now
    duration = human_duration((finished - started).total_seconds()) if started else ""
    return [
        job["metadata"].get("name"),
        _job_status(status),
        _job_completions(spec, status),
        duration,
        age(job["metadata"].get("creationTimestamp"), now),
        *_template_cells(
            spec.get("template") or {}, (spec.get("selector") or {}).get("matchLabels") or {}
        ),
    ]


def _cronjob_row(cronjob: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = cronjob.get("spec") or {}
    status = cronjob.get("status") or {}
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    last = status.get("lastScheduleTime")
    return [
        cronjob["metadata"].get("name"),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        str(bool(spec.get("suspend"))),
        len(status.get("active") or []),
        age(last, now) if last else "<none>",
        age(cronjob["metadata"].get("creationTimestamp"), now),
        *_template_cells(
            job_spec.get("template") or {},
            (job_spec.get("selector") or {}).get("matchLabels") or {},
        ),
    ]


def _replication_controller_row(rc: dict[str, Any], now: dt.datetime) -> list[Any]:
    spec = rc.get("spec") or {}
    status = rc.get("status") or {}
    return [
        rc["metadata"].get("name"),
        spec.get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(rc["metadata"].get("creationTimestamp"), now),
        *_template_cells(spec.get("template") or {}, spec.get("selector") or {}),
    ]


_TEMPLATE_COLUMNS = [
    _column("Containers", "Names of each container in the template.", 1),
    _column("Images", "Images referenced by each container in the template.", 1),
    _column("Selector", "Label selector for pods.", 1),
]
BUILTIN_COLUMNS[("batch", "jobs")] = (
    [
        dict(NAME_COLUMN),
        _column("Status", "Status of the job."),
        _column("Completions", "The completion status of the job."),
        _column("Duration", "Time required to complete the job."),
        dict(AGE_COLUMN),
        *_TEMPLATE_COLUMNS,
    ],
    _job_row,
)
BUILTIN_COLUMNS[("batch", "cronjobs")] = (
    [
        dict(NAME_COLUMN),
        _column("Schedule", "The schedule in Cron format."),
        _column("Timezone", "The time zone the job is scheduled in."),
        _column("Suspend", "Whether the CronJob is suspended.", kind="boolean"),
        _column("Active", "Number of running jobs.", kind="integer"),
        _column("Last Schedule", "When the job was last successfully scheduled."),
        dict(AGE_COLUMN),
        *_TEMPLATE_COLUMNS,
    ],
    _cronjob_row,
)
BUILTIN_COLUMNS[("", "replicationcontrollers")] = (
    [
        dict(NAME_COLUMN),
        _column("Desired", "Number of desired pods.", kind="integer"),
        _column("Current", "Number of actual replicas.", kind="integer"),
        _column("Ready", "Number of ready replicas.", kind="integer"),
        dict(AGE_COLUMN),
        *_TEMPLATE_COLUMNS,
    ],
    _replication_controller_row,
)


def partial_metadata(obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def build_table(
    resource: ResourceType,
    objects: list[dict[str, Any]],
    list_meta: dict[str, Any],
    include_object: str = "Metadata",
    headers: bool = True,
) -> dict[str, Any]:
    now = dt.datetime.now(dt.UTC)
    builtin = BUILTIN_COLUMNS.get((resource.group, resource.plural))
    if resource.crd:
        columns = _crd_columns(resource)
    elif builtin is not None:
        columns = builtin[0]
    else:
        columns = [dict(NAME_COLUMN), dict(AGE_COLUMN)]
    rows = []
    for obj in objects:
        if resource.crd:
            cells = _crd_row(resource, obj, now)
        elif builtin is not None:
            cells = builtin[1](obj, now)
        else:
            cells = [
                obj["metadata"].get("name"),
                age(obj["metadata"].get("creationTimestamp"), now),
            ]
        row: dict[str, Any] = {"cells": cells}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = partial_metadata(obj)
        rows.append(row)
    table: dict[str, Any] = {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns if headers else [],
        "rows": rows,
    }
    return table
