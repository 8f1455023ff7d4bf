"""A seeded GPU-job trace drawn from the distributions of Microsoft's Philly cluster.

    .venv/bin/python bench/philly_trace.py [--jobs 60] [--seed 14] [--output FILE]

Source: the Philly trace (Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN
Training Workloads", USENIX ATC '19), in the parametric form Gavel (Narayanan et al., OSDI '20)
fitted to it for its simulations:

- GPUs per job: 1 with probability 0.70, 2 with 0.10, 4 with 0.15, 8 with 0.05;
- duration: 10^x minutes, x uniform on [1.5, 3] with probability 0.8 and on [3, 4] with 0.2
  (32 minutes to 7 days: the long tail of Philly's job run times);
- arrivals: a Poisson process.

Scaling, so that a replay on the local cluster takes minutes: a job of d minutes runs
2·√d seconds (32 min → 11 s, 16 h → 62 s, 7 days → 200 s). The square root keeps the order
of jobs and a 18x spread between the shortest and the longest instead of 316x. Arrivals come at
`--rate` jobs per second (default 0.35: 60 jobs in about three minutes). The checked-in trace
(seed 14) asks for 3716 GPU-seconds over its 185 s of arrivals: about 63 % of 32 GPUs on average,
with bursts beyond them, so that GPUs idle at times. `philly-60-busy.json` is the same draw at
`--rate 0.6`: its 108 s of arrivals ask for 107 % of the GPUs, so that jobs queue;
`philly-60-medium.json` is the same draw at `--rate 0.45`: its 144 s of arrivals ask for 81 %, so
that some jobs wait in the bursts; `philly-60-heavy.json` is the same draw at `--rate 1.0`: its 65 s
of arrivals ask for 180 %, so that jobs wait even with the autoscaler.

Elastic or rigid is not in the Philly trace: each job is elastic with probability `--elastic`
(default 0.5). An elastic job asks for its Philly GPU count as `replicas` and `minReplicas` (it
never gets less than it asked for) and may grow to `maxReplicas` = min(4 x that, 16). Every
worker is one pod with one GPU. A job's work is what its GPUs do in its scaled duration:
duration x replicas^0.9 replica-seconds (the work model's default speed-up, `sim.vcjob.io/work`).

Resize pause: every resize restarts an elastic job's workers. In real time that costs about
RESTART_SECONDS = 60 s with PyTorch elastic: stop the workers and agree on the new world size
(rendezvous, ~10 s), load the last checkpoint (~20 s), redo the work done since it (~30 s: half of
a checkpoint interval of about a minute). A job's pause is that cost compressed like its duration
(a job of d minutes runs 2·√d s, a factor of 30·√d), but at least PAUSE_FLOOR = 0.5 s (five
kubelet ticks, below which the simulated restart is not resolved). Since every Philly job lasts at
least 32 minutes, the compressed cost is at most 0.35 s: every job gets the floor.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from typing import TypedDict

GPU_DEMAND = ((1, 0.70), (2, 0.10), (4, 0.15), (8, 0.05))
SHORT_PROBABILITY = 0.8
SHORT_EXPONENT = (1.5, 3.0)
LONG_EXPONENT = (3.0, 4.0)
SECONDS_PER_SQRT_MINUTE = 2.0
MAX_REPLICAS = 16
ALPHA = 0.9
RESTART_SECONDS = 60.0
PAUSE_FLOOR = 0.5
TRACE = Path(__file__).resolve().parent / "traces" / "philly-60.json"


class TraceJob(TypedDict):
    name: str
    submit: float  # seconds after the replay starts
    gpus: int  # replicas (and minReplicas of an elastic job); one GPU per worker
    philly_minutes: float  # the drawn, unscaled duration
    seconds: float  # the scaled duration at `gpus` workers
    elastic: bool
    max_replicas: int  # == gpus for a rigid job
    work: float  # replica-seconds
    resize_pause: float  # seconds without progress after each resize (sim.vcjob.io/resize-pause)


def gpu_demand(rng: random.Random) -> int:
    draw, total = rng.random(), 0.0
    for gpus, probability in GPU_DEMAND:
        total += probability
        if draw < total:
            return gpus
    return GPU_DEMAND[-1][0]


def philly_minutes(rng: random.Random) -> float:
    low, high = SHORT_EXPONENT if rng.random() < SHORT_PROBABILITY else LONG_EXPONENT
    return float(10 ** rng.uniform(low, high))


def scaled_seconds(minutes: float) -> float:
    """Replay seconds for a job of `minutes` in the trace (see the module's docstring)."""
    return round(SECONDS_PER_SQRT_MINUTE * math.sqrt(minutes), 1)


def work_for(seconds: float, replicas: int, alpha: float = ALPHA) -> float:
    """Replica-seconds that `replicas` workers finish in `seconds` with speed-up n^alpha."""
    return round(seconds * replicas**alpha, 1)


def resize_pause(minutes: float) -> float:
    """A real restart of RESTART_SECONDS compressed like a job of `minutes`, at least the floor."""
    compression = 60.0 * minutes / (SECONDS_PER_SQRT_MINUTE * math.sqrt(minutes))
    return max(PAUSE_FLOOR, round(RESTART_SECONDS / compression, 2))


def generate(
    jobs: int, seed: int, rate: float = 0.35, elastic_share: float = 0.5
) -> list[TraceJob]:
    rng = random.Random(seed)
    trace: list[TraceJob] = []
    clock = 0.0
    for index in range(jobs):
        gpus = gpu_demand(rng)
        minutes = philly_minutes(rng)
        seconds = scaled_seconds(minutes)
        elastic = rng.random() < elastic_share
        trace.append(
            TraceJob(
                name=f"j{index:02d}",
                submit=round(clock, 1),
                gpus=gpus,
                philly_minutes=round(minutes, 1),
                seconds=seconds,
                elastic=elastic,
                max_replicas=min(4 * gpus, MAX_REPLICAS) if elastic else gpus,
                work=work_for(seconds, gpus),
                resize_pause=resize_pause(minutes),
            )
        )
        clock += rng.expovariate(rate)
    return trace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=60)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--rate", type=float, default=0.35, help="arrivals per second")
    parser.add_argument("--elastic", type=float, default=0.5, help="share of elastic jobs")
    parser.add_argument("--output", type=Path, default=TRACE)
    args = parser.parse_args()
    trace = generate(args.jobs, args.seed, args.rate, args.elastic)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(trace, indent=1) + "\n")
    gpu_seconds = sum(job["gpus"] * job["seconds"] for job in trace)
    print(f"wrote {args.output}: {len(trace)} jobs over {trace[-1]['submit']:.0f} s")
    print(f"GPU-seconds at requested sizes: {gpu_seconds:.0f}")


if __name__ == "__main__":
    main()
