"""Pod template validation: the Kubernetes PodTemplateSpec schema (`shared.kubeschema`) for
types, required fields and quantities, plus the semantic pod checks of admission.md on top; and
the same schema check for a volume's PersistentVolumeClaimSpec.

The schema checks refuse what the CRD's schema refuses (it is generated from the same
definitions, `shared.crdgen`), quantities included (the CRD's quantity pattern, and whole numbers
only: a CRD takes a fraction only as a string), so that the webhook can name every problem of an
object in one answer before the API server's schema check would name only its own.

Pure: the schema data ships inside the package and is read once.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from functools import cache
from typing import Any, Final

from shared import kubeschema, names, podresources, quantity
from shared.fielderrors import FieldError, Path
from webhook import memo

RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
# Fields whose keys are free-form map keys, rendered as `limits[cpu]` rather than `limits.cpu`.
MAP_FIELDS: Final = frozenset(
    {"labels", "annotations", "nodeSelector", "limits", "requests", "overhead", "data"}
)
CONTAINER_LISTS: Final = ("initContainers", "containers")
# First part of the memo keys of template problems (`validate_template`).
MEMO_TAG: Final = b"template"
# The CRD's quantity pattern (controller-gen's, `shared.kubeschema.QUANTITY_SCHEMA`), matched as
# kube-apiserver matches it: the whole string.
QUANTITY_PATTERN: Final = re.compile(str(kubeschema.QUANTITY_SCHEMA["pattern"]))
NOT_A_QUANTITY: Final = "must be a quantity such as 500m, 2 or 1Gi"
FRACTION_NOT_QUOTED: Final = (
    'must be an integer or a string: write a fraction as a string, such as "0.5" or 500m'
)


def warm_up() -> None:
    """Load and compile the schemas now rather than on the first request."""
    _template_node()
    _claim_node()


def quantity_problem(value: Any) -> str | None:
    """Why `value` is not a quantity the CRD schema accepts (None when it is one): an integer, or
    a string that matches the quantity pattern. A fraction that is not a string (`cpu: 0.5` in
    YAML) is a Pod's quantity, but a CRD's int-or-string takes it only quoted."""
    if isinstance(value, bool):
        return NOT_A_QUANTITY
    if isinstance(value, int):
        return None
    if isinstance(value, float):
        return None if value.is_integer() else FRACTION_NOT_QUOTED
    if isinstance(value, str) and QUANTITY_PATTERN.fullmatch(value):
        return None
    return NOT_A_QUANTITY


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _short(value: Any) -> Any:
    if isinstance(value, dict):
        return "<object>"
    if isinstance(value, list):
        return "<list>"
    return value


# A field path below the template as a linked list: None, or (parent, key or index).
Trail = tuple[Any, str | int] | None
Found = list[tuple[Trail, str, Any, Any]]

_PY_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "object": (dict,),
    "array": (list,),
    "boolean": (),
    "null": (),
}


class _Node:
    """One schema node, compiled once: what the walker needs without dictionary lookups."""

    __slots__ = (
        "accepts_bool",
        "any_type",
        "enum",
        "extra",
        "integral_floats",
        "items",
        "kinds",
        "nullable",
        "one_of",
        "properties",
        "py_types",
        "quantity",
        "required",
    )

    def __init__(self) -> None:
        self.any_type = True
        self.kinds: tuple[str, ...] = ()
        self.py_types: frozenset[type] = frozenset()
        self.accepts_bool = False
        self.integral_floats = False
        self.nullable = True
        self.required: tuple[str, ...] = ()
        self.properties: dict[str, _Node] = {}
        self.extra: _Node | None = None
        self.items: _Node | None = None
        self.enum: list[Any] | None = None
        self.one_of: tuple[_Node, ...] | None = None
        self.quantity = False

    def accepts(self, value: Any) -> bool:
        if self.any_type:
            return True
        if value is None:
            return self.nullable
        kind = type(value)
        if kind is bool:
            return self.accepts_bool
        if kind in self.py_types:
            return True
        return self.integral_floats and kind is float and value.is_integer()


class _Compiler:
    def __init__(self, definitions: dict[str, Any]) -> None:
        self._definitions = definitions
        self._by_name: dict[str, _Node] = {}

    def compile(self, schema: dict[str, Any]) -> _Node:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            name = ref.rsplit("/", 1)[-1]
            node = self._by_name.get(name)
            if node is None:
                node = self._by_name[name] = _Node()
                self._fill(node, self._definitions[name])
                node.quantity = name == kubeschema.QUANTITY
            return node
        node = _Node()
        self._fill(node, schema)
        return node

    def _fill(self, node: _Node, schema: dict[str, Any]) -> None:
        kinds = schema.get("type")
        if kinds is not None:
            node.kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds)
            node.any_type = False
            node.nullable = "null" in node.kinds
            node.accepts_bool = "boolean" in node.kinds
            node.integral_floats = "integer" in node.kinds
            node.py_types = frozenset(t for k in node.kinds for t in _PY_TYPES.get(k, ()))
        node.required = tuple(schema.get("required", ()))
        node.properties = {k: self.compile(v) for k, v in schema.get("properties", {}).items()}
        extra = schema.get("additionalProperties")
        node.extra = self.compile(extra) if isinstance(extra, dict) else None
        items = schema.get("items")
        node.items = self.compile(items) if isinstance(items, dict) else None
        node.enum = schema.get("enum")
        options = schema.get("oneOf")
        node.one_of = tuple(self.compile(o) for o in options) if options else None


@cache
def _template_node() -> _Node:
    return _Compiler(kubeschema.load_definitions()).compile(
        kubeschema.ref(kubeschema.POD_TEMPLATE_SPEC)
    )


@cache
def _claim_node() -> _Node:
    return _Compiler(kubeschema.load_definitions()).compile(kubeschema.ref(kubeschema.PVC_SPEC))


def _walk(node: _Node, value: Any, trail: Trail, out: Found) -> None:
    """Check `value` against the compiled schema, walking only the fields present. `trail` is a
    linked list (parent, segment) below the template; paths are spelled out only on errors."""
    if not node.accepts(value):
        wanted = " or ".join(k for k in node.kinds if k != "null")
        out.append((trail, "invalid", value, f"must be of type {wanted}, not {_json_type(value)}"))
        return
    if value is None:
        return
    if node.one_of is not None and not any(o.accepts(value) for o in node.one_of):
        out.append((trail, "invalid", value, "has an invalid type"))
        return
    if node.quantity:
        if (problem := quantity_problem(value)) is not None:
            out.append((trail, "invalid", value, problem))
        return
    if node.enum is not None and value not in node.enum:
        out.append((trail, "enum", value, node.enum))
        return
    kind = type(value)
    if kind is dict:
        for name in node.required:
            if name not in value:
                out.append(((trail, name), "required", None, ""))
        properties, extra = node.properties, node.extra
        for key, item in value.items():
            child = properties.get(key, extra)
            if child is not None:
                _walk(child, item, (trail, key), out)
    elif kind is list and node.items is not None:
        items = node.items
        for i, item in enumerate(value):
            _walk(items, item, (trail, i), out)


def _segments(trail: Trail) -> list[str | int]:
    segments: list[str | int] = []
    while trail is not None:
        trail, segment = trail
        segments.append(segment)
    segments.reverse()
    return segments


def _path(base: Path, trail: Trail) -> Path:
    path = base
    previous: str | int | None = None
    for part in _segments(trail):
        if isinstance(part, int):
            path = path.index(part)
        elif isinstance(previous, str) and previous in MAP_FIELDS:
            path = path.key(part)
        else:
            path = path.child(part)
        previous = part
    return path


def _field_error(base: Path, trail: Trail, kind: str, value: Any, detail: Any) -> FieldError:
    path = _path(base, trail)
    if kind == "required":
        return FieldError.required(path)
    if kind == "enum":
        return FieldError.not_supported(path, value, [str(v) for v in detail])
    return FieldError.invalid(path, _short(value), str(detail))


def schema_errors(template: dict[str, Any], path: Path) -> list[FieldError]:
    """Type, required-field and quantity problems of a PodTemplateSpec, from the Kubernetes
    schema: what the CRD's schema would refuse."""
    found: Found = []
    _walk(_template_node(), template, None, found)
    return [_field_error(path, *problem) for problem in found]


def claim_schema_errors(claim: Any, path: Path) -> list[FieldError]:
    """Type, required-field and quantity problems of a PersistentVolumeClaimSpec (a Job volume's
    `volumeClaim`), from the Kubernetes schema: what the CRD's schema would refuse."""
    found: Found = []
    _walk(_claim_node(), claim, None, found)
    return [_field_error(path, *problem) for problem in found]


def _covered(error: FieldError, reported: set[str]) -> bool:
    return any(error.field == r or error.field.startswith((r + ".", r + "[")) for r in reported)


def _dicts(value: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict):
                yield i, item


def _resource_errors(resources_: Any, path: Path) -> list[FieldError]:
    if not isinstance(resources_, dict):
        return []
    errors: list[FieldError] = []
    parsed: dict[str, dict[str, Decimal]] = {}
    for kind in ("limits", "requests"):
        amounts = resources_.get(kind)
        parsed[kind] = {}
        if not isinstance(amounts, dict):
            continue
        for name, raw in amounts.items():
            where = path.child(kind).key(str(name))
            value = quantity.try_parse(raw)
            if value is None:
                errors.append(FieldError.invalid(where, raw, NOT_A_QUANTITY))
            elif value < 0:
                errors.append(FieldError.invalid(where, raw, "must be greater than or equal to 0"))
            else:
                parsed[kind][str(name)] = value
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request > limit:
            errors.append(
                FieldError.invalid(
                    path.child("requests").key(name),
                    resources_["requests"][name],
                    f"must be less than or equal to {name} limit of {resources_['limits'][name]}",
                )
            )
    return errors


def _container_errors(
    container: dict[str, Any],
    path: Path,
    volume_names: set[str] | None,
) -> list[FieldError]:
    errors: list[FieldError] = []
    seen_ports: set[str] = set()  # port names are unique within a container, as in Kubernetes
    name = container.get("name")
    if isinstance(name, str) and name and (problems := names.dns1123_label(name)):
        errors.extend(FieldError.invalid_each(path.child("name"), name, problems))
    image = container.get("image")
    if image is None or (isinstance(image, str) and not image.strip()):
        errors.append(FieldError.required(path.child("image")))
    for j, port in _dicts(container.get("ports")):
        where = path.child("ports").index(j)
        for key in ("containerPort", "hostPort"):
            number = port.get(key)
            if isinstance(number, int) and not isinstance(number, bool):
                if key == "hostPort" and number == 0:
                    continue
                if not 1 <= number <= 65535:
                    errors.append(
                        FieldError.invalid(
                            where.child(key), number, "must be between 1 and 65535, inclusive"
                        )
                    )
        protocol = port.get("protocol")
        if isinstance(protocol, str) and protocol not in PROTOCOLS:
            errors.append(FieldError.not_supported(where.child("protocol"), protocol, PROTOCOLS))
        port_name = port.get("name")
        if isinstance(port_name, str) and port_name:
            if problems := names.port_name(port_name):
                errors.extend(FieldError.invalid_each(where.child("name"), port_name, problems))
            elif port_name in seen_ports:
                errors.append(FieldError.duplicate(where.child("name"), port_name))
            seen_ports.add(port_name)
    for j, env in _dicts(container.get("env")):
        env_name = env.get("name")
        if isinstance(env_name, str):
            if not env_name:
                errors.append(FieldError.required(path.child("env").index(j).child("name")))
            elif problems := names.env_var_name(env_name):
                errors.extend(
                    FieldError.invalid_each(
                        path.child("env").index(j).child("name"), env_name, problems
                    )
                )
    for j, mount in _dicts(container.get("volumeMounts")):
        mount_name = mount.get("name")
        where = path.child("volumeMounts").index(j)
        if (
            isinstance(mount_name, str)
            and volume_names is not None
            and mount_name not in volume_names
        ):
            errors.append(
                FieldError.not_found(
                    where.child("name"), mount_name, "no volume of this name in spec.volumes"
                )
            )
        mount_path = mount.get("mountPath")
        if isinstance(mount_path, str) and not mount_path:
            errors.append(FieldError.required(where.child("mountPath")))
    errors.extend(_resource_errors(container.get("resources"), path.child("resources")))
    return errors


def _pod_level_resource_errors(spec: dict[str, Any], path: Path) -> list[FieldError]:
    """The pod-level `resources` (Kubernetes >= 1.34, PodLevelResources) as kube-apiserver 1.37
    validates a Pod's: cpu, memory and hugepages only, no claims, requests within limits, the
    requests at least what the containers request together, the hugepages limits at least the
    containers' together and each container's limit within the pod's. `path` is the pod spec's."""
    resources = spec.get("resources")
    if not isinstance(resources, dict) or not (
        resources.get("limits") or resources.get("requests") or resources.get("claims")
    ):
        return []
    where = path.child("resources")
    os_ = spec.get("os")
    if isinstance(os_, dict) and os_.get("name") == "windows":
        return [FieldError.forbidden(where, "may not be set for a windows pod")]
    errors: list[FieldError] = []
    if resources.get("claims") is not None:
        errors.append(
            FieldError.forbidden(
                where.child("claims"), "claims may not be set for Resources at pod-level"
            )
        )
    supported = sorted([*podresources.POD_LEVEL_RESOURCES, podresources.HUGEPAGES_PREFIX])
    for kind in ("limits", "requests"):
        amounts = resources.get(kind)
        for name in amounts if isinstance(amounts, dict) else ():
            if not podresources.supported_at_pod_level(str(name)):
                errors.append(
                    FieldError.not_supported(where.child(kind).key(str(name)), name, supported)
                )
    errors.extend(_resource_errors(resources, where))
    requests = quantity.parse_resource_list(resources.get("requests"))
    for name, aggregate in sorted(podresources.aggregate_container_requests(spec).items()):
        requested = requests.get(name)
        if requested is not None and aggregate > requested:
            errors.append(
                FieldError.invalid(
                    where.child("requests").key(name),
                    resources["requests"][name],
                    "must be greater than or equal to aggregate container requests of "
                    + quantity.render(
                        aggregate, quantity.suffix_style(resources["requests"][name])
                    ),
                )
            )
    limits = quantity.parse_resource_list(resources.get("limits"))
    # Hugepages cannot be overcommitted (Kubernetes 1.37): the pod's limit covers the containers'.
    for name, aggregate in sorted(podresources.aggregate_container_limits(spec).items()):
        pod_limit = limits.get(name)
        if podresources.is_hugepages(name) and pod_limit is not None and aggregate > pod_limit:
            errors.append(
                FieldError.invalid(
                    where.child("limits").key(name),
                    resources["limits"][name],
                    "must be greater than or equal to aggregate container limits of "
                    + quantity.render(aggregate, quantity.suffix_style(resources["limits"][name])),
                )
            )
    # Regular containers only, as kube-apiserver checks.
    for j, container in _dicts(spec.get("containers")):
        for name, limit in sorted(podresources.container_limits(container).items()):
            pod_limit = limits.get(name)
            if pod_limit is not None and limit > pod_limit:
                errors.append(
                    FieldError.invalid(
                        path.child("containers").index(j).child("resources", "limits").key(name),
                        container["resources"]["limits"][name],
                        f"must be less than or equal to pod limits of {resources['limits'][name]}",
                    )
                )
    return errors


def _semantic_errors(template: dict[str, Any], base: Path) -> list[FieldError]:
    spec = template.get("spec")
    spec_path = base.child("spec")
    if spec is None:
        return [FieldError.required(spec_path, "a pod template needs a spec with containers")]
    if not isinstance(spec, dict):
        return []
    errors: list[FieldError] = []
    volume_names: set[str] | None = set()
    volumes = spec.get("volumes")
    if volumes is not None and not isinstance(volumes, list):
        volume_names = None
    for j, volume in _dicts(volumes):
        volume_name = volume.get("name")
        if not isinstance(volume_name, str) or volume_names is None:
            continue
        where = spec_path.child("volumes").index(j).child("name")
        if problems := names.dns1123_label(volume_name):
            errors.extend(FieldError.invalid_each(where, volume_name, problems))
        elif volume_name in volume_names:
            errors.append(FieldError.duplicate(where, volume_name))
        volume_names.add(volume_name)
    containers = spec.get("containers")
    if isinstance(containers, list) and not containers:
        errors.append(FieldError.required(spec_path.child("containers"), "at least one container"))
    seen_names: set[str] = set()
    for list_name in CONTAINER_LISTS:
        for j, container in _dicts(spec.get(list_name)):
            where = spec_path.child(list_name).index(j)
            name = container.get("name")
            if isinstance(name, str) and name:
                if name in seen_names:
                    errors.append(FieldError.duplicate(where.child("name"), name))
                seen_names.add(name)
            errors.extend(_container_errors(container, where, volume_names))
    restart = spec.get("restartPolicy")
    if isinstance(restart, str) and restart not in RESTART_POLICIES:
        errors.append(
            FieldError.not_supported(spec_path.child("restartPolicy"), restart, RESTART_POLICIES)
        )
    dns = spec.get("dnsPolicy")
    if isinstance(dns, str) and dns and dns not in DNS_POLICIES:
        errors.append(FieldError.not_supported(spec_path.child("dnsPolicy"), dns, DNS_POLICIES))
    errors.extend(_pod_level_resource_errors(spec, spec_path))
    return errors


def _template_problems(template: dict[str, Any], path: Path) -> list[FieldError]:
    found = schema_errors(template, path)
    reported = {e.field for e in found}
    semantic = [e for e in _semantic_errors(template, path) if not _covered(e, reported)]
    return found + semantic


def _rerooted(error: FieldError, prefix: str) -> FieldError:
    """An error found below the template's own root, with its path moved under `prefix`."""
    if not prefix:
        return error
    if not error.field:
        return replace(error, field=prefix)
    joiner = "" if error.field.startswith("[") else "."
    return replace(error, field=prefix + joiner + error.field)


def validate_template(
    template: Any, path: Path, recall: memo.Recall = memo.fresh
) -> list[FieldError]:
    """Every problem of a task's pod template; paths start at `path` (…`.template`).

    The problems of a template depend on nothing else, and the same templates come back with
    every job made from the same manifest: they are worked out with paths relative to the
    template and handed to `recall` by a digest of the template's JSON.
    """
    if not isinstance(template, dict):
        return [FieldError.invalid(path, template, "must be an object (a PodTemplateSpec)")]
    encoded = memo.encoding(template)
    if encoded is None:
        return _template_problems(template, path)
    relative = recall(
        memo.digest(MEMO_TAG, encoded), lambda: tuple(_template_problems(template, Path()))
    )
    prefix = str(path)
    return [_rerooted(error, prefix) for error in relative]


def _whole_cpus_error(container: dict[str, Any], path: Path, policy: str) -> FieldError | None:
    resources_ = container.get("resources")
    resources_ = resources_ if isinstance(resources_, dict) else {}
    detail = f'must be a whole, non-zero number of CPUs when topologyPolicy is "{policy}"'
    for kind in ("requests", "limits"):
        amounts = resources_.get(kind)
        if isinstance(amounts, dict) and "cpu" in amounts:
            raw = amounts["cpu"]
            value = quantity.try_parse(raw)
            if value is None:
                return None  # reported by validate_template
            if value <= 0 or value != value.to_integral_value():
                return FieldError.invalid(path.child("resources", kind).key("cpu"), raw, detail)
            return None
    return FieldError.required(path.child("resources", "requests").key("cpu"), detail)


def topology_errors(template: Any, path: Path, policy: str) -> list[FieldError]:
    """With a NUMA topology policy every container needs whole CPUs (request, else limit)."""
    spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(spec, dict):
        return []
    errors: list[FieldError] = []
    for list_name in CONTAINER_LISTS:
        for j, container in _dicts(spec.get(list_name)):
            error = _whole_cpus_error(container, path.child("spec", list_name).index(j), policy)
            if error is not None:
                errors.append(error)
    return errors
