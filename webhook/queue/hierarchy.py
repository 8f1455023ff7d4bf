"""A Queue's place in the hierarchy, as Volcano's webhook manager checks it: the
`volcano.sh/hierarchy` annotations, the parent (`spec.parent`), the depth, the ancestors'
capability and the shares a parent and its children hold together; what these rules know of
the other queues is a `QueueContext` (gathered from the Queue cache by `webhook.queue.context`).

Messages contain Volcano's own phrases (`must have the same length`, `is not allowed to be in
the sub path of`), so scripts written for Volcano keep working.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from shared import quantity
from shared.fielderrors import FieldError, Path

HIERARCHY: Final = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS: Final = "volcano.sh/hierarchy-weights"


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
