"""Pod volumes on the node: what files each holds (pure), written the way kubelet's atomic
writer does, so a Secret or ConfigMap that changes is seen all at once by the container.

A volume's directory holds `..data` → `..<stamp>/` and one symlink per top-level entry through
`..data`; an update writes a new `..<stamp>/` and swaps `..data` with a rename.
"""

from __future__ import annotations

import base64
import datetime as dt
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from localcluster.simulator.podenv import ContainerConfigError, field_value, resource_value
from shared.wire import metadata, spec_of

# (namespace, name) → the object, or None when it does not exist.
ObjectLookup = Callable[[str, str], Mapping[str, Any] | None]
# (audience, expirationSeconds) → a ServiceAccount token bound to the pod.
TokenSource = Callable[[str, int], str]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
DATA_LINK = "..data"


class VolumeError(ValueError):
    """A volume cannot be set up (kubelet's FailedMount); the message says why."""


def _items(
    data: Mapping[str, bytes], items: list[Mapping[str, Any]] | None, what: str, optional: bool
) -> dict[str, bytes]:
    if not items:
        return dict(data)
    files = {}
    for item in items:
        key = str(item.get("key", ""))
        if key not in data:
            if optional:
                continue
            raise VolumeError(f'{what}: no key "{key}"')
        files[str(item.get("path") or key)] = data[key]
    return files


def secret_bytes(secret: Mapping[str, Any]) -> dict[str, bytes]:
    files = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    files.update({k: str(v).encode() for k, v in (secret.get("stringData") or {}).items()})
    return files


def config_map_bytes(config_map: Mapping[str, Any]) -> dict[str, bytes]:
    files = {k: str(v).encode() for k, v in (config_map.get("data") or {}).items()}
    files.update({k: base64.b64decode(v) for k, v in (config_map.get("binaryData") or {}).items()})
    return files


def _downward(pod: Mapping[str, Any], items: list[Mapping[str, Any]]) -> dict[str, bytes]:
    files = {}
    containers = {str(c.get("name")): c for c in spec_of(pod).get("containers") or []}
    for item in items:
        path = str(item.get("path", ""))
        if "fieldRef" in item:
            files[path] = field_value(pod, str(item["fieldRef"].get("fieldPath", ""))).encode()
        elif "resourceFieldRef" in item:
            ref = item["resourceFieldRef"]
            container = containers.get(str(ref.get("containerName", "")), {})
            files[path] = resource_value(container, ref, {}).encode()
    return files


def volume_files(
    pod: Mapping[str, Any],
    volume: Mapping[str, Any],
    config_maps: ObjectLookup,
    secrets: ObjectLookup,
    token: TokenSource,
) -> dict[str, bytes] | None:
    """The files of a volume; None for an emptyDir (a plain directory the pod owns)."""
    namespace = str(metadata(pod).get("namespace", "default"))
    name = str(volume.get("name", ""))
    try:
        if "emptyDir" in volume:
            return None
        if "secret" in volume:
            return _secret_source(volume["secret"], "secretName", namespace, secrets)
        if "configMap" in volume:
            return _config_map_source(volume["configMap"], namespace, config_maps)
        if "downwardAPI" in volume:
            return _downward(pod, list(volume["downwardAPI"].get("items") or []))
        if "projected" in volume:
            files: dict[str, bytes] = {}
            for source in volume["projected"].get("sources") or []:
                if "secret" in source:
                    files.update(_secret_source(source["secret"], "name", namespace, secrets))
                elif "configMap" in source:
                    files.update(_config_map_source(source["configMap"], namespace, config_maps))
                elif "downwardAPI" in source:
                    files.update(_downward(pod, list(source["downwardAPI"].get("items") or [])))
                elif "serviceAccountToken" in source:
                    spec = source["serviceAccountToken"]
                    seconds = int(spec.get("expirationSeconds") or 3607)
                    files[str(spec.get("path", "token"))] = token(
                        str(spec.get("audience") or ""), seconds
                    ).encode()
            return files
    except ContainerConfigError as err:
        raise VolumeError(f'volume "{name}": {err}') from err
    kinds = sorted(k for k in volume if k != "name")
    raise VolumeError(f'volume "{name}": {", ".join(kinds) or "its type"} is not supported')


def _secret_source(
    spec: Mapping[str, Any], field: str, namespace: str, secrets: ObjectLookup
) -> dict[str, bytes]:
    name = str(spec.get(field, ""))
    optional = bool(spec.get("optional"))
    secret = secrets(namespace, name)
    if secret is None:
        if optional:
            return {}
        raise VolumeError(f'secret "{name}" not found')
    return _items(secret_bytes(secret), spec.get("items"), f'secret "{name}"', optional)


def _config_map_source(
    spec: Mapping[str, Any], namespace: str, config_maps: ObjectLookup
) -> dict[str, bytes]:
    name = str(spec.get("name", ""))
    optional = bool(spec.get("optional"))
    config_map = config_maps(namespace, name)
    if config_map is None:
        if optional:
            return {}
        raise VolumeError(f'configmap "{name}" not found')
    return _items(config_map_bytes(config_map), spec.get("items"), f'configmap "{name}"', optional)


def service_account_volume(namespace: str) -> dict[str, Any]:
    """The projected volume the ServiceAccount admission plugin adds: a token, the cluster CA
    (ConfigMap kube-root-ca.crt) and the namespace."""
    return {
        "name": "kube-api-access",
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ]
        },
    }


def current_files(directory: Path) -> dict[str, bytes] | None:
    data = directory / DATA_LINK
    if not data.is_dir():
        return None
    files = {}
    for path in data.rglob("*"):
        if path.is_file():
            files[str(path.relative_to(data))] = path.read_bytes()
    return files


def write_atomically(directory: Path, files: Mapping[str, bytes], mode: int = 0o644) -> bool:
    """Publish `files` in `directory`; False when they are already there."""
    if current_files(directory) == dict(files):
        return False
    directory.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("..%Y_%m_%d_%H_%M_%S.%f")
    staged = directory / stamp
    staged.mkdir()
    for relative, content in files.items():
        target = staged / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        target.chmod(mode)
    previous = (directory / DATA_LINK).resolve() if (directory / DATA_LINK).exists() else None
    temporary = directory / "..data_tmp"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(stamp)
    temporary.replace(directory / DATA_LINK)
    tops = {relative.split("/", 1)[0] for relative in files}
    for top in tops:
        link = directory / top
        if not link.is_symlink():
            link.symlink_to(f"{DATA_LINK}/{top}")
    for entry in directory.iterdir():
        if entry.is_symlink() and entry.name not in tops and not entry.name.startswith(".."):
            entry.unlink()
    if previous is not None and previous != staged.resolve():
        shutil.rmtree(previous, ignore_errors=True)
    return True
