"""`vcjob jobflow create|list|get|delete|describe` (vcctl jobflow): flow.volcano.sh JobFlows."""

from __future__ import annotations

from shared.models.flow import JOBFLOW_KIND
from vcctl.flowcommands import FlowKind, build_group
from vcctl.render_flows import jobflow_table

JOBFLOW = FlowKind(kind=JOBFLOW_KIND, command="jobflow", words="jobflow", table=jobflow_table)

jobflow_group = build_group(JOBFLOW)
