"""The range of each field of a CronJob schedule, checked as Kubernetes' CronJob validation does
(robfig/cron's parser), whatever the cron library underneath admits."""

from __future__ import annotations

import pytest

from shared.cronschedule import ScheduleError, field_range_problems, parse_schedule

ACCEPTED = [
    "* * * * *",
    "0-59 0-23 1-31 1-12 0-6",
    "*/5 * * * *",
    "*/61 * * * *",  # a step past the range matches only the first value
    "5/15 * * * *",
    "0 9 * JAN-MAR MON-FRI",
    "0 9 * jan sun",
    "? ? ? ? ?",
    "1,,2 * * * *",
    "0 0 1,15 * *",
]

REFUSED = {
    "61 * * * *": ["minute: end of range (61) above maximum (59): 61"],
    "1,61 * * * *": ["minute: end of range (61) above maximum (59): 61"],
    "0-60 * * * *": ["minute: end of range (60) above maximum (59): 0-60"],
    "* 24 * * *": ["hour: end of range (24) above maximum (23): 24"],
    "* * 0 * *": ["day of month: beginning of range (0) below minimum (1): 0"],
    "* * 32 * *": ["day of month: end of range (32) above maximum (31): 32"],
    "* * * 0 *": ["month: beginning of range (0) below minimum (1): 0"],
    "* * * 13 *": ["month: end of range (13) above maximum (12): 13"],
    "* * * * 7": ["day of week: end of range (7) above maximum (6): 7"],
    "5-1 * * * *": ["minute: beginning of range (5) beyond end of range (1): 5-1"],
    "61/5 * * * *": ["minute: beginning of range (61) beyond end of range (59): 61/5"],
    "*/0 * * * *": ["minute: step of range should be a positive number: */0"],
    "1-2-3 * * * *": ["minute: too many hyphens: 1-2-3"],
    "1/2/3 * * * *": ["minute: too many slashes: 1/2/3"],
    "MON * * * *": ["minute: failed to parse int from MON: MON"],
    "* * * * -1": ["day of week: failed to parse int from : -1"],
    "0 24 0 13 *": [
        "hour: end of range (24) above maximum (23): 24",
        "day of month: beginning of range (0) below minimum (1): 0",
        "month: end of range (13) above maximum (12): 13",
    ],
    "* * * *": ["expected exactly 5 fields, found 4: * * * *"],
}


@pytest.mark.parametrize("expression", ACCEPTED)
def test_in_range(expression: str) -> None:
    assert field_range_problems(expression) == []
    parse_schedule(expression)


@pytest.mark.parametrize(("expression", "problems"), list(REFUSED.items()))
def test_out_of_range(expression: str, problems: list[str]) -> None:
    assert field_range_problems(expression) == problems
    with pytest.raises(ScheduleError):
        parse_schedule(expression)
