"""`KubeLike`: what the controllers, the webhook's lookups and the event recorder need of an API
client. `kubeio.client.Kube` is the one implementation that talks to a server; the shells take
this protocol so that an in-memory API (the tests' `FakeKube`) fits where `Kube` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from shared.wire import WireObject

if TYPE_CHECKING:
    from kubeio.client import Resource


class KubeLike(Protocol):
    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: tuple[float, float] | None = None,
    ) -> Any: ...

    def get(self, res: Resource, namespace: str | None, name: str) -> WireObject: ...

    def get_or_none(self, res: Resource, namespace: str | None, name: str) -> WireObject | None: ...

    def create(self, res: Resource, namespace: str | None, body: WireObject) -> WireObject: ...

    def replace(self, res: Resource, namespace: str | None, body: WireObject) -> WireObject: ...

    def replace_status(self, res: Resource, namespace: str, body: WireObject) -> WireObject: ...

    def merge_patch(
        self, res: Resource, namespace: str | None, name: str, patch: WireObject, sub: str = ""
    ) -> WireObject: ...

    def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        propagation: str | None = None,
        missing_ok: bool = True,
    ) -> WireObject | None: ...

    def list(
        self, res: Resource, *, label_selector: str | None = None, limit: int = 500
    ) -> tuple[list[WireObject], str]: ...

    def watch(
        self,
        res: Resource,
        *,
        resource_version: str,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        on_open: Callable[[Any], None] | None = None,
    ) -> Iterator[WireObject]: ...
