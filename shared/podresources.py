"""A pod's resources as Kubernetes adds them up (component-helpers' AggregateContainerRequests and
the pod-level resources of KEP-2837): what a pod-level `resources` is checked against.

Pure; amounts are `Decimal`s by resource name, read from plain pod-spec dicts. Values that are
not quantities are left out: the schema check reports them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from shared import quantity

# The resources a pod-level `resources` may name (Kubernetes 1.34 to 1.37): cpu, memory and
# hugepages.
POD_LEVEL_RESOURCES: Final = ("cpu", "memory")
HUGEPAGES_PREFIX: Final = "hugepages-"


def supported_at_pod_level(name: str) -> bool:
    return name in POD_LEVEL_RESOURCES or is_hugepages(name)


def _containers(spec: Mapping[str, Any], key: str) -> Iterable[Mapping[str, Any]]:
    listed = spec.get(key)
    if isinstance(listed, list):
        yield from (c for c in listed if isinstance(c, Mapping))


def _resources(container: Mapping[str, Any]) -> Mapping[str, Any]:
    resources = container.get("resources")
    return resources if isinstance(resources, Mapping) else {}


def container_requests(container: Mapping[str, Any]) -> dict[str, Decimal]:
    """A container's requests after the API server's defaulting: a resource with a limit and no
    request requests its limit."""
    resources = _resources(container)
    amounts = quantity.parse_resource_list(resources.get("limits"))
    amounts.update(quantity.parse_resource_list(resources.get("requests")))
    return amounts


def container_limits(container: Mapping[str, Any]) -> dict[str, Decimal]:
    return quantity.parse_resource_list(_resources(container).get("limits"))


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _aggregate(
    spec: Mapping[str, Any], amounts: Callable[[Mapping[str, Any]], dict[str, Decimal]]
) -> dict[str, Decimal]:
    """Σ regular containers and sidecars (restartable init containers), or, where larger, what
    the pod needs while an init container runs: the sidecars started before it plus its own
    (component-helpers' aggregateContainerResourcesByFn)."""
    total = quantity.add_quantities(*(amounts(c) for c in _containers(spec, "containers")))
    sidecars: dict[str, Decimal] = {}
    while_initialising: list[dict[str, Decimal]] = []
    for init in _containers(spec, "initContainers"):
        own = amounts(init)
        if _is_sidecar(init):
            total = quantity.add_quantities(total, own)
            sidecars = quantity.add_quantities(sidecars, own)
            while_initialising.append(dict(sidecars))
        else:
            while_initialising.append(quantity.add_quantities(own, sidecars))
    return quantity.max_quantities([total, *while_initialising])


def aggregate_container_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the containers request together (AggregateContainerRequests)."""
    return _aggregate(spec, container_requests)


def aggregate_container_limits(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """The containers' limits added up the same way (AggregateContainerLimits)."""
    return _aggregate(spec, container_limits)


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def pod_level_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """The pod-level requests after the API server's defaulting (a pod-level limit alone is
    also the request), for the resources a pod-level `resources` may name."""
    resources = spec.get("resources")
    if not isinstance(resources, Mapping):
        return {}
    amounts = quantity.parse_resource_list(resources.get("limits"))
    amounts.update(quantity.parse_resource_list(resources.get("requests")))
    return {name: value for name, value in amounts.items() if supported_at_pod_level(name)}


def pod_requests(spec: Mapping[str, Any]) -> dict[str, Decimal]:
    """What the pod asks of its node, without overhead (Kubernetes' PodRequests): the aggregate
    container requests, where the pod-level resources name a resource, theirs."""
    return {**aggregate_container_requests(spec), **pod_level_requests(spec)}
