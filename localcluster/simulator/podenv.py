"""A container's environment, as kubelet builds it: the in-cluster service variables, `envFrom`
(ConfigMaps and Secrets, with prefixes), then `env` (`value` with `$(VAR)` references, or
`valueFrom` a ConfigMap or Secret key, a field of the pod, or a resource of the container)."""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from shared import quantity
from shared.wire import metadata, spec_of, status_of

# (namespace, name) → the object's data (Secret values already decoded), or None if absent.
DataLookup = Callable[[str, str], Mapping[str, str] | None]

KIND_NAMES = {"configmap": "ConfigMap", "secret": "Secret"}
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class ContainerConfigError(ValueError):
    """kubelet's CreateContainerConfigError: the container cannot start; the message says why."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """`$(VAR)` becomes VAR's value when VAR is defined, `$$` becomes `$`, as in kube."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REFERENCE.sub(substitute, text)


def secret_data(secret: Mapping[str, Any]) -> dict[str, str]:
    data = {
        k: base64.b64decode(v).decode(errors="replace")
        for k, v in (secret.get("data") or {}).items()
    }
    data.update({k: str(v) for k, v in (secret.get("stringData") or {}).items()})
    return data


def service_environment(api_host: str, api_port: int) -> dict[str, str]:
    """What every pod sees of the `kubernetes` Service in `default`."""
    port = str(api_port)
    url = f"tcp://{api_host}:{port}"
    return {
        "KUBERNETES_SERVICE_HOST": api_host,
        "KUBERNETES_SERVICE_PORT": port,
        "KUBERNETES_SERVICE_PORT_HTTPS": port,
        "KUBERNETES_PORT": url,
        "KUBERNETES_PORT_443_TCP": url,
        "KUBERNETES_PORT_443_TCP_PROTO": "tcp",
        "KUBERNETES_PORT_443_TCP_PORT": port,
        "KUBERNETES_PORT_443_TCP_ADDR": api_host,
    }


_FIELD = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def field_value(pod: Mapping[str, Any], path: str) -> str:
    meta: Mapping[str, Any] = metadata(pod)
    spec, status = spec_of(pod), status_of(pod)
    keyed = _FIELD.match(path)
    if keyed:
        return str((meta.get(keyed.group(1)) or {}).get(keyed.group(2), ""))
    simple: dict[str, Any] = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.hostIP": status.get("hostIP"),
        "status.podIP": status.get("podIP"),
        "status.hostIPs": ",".join(i.get("ip", "") for i in status.get("hostIPs") or []),
        "status.podIPs": ",".join(i.get("ip", "") for i in status.get("podIPs") or []),
    }
    if path in ("metadata.labels", "metadata.annotations"):
        values = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
    if path not in simple:
        raise ContainerConfigError(f'unsupported fieldRef fieldPath "{path}"')
    return str(simple[path] or "")


def resource_value(
    container: Mapping[str, Any], ref: Mapping[str, Any], allocatable: Mapping[str, str]
) -> str:
    """A `resourceFieldRef`: the limit (or request), else the node's allocatable, over the
    divisor and rounded up, as kubelet reports it."""
    resource = str(ref.get("resource", ""))
    kind, _, name = resource.partition(".")
    if kind not in ("limits", "requests") or not name:
        raise ContainerConfigError(f'unsupported resourceFieldRef resource "{resource}"')
    resources = container.get("resources") or {}
    raw = (resources.get(kind) or {}).get(name)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(name)
    if raw is None:
        raw = allocatable.get(name, "0")
    value = quantity.try_parse(str(raw))
    divisor = quantity.try_parse(str(ref.get("divisor") or "1"))
    if value is None or divisor is None or divisor == 0:
        raise ContainerConfigError(
            f'resourceFieldRef {resource}: cannot divide "{raw}" by its divisor'
        )
    return str(math.ceil(value / divisor))


def _key_ref(ref: Mapping[str, Any], namespace: str, lookup: DataLookup, kind: str) -> str | None:
    name = str(ref.get("name", ""))
    key = str(ref.get("key", ""))
    optional = bool(ref.get("optional"))
    data = lookup(namespace, name)
    if data is None:
        if optional:
            return None
        raise ContainerConfigError(f'{kind} "{name}" not found')
    if key not in data:
        if optional:
            return None
        raise ContainerConfigError(
            f"couldn't find key {key} in {KIND_NAMES[kind]} {namespace}/{name}"
        )
    return data[key]


def container_environment(
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    config_maps: DataLookup,
    secrets: DataLookup,
    base: Mapping[str, str],
    allocatable: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of `container`; raises ContainerConfigError when it cannot be built."""
    namespace = str(metadata(pod).get("namespace", "default"))
    env: dict[str, str] = dict(base)
    for source in container.get("envFrom") or []:
        prefix = str(source.get("prefix") or "")
        for kind, lookup, field in (
            ("configmap", config_maps, "configMapRef"),
            ("secret", secrets, "secretRef"),
        ):
            ref = source.get(field)
            if not ref:
                continue
            data = lookup(namespace, str(ref.get("name", "")))
            if data is None:
                if ref.get("optional"):
                    continue
                raise ContainerConfigError(f'{kind} "{ref.get("name", "")}" not found')
            env.update({f"{prefix}{k}": v for k, v in data.items()})
    for variable in container.get("env") or []:
        name = str(variable.get("name", ""))
        if "valueFrom" not in variable:
            env[name] = expand(str(variable.get("value", "")), env)
            continue
        source = variable["valueFrom"] or {}
        value: str | None
        if "configMapKeyRef" in source:
            value = _key_ref(source["configMapKeyRef"], namespace, config_maps, "configmap")
        elif "secretKeyRef" in source:
            value = _key_ref(source["secretKeyRef"], namespace, secrets, "secret")
        elif "fieldRef" in source:
            value = field_value(pod, str(source["fieldRef"].get("fieldPath", "")))
        elif "resourceFieldRef" in source:
            value = resource_value(container, source["resourceFieldRef"], allocatable or {})
        else:
            raise ContainerConfigError(f"env {name}: valueFrom names no source")
        if value is not None:
            env[name] = value
    return env
