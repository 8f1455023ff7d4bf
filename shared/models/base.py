"""The base of every schema model: camelCase wire names, snake_case attributes, unknown fields
kept."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shared import objectkeys


class KubeModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        extra="allow",
        # A docstring under a field is its description in the CRD (`kubectl explain`).
        use_attribute_docstrings=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict with camelCase names and absent fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    @classmethod
    def from_wire(cls, data: Any) -> Self:
        return cls.model_validate(data)


class KubeObject(KubeModel):
    """A top-level object: apiVersion, kind and metadata kept as a plain dict."""

    api_version: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace", ""))

    @property
    def uid(self) -> str:
        return str(self.metadata.get("uid", ""))

    @property
    def key(self) -> str:
        return objectkeys.key(self.namespace, self.name)
