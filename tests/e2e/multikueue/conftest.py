"""A failed MultiKueue test's report shows each cluster's Jobs and Workloads as the test left them
(the module's `state_of`): what a timed-out wait was waiting on."""

from __future__ import annotations

from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when != "call" or not report.failed or not isinstance(item, pytest.Function):
        return report
    clusters = item.funcargs.get("clusters")
    state_of = getattr(item.module, "state_of", None)
    if clusters is None or state_of is None:
        return report
    try:
        state = str(state_of(clusters))
    except Exception as failed:  # a cluster that cannot answer must not hide the test's failure
        state = f"could not read the clusters: {failed!r}"
    report.sections.append(("clusters' Jobs and Workloads", state))
    return report
