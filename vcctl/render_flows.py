"""What `vcjob jobflow` and `vcjob jobtemplate` print, as pure functions of the objects: vcctl's
tables (each column as wide as its longest cell plus four) and the `describe` documents."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from shared.models.flow import FLOW_API_VERSION
from shared.wire import WireObject, creation_timestamp, metadata, name_of, namespace_of, phase_of
from vcctl.render import NO_RESOURCES, dump, padded_table, since

COLUMN_SPACING: Final = 4
JOBFLOW_COLUMNS: Final = ("Name", "Namespace", "Phase", "Age")
JOBTEMPLATE_COLUMNS: Final = ("Name", "Namespace")
# Between two described objects: two empty lines, as vcctl prints them.
DESCRIBE_SEPARATOR: Final = "\n\n\n"


def jobflow_table(flows: Sequence[WireObject], now: datetime) -> str:
    """`vcctl jobflow list` / `get`: Name, Namespace, Phase (`status.state.phase`), Age."""
    if not flows:
        return NO_RESOURCES
    rows = [
        [
            name_of(f),
            namespace_of(f),
            phase_of(f),
            since(creation_timestamp(f), now),
        ]
        for f in flows
    ]
    return padded_table(JOBFLOW_COLUMNS, rows, COLUMN_SPACING, sized_by_header=True)


def jobtemplate_table(templates: Sequence[WireObject]) -> str:
    """`vcctl jobtemplate list` / `get`: Name and Namespace only (vcctl shows no age)."""
    if not templates:
        return NO_RESOURCES
    rows = [[name_of(t), namespace_of(t)] for t in templates]
    return padded_table(JOBTEMPLATE_COLUMNS, rows, COLUMN_SPACING, sized_by_header=True)


def described(obj: WireObject, kind: str) -> WireObject:
    """The object as `describe` shows it: without managedFields, apiVersion and kind set."""
    shown = copy.deepcopy(obj)
    shown.setdefault("apiVersion", FLOW_API_VERSION)
    shown.setdefault("kind", kind)
    metadata(shown).pop("managedFields", None)
    return shown


def describe(objects: Sequence[WireObject], kind: str, output: str) -> str:
    """`vcctl jobflow|jobtemplate describe`: each object as YAML (or JSON), two empty lines
    between them; `No resources found` when there is none."""
    if not objects:
        return NO_RESOURCES
    return DESCRIBE_SEPARATOR.join(dump(described(o, kind), output) for o in objects)
