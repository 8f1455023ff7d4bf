"""Objects as vcjob's processes get them from the API server, and the accessors of the fields
several modules read.

Objects travel as plain JSON dicts (a pod template stays a dict, and so does a cached object); the
accessors read a field the same way everywhere, tolerating anything missing or of the wrong type,
as an object from the wire may be.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# An object as the API server sends it: JSON decoded into dicts and lists.
WireObject = dict[str, Any]


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def state_phase(status: Mapping[str, Any] | None) -> str:
    """`state.phase` of a Volcano status (a Job's or a JobFlow's); "" when there is none."""
    phase = _object(_object(status).get("state")).get("phase")
    return phase if isinstance(phase, str) else ""


def phase_of(obj: Mapping[str, Any]) -> str:
    """`status.state.phase` of a Volcano Job or JobFlow; "" when it has none yet."""
    return state_phase(_object(obj.get("status")))
