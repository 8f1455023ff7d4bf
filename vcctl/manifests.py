"""The objects of a manifest file given with `-f` (`vcjob jobflow|jobtemplate create|delete`),
as pure functions: every document of a multi-document YAML text, each checked to be the kind the
command handles. A problem is a ValueError in one line, naming the file and the document."""

from __future__ import annotations

import yaml

from shared.models.flow import FLOW_API_VERSION
from shared.wire import WireObject, metadata, name_of


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """PyYAML's message on one line: the problem and where it is."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return f"{exc.problem}{where}"
    return " ".join(str(exc).split())


def flow_documents(text: str, kind: str, source: str, *, named: bool = False) -> list[WireObject]:
    """Every non-empty document of `text` (the file `source`) as a flow.volcano.sh/v1alpha1
    `kind`, apiVersion and kind filled in where the document leaves them out; with `named`, each
    must have a metadata.name (to delete it). Documents are split by YAML itself, so a `---`
    inside a string does not cut one in two (vcctl splits the text on every `---`)."""
    try:
        loaded = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ValueError(f"{source} is not valid YAML: {_yaml_problem(exc)}") from None
    documents: list[WireObject] = []
    for number, document in enumerate(loaded, start=1):
        if document is None:
            continue
        if not isinstance(document, dict):
            raise ValueError(f"{source}: document {number} is not a {kind} (not a mapping)")
        found_kind = document.get("kind")
        if found_kind not in (None, kind):
            raise ValueError(f"{source}: document {number} is a {found_kind}, not a {kind}")
        api_version = document.get("apiVersion")
        if api_version not in (None, FLOW_API_VERSION):
            raise ValueError(
                f"{source}: document {number} has apiVersion {api_version}, not {FLOW_API_VERSION}"
            )
        if not isinstance(document.get("metadata") or {}, dict):
            raise ValueError(f"{source}: document {number}: metadata is not a mapping")
        if named and not name_of(document):
            raise ValueError(f"{source}: document {number} has no metadata.name")
        documents.append({"apiVersion": FLOW_API_VERSION, "kind": kind, **document})
    if not documents:
        raise ValueError(f"{source} holds no {kind}")
    return documents


def with_namespace(document: WireObject, default: str) -> tuple[str, str, WireObject]:
    """(namespace, name, the document in that namespace): its own namespace, else `default`."""
    meta: WireObject = dict(metadata(document))
    namespace = str(meta.get("namespace") or default)
    meta["namespace"] = namespace
    name = str(meta.get("name") or meta.get("generateName") or "")
    return namespace, name, {**document, "metadata": meta}
