"""Queue admission as Volcano's webhook manager does it, with every problem and its field path.

Messages contain Volcano's own phrases (`must be >= guarantee`, `must be <= capability`,
`must have the same length`, `can not be deleted`), so scripts written for Volcano keep working.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from shared import quantity
from shared.fielderrors import FieldError, Path

HIERARCHY: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS: Final = "volcano.sh/hierarchy-weights"
SETTABLE_STATES: Final = ("Open", "Closed")
PROTECTED_QUEUES: Final = ("default", "root")
DEFAULT_WEIGHT: Final = 1


def default_queue(queue: dict[str, Any]) -> dict[str, Any]:
    """The queue with Volcano's defaults: `weight: 1` and `reclaimable: true` when absent, and a
    hierarchy (with its weights) that does not start at `root` put under it (`root/`, `1/`)."""
    out = copy.deepcopy(queue)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        spec = out["spec"] = {}
    if spec.get("reclaimable") is None:
        spec["reclaimable"] = True
    if spec.get("weight") in (None, 0):
        spec["weight"] = DEFAULT_WEIGHT
    metadata = out.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if isinstance(annotations, dict):
        hierarchy = annotations.get(HIERARCHY)
        weights = annotations.get(HIERARCHY_WEIGHTS)
        if (
            isinstance(hierarchy, str)
            and isinstance(weights, str)
            and hierarchy
            and weights
            and not hierarchy.startswith("root")
        ):
            annotations[HIERARCHY] = f"root/{hierarchy}"
            annotations[HIERARCHY_WEIGHTS] = f"1/{weights}"
    return out


def _quantities(value: Any, path: Path, errors: list[FieldError]) -> dict[str, tuple[Any, Decimal]]:
    """The resource list's valid quantities by name; each malformed or negative one is reported."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(
            FieldError.invalid(path, value, "must be a map of resource names to quantities")
        )
        return {}
    out: dict[str, tuple[Any, Decimal]] = {}
    for name, raw in value.items():
        parsed = quantity.try_parse(raw)
        if parsed is None:
            errors.append(
                FieldError.invalid(
                    path.key(name),
                    raw,
                    "quantities must match the regular expression "
                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )
            )
        elif parsed < 0:
            errors.append(
                FieldError.invalid(path.key(name), raw, "must be greater than or equal to 0")
            )
        else:
            out[name] = (raw, parsed)
    return out


def _text(raw: Any) -> str:
    return str(raw)


def validate_resources(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    """capability >= deserved >= guarantee, resource by resource; every quantity valid and >= 0.

    A guaranteed resource needs a deserved amount at least as large (Volcano: a guarantee with no
    deserved amount is refused); a resource missing from capability is not capped.
    """
    errors: list[FieldError] = []
    capability = _quantities(spec.get("capability"), path.child("capability"), errors)
    deserved = _quantities(spec.get("deserved"), path.child("deserved"), errors)
    guarantee_block = spec.get("guarantee")
    guarantee_raw = guarantee_block.get("resource") if isinstance(guarantee_block, dict) else None
    guarantee = _quantities(guarantee_raw, path.child("guarantee", "resource"), errors)
    for name, (g_raw, g_value) in guarantee.items():
        where = path.child("deserved").key(name)
        if name not in deserved:
            errors.append(
                FieldError.required(
                    where,
                    f"deserved[{name}] must be >= guarantee[{name}]={_text(g_raw)} "
                    "(a guaranteed resource needs a deserved amount)",
                )
            )
            continue
        d_raw, d_value = deserved[name]
        if d_value < g_value:
            errors.append(
                FieldError.invalid(
                    where,
                    d_raw,
                    f"deserved[{name}]={_text(d_raw)} must be >= guarantee[{name}]={_text(g_raw)}",
                )
            )
    for name, (d_raw, d_value) in deserved.items():
        if name in capability and d_value > capability[name][1]:
            c_raw = capability[name][0]
            errors.append(
                FieldError.invalid(
                    path.child("deserved").key(name),
                    d_raw,
                    f"deserved[{name}]={_text(d_raw)} must be <= capability[{name}]={_text(c_raw)}",
                )
            )
    return errors


def validate_weight(spec: Mapping[str, Any], path: Path) -> list[FieldError]:
    weight = spec.get("weight")
    if weight is None:
        return []
    if isinstance(weight, bool) or not isinstance(weight, int):
        return [FieldError.invalid(path.child("weight"), weight, "must be an integer")]
    if weight < 1:
        return [
            FieldError.invalid(path.child("weight"), weight, "should be greater than or equal to 1")
        ]
    return []


def validate_hierarchy(annotations: Mapping[str, Any], path: Path) -> list[FieldError]:
    """`volcano.sh/hierarchy` and `volcano.sh/hierarchy-weights`: both or neither, the same number
    of `/`-separated parts, every weight a number > 0."""
    hierarchy = annotations.get(HIERARCHY) or ""
    weights = annotations.get(HIERARCHY_WEIGHTS) or ""
    if not hierarchy and not weights:
        return []
    parts = str(hierarchy).split("/")
    weight_parts = str(weights).split("/")
    errors: list[FieldError] = []
    if not weights:
        errors.append(
            FieldError.required(
                path.key(HIERARCHY_WEIGHTS),
                f"{HIERARCHY} must have the same length with {HIERARCHY_WEIGHTS}: "
                f"set a weight for each of the {len(parts)} parts of the hierarchy",
            )
        )
        return errors
    if len(parts) != len(weight_parts):
        errors.append(
            FieldError.invalid(
                path.key(HIERARCHY),
                hierarchy,
                f"{HIERARCHY} must have the same length with {HIERARCHY_WEIGHTS} "
                f"({len(parts)} parts, {len(weight_parts)} weights)",
            )
        )
    for i, weight in enumerate(weight_parts):
        try:
            number = float(weight)
        except ValueError:
            errors.append(
                FieldError.invalid(
                    path.key(HIERARCHY_WEIGHTS),
                    weights,
                    f"{weight} in the {weights} is invalid number (part {i + 1})",
                )
            )
            continue
        if not math.isfinite(number) or number <= 0:
            errors.append(
                FieldError.invalid(
                    path.key(HIERARCHY_WEIGHTS),
                    weights,
                    f"{weight} in the {weights} must be larger than 0 (part {i + 1})",
                )
            )
    return errors


def validate_state(new_state: Any, old_state: Any, path: Path) -> list[FieldError]:
    """A state written by a user (create, or a change on update) is Open or Closed; the
    controller's own states (Closing, Unknown) already stored are not held against an update."""
    if new_state in (None, "") or new_state == old_state:
        return []
    if new_state not in SETTABLE_STATES:
        return [
            FieldError.invalid(
                path,
                new_state,
                f"queue state must be in [{' '.join(SETTABLE_STATES)}]",
            )
        ]
    return []


def validate_parent(
    name: str, parent: Any, parent_exists: bool | None, path: Path
) -> list[FieldError]:
    """A queue is not its own parent, and its parent exists (`parent_exists` None: unknown, the
    check is skipped)."""
    if parent in (None, "", "root"):
        return []
    if parent == name:
        return [FieldError.invalid(path, parent, f"queue {name} cannot use itself as parent")]
    if parent_exists is False:
        return [
            FieldError.not_found(
                path,
                parent,
                f"failed to get parent queue of queue {name}: "
                f'queue.scheduling.volcano.sh "{parent}" not found',
            )
        ]
    return []


def validate_hierarchy_place(
    name: str, hierarchy: Any, others: Mapping[str, str], path: Path
) -> list[FieldError]:
    """No other queue's `volcano.sh/hierarchy` lies under this one's (`others`: name →
    hierarchy of the other queues): a queue cannot be the inner node of another's path."""
    if not isinstance(hierarchy, str) or not hierarchy:
        return []
    errors: list[FieldError] = []
    for other, their in sorted(others.items()):
        if other != name and their.startswith(hierarchy + "/"):
            errors.append(
                FieldError.invalid(
                    path.key(HIERARCHY),
                    hierarchy,
                    f"{hierarchy} is not allowed to be in the sub path of {their} of queue {other}",
                )
            )
    return errors


def validate_ancestor_capability(
    name: str,
    capability: Any,
    ancestors: Sequence[tuple[str, Mapping[str, Any]]],
    path: Path,
) -> list[FieldError]:
    """Each resource of the queue's capability is at most the nearest ancestor's capability for
    it (`ancestors`: (name, capability) from the parent up, `root` excluded)."""
    if not isinstance(capability, dict):
        return []
    errors: list[FieldError] = []
    for resource, raw in capability.items():
        mine = quantity.try_parse(raw)
        if mine is None:
            continue
        for ancestor, limits in ancestors:
            limit_raw = limits.get(resource) if isinstance(limits, dict) else None
            limit = quantity.try_parse(limit_raw)
            if limit is None or limit <= 0:
                continue
            if mine > limit:
                errors.append(
                    FieldError.invalid(
                        path.key(resource),
                        raw,
                        f"queue {name} capability[{resource}]={raw} exceeds its ancestor's "
                        f"capability={limit_raw} (queue {ancestor})",
                    )
                )
            break
    return errors


@dataclass(frozen=True)
class QueueShares:
    """A queue's guaranteed and deserved resources (raw quantities by resource name)."""

    name: str
    guarantee: Mapping[str, Any] = field(default_factory=dict)
    deserved: Mapping[str, Any] = field(default_factory=dict)


SHARES: Final = (("guarantee", ("guarantee", "resource")), ("deserved", ("deserved",)))


def _amounts(value: Any) -> dict[str, Decimal]:
    if not isinstance(value, Mapping):
        return {}
    parsed = {name: quantity.try_parse(raw) for name, raw in value.items()}
    return {name: amount for name, amount in parsed.items() if amount is not None and amount >= 0}


def _show(amounts: Mapping[str, Decimal]) -> str:
    return ", ".join(f"{name} {amount.normalize():f}" for name, amount in sorted(amounts.items()))


def _shares_of(share: str, spec: Mapping[str, Any]) -> Mapping[str, Any]:
    if share == "deserved":
        value = spec.get("deserved")
    else:
        block = spec.get("guarantee")
        value = block.get("resource") if isinstance(block, dict) else None
    return value if isinstance(value, Mapping) else {}


def _over(limit: Mapping[str, Decimal], total: Mapping[str, Decimal]) -> list[str]:
    """Resources of which `total` is more than `limit` (a resource `limit` lacks counts as 0)."""
    return sorted(name for name, amount in total.items() if amount > limit.get(name, Decimal(0)))


def validate_sibling_shares(
    name: str,
    spec: Mapping[str, Any],
    parent: QueueShares | None,
    siblings: Sequence[QueueShares],
    path: Path,
) -> list[FieldError]:
    """The guarantees (and the deserved shares) of a parent's children, this queue's included,
    add up to at most the parent's own (`parent` None: `root` or not known, not checked; a
    resource the parent does not list counts as 0, as Volcano counts it)."""
    if parent is None:
        return []
    errors: list[FieldError] = []
    for share, subpath in SHARES:
        mine = _amounts(_shares_of(share, spec))
        if not mine:
            continue
        limit = _amounts(parent.guarantee if share == "guarantee" else parent.deserved)
        others = [s.guarantee if share == "guarantee" else s.deserved for s in siblings]
        total = quantity.add_quantities(mine, *(_amounts(o) for o in others))
        for resource in _over(limit, total):
            if resource not in mine:
                continue
            errors.append(
                FieldError.invalid(
                    path.child(*subpath).key(resource),
                    _shares_of(share, spec)[resource],
                    f"parent queue {parent.name} validation failed: sum of children's {share} "
                    f"({_show(total)}) exceeds parent's {share} limit ({_show(limit)}) "
                    f"(queue {name} and its siblings)",
                )
            )
    return errors


def validate_children_shares(
    name: str,
    spec: Mapping[str, Any],
    children: Sequence[QueueShares],
    descendant_capabilities: Sequence[Mapping[str, Any]],
    path: Path,
) -> list[FieldError]:
    """A queue with child queues holds them: its guarantee and deserved at least the sums of
    theirs, and each resource of its capability at least the largest capability any queue
    below it sets for that resource."""
    if not children:
        return []
    errors: list[FieldError] = []
    for share, subpath in SHARES:
        limit = _amounts(_shares_of(share, spec))
        total = quantity.add_quantities(
            *(_amounts(c.guarantee if share == "guarantee" else c.deserved) for c in children)
        )
        over = _over(limit, total)
        if over:
            errors.append(
                FieldError.invalid(
                    path.child(*subpath),
                    _show(limit) or "{}",
                    f"queue {name} validation failed: sum of children's {share} "
                    f"({_show(total)}) exceeds parent's {share} limit ({_show(limit)})",
                )
            )
    capability = spec.get("capability")
    if not isinstance(capability, Mapping):
        return errors
    for resource, raw in capability.items():
        mine = quantity.try_parse(raw)
        if mine is None or mine <= 0:
            continue
        below = [quantity.try_parse(c.get(resource)) for c in descendant_capabilities]
        largest = max((b for b in below if b is not None), default=Decimal(0))
        if mine < largest:
            errors.append(
                FieldError.invalid(
                    path.child("capability").key(resource),
                    raw,
                    f"queue {name} capability[{resource}]={raw} is smaller than its "
                    f"descendants' max capability={largest.normalize():f}",
                )
            )
    return errors


# Volcano's webhook manager: `--max-queue-depth` (5) counts the queue and its ancestors below root.
MAX_DEPTH: Final = 5
ROOT_SHARES: Final = ("capability", "deserved", "guarantee")


def validate_depth(name: str, parent: Any, ancestors: int, path: Path) -> list[FieldError]:
    """The queue and its `ancestors` (below root) are at most MAX_DEPTH levels."""
    if parent in (None, "", "root") or 1 + ancestors <= MAX_DEPTH:
        return []
    return [
        FieldError.invalid(
            path, parent, f"queue {name} exceeds the maximum allowed depth of {MAX_DEPTH}"
        )
    ]


def validate_parent_pods(name: str, parent: Any, parent_pods: int, path: Path) -> list[FieldError]:
    """A queue whose pods run in it (`parent_pods`: its allocated pods, 0 when it has children
    already) does not become a parent: its pods would sit in an inner queue."""
    if parent in (None, "", "root") or parent_pods <= 0:
        return []
    return [
        FieldError.invalid(
            path,
            parent,
            f"queue {parent} cannot be the parent queue of queue {name} because it has "
            f"allocated Pods: {parent_pods}",
        )
    ]


def validate_root_shares(old_spec: Mapping[str, Any], spec: Mapping[str, Any]) -> list[FieldError]:
    """`root`'s capability, deserved and guarantee stay as they are (Volcano's
    `--enable-root-queue-protection`, on by default)."""
    changed = [k for k in ROOT_SHARES if old_spec.get(k) != spec.get(k)]
    return [
        FieldError.forbidden(
            Path.of("spec", key),
            "root queue's resource attributes (capability, deserved, guarantee) cannot be modified",
        )
        for key in changed
    ]


def _spec(queue: Any) -> Mapping[str, Any]:
    spec = queue.get("spec") if isinstance(queue, dict) else None
    return spec if isinstance(spec, dict) else {}


def _annotations(queue: Any) -> Mapping[str, Any]:
    metadata = queue.get("metadata") if isinstance(queue, dict) else None
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return annotations if isinstance(annotations, dict) else {}


def _state(queue: Any) -> Any:
    status = queue.get("status") if isinstance(queue, dict) else None
    return status.get("state") if isinstance(status, dict) else None


def _name(queue: Any) -> str:
    metadata = queue.get("metadata") if isinstance(queue, dict) else None
    return str(metadata.get("name") or "") if isinstance(metadata, dict) else ""


@dataclass(frozen=True)
class QueueContext:
    """What the checks need to know about the other queues (from the webhook's Queue cache)."""

    # Whether spec.parent names a known queue; None: unknown, not checked.
    parent_exists: bool | None = None
    # (name, spec.capability) of the ancestors, from the parent up (`root` excluded).
    ancestors: Sequence[tuple[str, Mapping[str, Any]]] = ()
    # The `volcano.sh/hierarchy` annotation of every other queue that has one.
    hierarchies: Mapping[str, str] = field(default_factory=dict)
    # The parent's shares (None: `root`, no parent, or not known) and its other children's.
    parent_shares: QueueShares | None = None
    siblings: Sequence[QueueShares] = ()
    # This queue's children, and the capability of every queue below it.
    children: Sequence[QueueShares] = ()
    descendant_capabilities: Sequence[Mapping[str, Any]] = ()
    # The pods the parent runs itself (`status.allocated.pods`; 0 once it has other children).
    parent_pods: int = 0


def validate_queue(new: Any, old: Any, context: QueueContext) -> list[FieldError]:
    """A Queue on CREATE (`old` None) or UPDATE: every problem at once."""
    spec_path = Path.of("spec")
    spec = _spec(new)
    name = _name(new)
    annotations = _annotations(new)
    errors = validate_weight(spec, spec_path)
    errors += validate_resources(spec, spec_path)
    errors += validate_state(
        _state(new), _state(old) if old is not None else None, Path.of("status", "state")
    )
    annotation_path = Path.of("metadata", "annotations")
    errors += validate_hierarchy(annotations, annotation_path)
    errors += validate_hierarchy_place(
        name, annotations.get(HIERARCHY), context.hierarchies, annotation_path
    )
    old_spec = _spec(old) if old is not None else None
    if old_spec is None or old_spec.get("parent") != spec.get("parent"):
        errors += validate_parent(
            name, spec.get("parent"), context.parent_exists, spec_path.child("parent")
        )
        if spec.get("parent") != name:
            errors += validate_depth(
                name, spec.get("parent"), len(context.ancestors), spec_path.child("parent")
            )
            errors += validate_parent_pods(
                name, spec.get("parent"), context.parent_pods, spec_path.child("parent")
            )
    if old_spec is None or any(old_spec.get(k) != spec.get(k) for k in ("parent", "capability")):
        errors += validate_ancestor_capability(
            name, spec.get("capability"), context.ancestors, spec_path.child("capability")
        )
    # As Volcano: the hierarchy's sums are checked on CREATE and when a share or the parent
    # changes, so queues stored before the rule keep being updatable otherwise.
    if name == "root" and old_spec is not None:
        errors += validate_root_shares(old_spec, spec)
    shares = ("parent", "capability", "deserved", "guarantee")
    if old_spec is None or any(old_spec.get(k) != spec.get(k) for k in shares):
        errors += validate_sibling_shares(
            name, spec, context.parent_shares, context.siblings, spec_path
        )
        errors += validate_children_shares(
            name, spec, context.children, context.descendant_capabilities, spec_path
        )
    return errors


@dataclass(frozen=True)
class DeletionFacts:
    """What a deletion is judged on, gathered by the shell."""

    name: str
    state: str | None
    children: Sequence[str]
    # `<namespace>/<name>` of the PodGroups in the queue; None when they could not be listed.
    podgroups: Sequence[str] | None
    require_closed: bool = False


def validate_deletion(facts: DeletionFacts) -> list[FieldError]:
    """`default` and `root` are never deleted; nor a queue with child queues or PodGroups; with
    `require_closed`, only a Closed queue is."""
    path = Path.of("metadata", "name")
    name = facts.name
    if name in PROTECTED_QUEUES:
        return [FieldError.forbidden(path, f"`{name}` queue can not be deleted")]
    errors: list[FieldError] = []
    if facts.require_closed and facts.state != "Closed":
        errors.append(
            FieldError.forbidden(
                Path.of("status", "state"),
                f"only queue with state `Closed` can be deleted, queue `{name}` state is "
                f"`{facts.state or ''}` (close it first: vcctl queue operate -n {name} -a close)",
            )
        )
    if facts.children:
        errors.append(
            FieldError.forbidden(
                path,
                f"queue {name} can not be deleted because it has {len(facts.children)} child "
                f"queues: {', '.join(facts.children)}",
            )
        )
    if facts.podgroups:
        shown = ", ".join(facts.podgroups[:10])
        more = f" and {len(facts.podgroups) - 10} more" if len(facts.podgroups) > 10 else ""
        errors.append(
            FieldError.forbidden(
                path,
                f"queue {name} can not be deleted because it has {len(facts.podgroups)} "
                f"PodGroups: {shown}{more} (close the queue and let its jobs finish first)",
            )
        )
    return errors
