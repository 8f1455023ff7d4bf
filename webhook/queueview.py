"""How admission reads the Queues the webhook has cached (`webhook.queuecache.QueueCache`): the
Job, PodGroup and Queue rules all look queues up through this view."""

from __future__ import annotations

from typing import Final, Protocol

from shared.models import Queue

# Passed on with the answer when there is no Queue CRD to check against.
QUEUE_SKIPPED_WARNING: Final = (
    "the queue was not checked: no Queue CRD (queues.scheduling.volcano.sh) is installed"
)


class QueueView(Protocol):
    """Read access to the Queues the webhook has cached."""

    def get(self, name: str) -> Queue | None: ...

    def children(self, name: str) -> list[str]:
        """Names of the queues whose spec.parent is `name`."""
        ...
