"""The garbage collector's decision for an object with owners, as kube's attemptToDeleteItem."""

from __future__ import annotations

import pytest

from localcluster.controllers.gc import Decision, decide_for_dependent

A = {"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "ua"}
B = {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": "ub"}

CASES = [
    pytest.param((A,), {"ua": "solid"}, False, Decision(), id="living owner: keep"),
    pytest.param(
        (A,),
        {"ua": "gone"},
        False,
        Decision(delete_with="Background"),
        id="owner gone: delete in the background",
    ),
    pytest.param(
        (A,),
        {"ua": "waiting"},
        False,
        Decision(delete_with="Background"),
        id="owner deleting in the foreground, no dependents: delete in the background",
    ),
    pytest.param(
        (A,),
        {"ua": "waiting"},
        True,
        Decision(delete_with="Foreground"),
        id="owner deleting in the foreground, with dependents: delete in the foreground",
    ),
    pytest.param(
        (A, B),
        {"ua": "gone", "ub": "solid"},
        False,
        Decision(keep_references=[B]),
        id="one owner gone, one living: drop the gone reference",
    ),
    pytest.param(
        (A, B),
        {"ua": "waiting", "ub": "solid"},
        True,
        Decision(keep_references=[B]),
        id="one owner waiting, one living: drop the waiting reference",
    ),
    pytest.param(
        (A, B),
        {"ua": "gone", "ub": "gone"},
        False,
        Decision(delete_with="Background"),
        id="all owners gone: delete",
    ),
]


@pytest.mark.parametrize(("owners", "states", "has_dependents", "expected"), CASES)
def test_decide_for_dependent(
    owners: tuple[dict[str, str], ...],
    states: dict[str, str],
    has_dependents: bool,
    expected: Decision,
) -> None:
    assert decide_for_dependent(owners, states, has_dependents=has_dependents) == expected
