"""`reconcile(observed, settings) -> Plan`: every decision about one job, as a pure function.

Order within one reconcile (each step a module of its own, over the round's inputs and the plan
being drafted, `controller.job.decide.steps`):
1. a new job becomes Pending;
2. a job past its activeDeadlineSeconds, or one that can never run, fails (`actions`);
3. Commands are consumed and lifecycle events derived and matched to policies; delayed actions
   start, fire or are cancelled (`events`, `timers`);
4. the most decisive due action runs through the phase table (`actions`, `state`);
5. the current phase is carried out: a restart, the pods drained or cleaned up (`phasesync`), or
   volumes, the PodGroup and pods and the phase the counts call for (`activesync`);
6. the status, the memory for the next round and when to look again (`outcome`, `statuscodec`).

`Plan.memory` (handed back as `Observed.memory`; losing it is safe, only timers restart) is a
`controller.job.decide.memory.PlannerMemory`.
"""

from __future__ import annotations

from controller.job.decide import actions, events, outcome, phasesync, podview, state, steps
from controller.job.decide.model import Observed, Plan, PlanSettings
from shared.models import JobPhase


def reconcile(observed: Observed, settings: PlanSettings | None = None) -> Plan:
    """Plan everything for one job. Pure: no clock, no network, no randomness (the ssh key pair
    comes with `observed`)."""
    seen, draft = steps.start(observed, settings or PlanSettings())
    s = draft.status
    if podview.metadata(seen.raw_job).get("deletionTimestamp"):
        # The garbage collector removes the children; nothing may be created now.
        draft.plan.memory = dict(draft.memory)
        return draft.plan
    if s.initial_phase is None:
        # A new job: Pending is written first; commands and policies act from the next
        # reconcile on.
        steps.set_phase(
            seen,
            draft,
            JobPhase.PENDING,
            "JobCreated",
            "the job was accepted and waits for its pods",
        )
    elif not (actions.deadline_passed(seen, draft) or actions.unrecoverable_failure(seen, draft)):
        # Neither failed the job: commands and policies decide.
        decisions, consumed = events.from_commands(seen)
        steps.add(draft, consumed)
        if (s.phase in state.ACTIVE and not seen.suspended) or s.phase == JobPhase.RESTARTING:
            decisions += events.match(seen, draft)
        else:
            draft.timers = {}
        decision = actions.choose(decisions)
        if decision is not None:
            actions.execute(seen, draft, decision, decisions)

    if draft.decided:
        steps.keep_only_the_decision(draft)
    else:
        phasesync.sync(seen, draft)
        if s.phase in state.TERMINAL and not draft.transitioned:
            phasesync.finish(seen, draft)
        steps.add(draft, phasesync.kueue_effects(seen))
    outcome.finalize(seen, draft)
    return draft.plan
