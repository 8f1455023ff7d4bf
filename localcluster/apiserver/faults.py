"""Fault injection: a share of API requests fail (500, 409 on writes) or hang past timeouts."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

FAULT_RATE_ENV = "VCJOB_FAULT_RATE"
HANG_SECONDS = 35.0


@dataclass(frozen=True)
class Fault:
    kind: str  # "error", "conflict" or "hang"


class FaultInjector:
    def __init__(
        self, rate: float = 0.0, seed: int | None = None, hang_seconds: float = HANG_SECONDS
    ) -> None:
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"fault rate must be between 0.0 and 1.0, got {rate}")
        self.rate = rate
        self.hang_seconds = hang_seconds
        self._random = random.Random(seed)

    @classmethod
    def rate_from_env(cls, default: float = 0.0) -> float:
        raw = os.environ.get(FAULT_RATE_ENV)
        if not raw:
            return default
        try:
            return float(raw)
        except ValueError as exc:
            raise ValueError(
                f"{FAULT_RATE_ENV} must be a number between 0 and 1, got {raw!r}"
            ) from exc

    def pick(self, write: bool) -> Fault | None:
        if self.rate <= 0 or self._random.random() >= self.rate:
            return None
        roll = self._random.random()
        if roll < 0.1:
            return Fault("hang")
        if write and roll < 0.45:
            return Fault("conflict")
        return Fault("error")

    def watch_cut_after(self) -> int | None:
        """After how many events a watch stream is cut, or None to leave it alone."""
        if self.rate <= 0 or self._random.random() >= self.rate:
            return None
        return self._random.randint(1, 5)
