"""`vcjob jobtemplate create|list|get|delete|describe` (vcctl jobtemplate): flow.volcano.sh
JobTemplates, the Job specs JobFlows run."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from shared.models.flow import JOBTEMPLATE_KIND
from vcctl.flowcommands import FlowKind, build_group
from vcctl.render_flows import jobtemplate_table


def _table(templates: Sequence[dict[str, Any]], now: datetime) -> str:
    return jobtemplate_table(templates)  # vcctl shows no age for templates


JOBTEMPLATE = FlowKind(
    kind=JOBTEMPLATE_KIND, command="jobtemplate", words="job template", table=_table
)

jobtemplate_group = build_group(JOBTEMPLATE)
