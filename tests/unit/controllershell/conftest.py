from __future__ import annotations

import pytest

from kubeio.clock import ManualClock
from tests.support import FakeKube


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake_kube() -> FakeKube:
    return FakeKube()
