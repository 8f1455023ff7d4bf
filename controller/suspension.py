"""Whether a job is suspended now: its run clock (`spec.activeDeadlineSeconds`) stops then."""

from __future__ import annotations

from typing import Final

from shared.models import Job, JobPhase

# Volcano suspends a job with the AbortJob command (`vcjob job suspend`): Aborting, then Aborted,
# until a ResumeJob command.
SUSPENDED_PHASES: Final = frozenset({JobPhase.ABORTING, JobPhase.ABORTED})


def is_suspended(job: Job, phase: JobPhase) -> bool:
    """The one decision of "is the job suspended now", for every rule that depends on it."""
    del job  # the spec does not suspend a job yet; the phase alone decides
    return phase in SUSPENDED_PHASES
