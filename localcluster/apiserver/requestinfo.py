"""What a request asks for, in authorization terms, read from its method, path and query alone.

This is kube-apiserver's RequestInfoFactory: `/api/v1/namespaces/ns/pods/p/log` is verb `get` on
resource `pods`, subresource `log`, name `p` in namespace `ns`; a collection GET is `list` (or
`watch`); a collection DELETE is `deletecollection`; anything outside `/api` and `/apis/G/V` is a
non-resource request whose verb is the lower-cased HTTP method. It needs no knowledge of which
resources exist, so authorization happens before routing, as in kube-apiserver.
"""

from __future__ import annotations

from dataclasses import dataclass

API_PREFIXES = ("api", "apis")
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
METHOD_VERBS = {
    "POST": "create",
    "GET": "get",
    "HEAD": "get",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class Attributes:
    """The subject-free half of an authorization question."""

    verb: str
    path: str = ""
    resource_request: bool = False
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        """`pods/log` when a subresource is asked for, as RBAC rules name it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def _name_from_field_selector(selector: str) -> str:
    """A list or watch of exactly one name (`metadata.name=x`) is authorized for that name."""
    for term in selector.split(","):
        key, sep, value = term.partition("=")
        if sep and key.strip() == "metadata.name":
            name = value.removeprefix("=").strip()
            return name if name and "/" not in name else ""
    return ""


def request_attributes(method: str, path: str, query: dict[str, str]) -> Attributes:
    method = method.upper()
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in API_PREFIXES:
        return Attributes(verb=method.lower(), path=path)
    if parts[0] == "api":
        minimum = 3  # api/v1/<resource>
        group, version, rest = "", parts[1] if len(parts) > 1 else "", parts[2:]
    else:
        minimum = 4  # apis/<group>/<version>/<resource>
        group = parts[1] if len(parts) > 1 else ""
        version = parts[2] if len(parts) > 2 else ""
        rest = parts[3:]
    if len(parts) < minimum:
        return Attributes(verb=method.lower(), path=path)
    verb = METHOD_VERBS.get(method, method.lower())
    if rest and rest[0] == "watch":
        verb = "watch"
        rest = rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        watching = query.get("watch", "").lower() in ("true", "1")
        verb = "watch" if watching else "list"
    if not name and verb in ("list", "watch"):
        name = _name_from_field_selector(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes(
        verb=verb,
        path=path,
        resource_request=True,
        api_group=group,
        api_version=version,
        namespace=namespace,
        resource=resource,
        subresource=subresource,
        name=name,
    )
