from __future__ import annotations

import pytest

from kubeio.clock import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
