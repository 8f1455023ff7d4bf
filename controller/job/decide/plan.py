"""`reconcile(observed, settings) -> Plan`: every decision about one job, as a pure function.

Order within one reconcile (each step a module of its own: a function of the round's inputs and
the draft so far, returning the next draft; both frozen, `controller.job.decide.steps`):
1. a new job becomes Pending;
2. a job past its activeDeadlineSeconds, or one that can never run, fails (`actions`);
3. Commands are consumed and lifecycle events derived and matched to policies; delayed actions
   start, fire or are cancelled (`events`, `timers`);
4. the most decisive due action runs through the phase table (`actions`, `state`);
5. the current phase is carried out: a restart, the pods drained or cleaned up (`phasesync`), or
   volumes, the PodGroup and pods and the phase the counts call for (`activesync`);
6. the status, the memory for the next round and when to look again, composed with every effect
   into the `Plan` (`outcome`, `statuscodec`).

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
    if podview.metadata(seen.raw_job).get("deletionTimestamp"):
        # The garbage collector removes the children; nothing may be created now.
        return Plan(memory=dict(draft.memory))
    draft = decide(seen, draft)
    if draft.decided:
        draft = steps.keep_only_the_decision(draft)
    else:
        draft = phasesync.sync(seen, draft)
        if draft.status.phase in state.TERMINAL and not draft.transitioned:
            draft = phasesync.finish(seen, draft)
        draft = steps.add(draft, phasesync.kueue_effects(seen))
    return outcome.finalize(seen, draft)


def decide(seen: steps.JobRound, draft: steps.Draft) -> steps.Draft:
    """Steps 1 to 4: a new job becomes Pending; else the deadline, a job that can never run,
    then Commands and policies."""
    if draft.status.initial_phase is None:
        # A new job: Pending is written first; commands and policies act from the next
        # reconcile on.
        draft, _ = steps.set_phase(
            seen,
            draft,
            JobPhase.PENDING,
            "JobCreated",
            "the job was accepted and waits for its pods",
        )
        return draft
    draft, failed = actions.deadline_passed(seen, draft)
    if failed:
        return draft
    draft, failed = actions.unrecoverable_failure(seen, draft)
    if failed:
        return draft
    # Neither failed the job: commands and policies decide.
    decisions, consumed = events.from_commands(seen)
    draft = steps.add(draft, consumed)
    phase = draft.status.phase
    if (phase in state.ACTIVE and not seen.suspended) or phase == JobPhase.RESTARTING:
        draft, matched = events.match(seen, draft)
        decisions += matched
    else:
        draft = draft._replace(timers={})
    decision = actions.choose(decisions)
    return draft if decision is None else actions.execute(seen, draft, decision, decisions)
