"""What `--as`/`--as-group` ask for and what the requester must be allowed to do for it."""

from __future__ import annotations

import pytest

from localcluster.apiserver import errors
from localcluster.apiserver.impersonation import Impersonation, impersonated_user, parse, required


def test_parse_collects_repeated_groups() -> None:
    asked = parse(
        [("impersonate-user", "bob"), ("impersonate-group", "a"), ("impersonate-group", "b")]
    )
    assert asked == Impersonation("bob", ("a", "b"))


def test_no_headers_is_no_impersonation() -> None:
    assert parse([("authorization", "Bearer x")]) is None


def test_groups_without_a_user_fail() -> None:
    with pytest.raises(errors.StatusError):
        parse([("impersonate-group", "a")])


def test_service_account_checks_and_groups() -> None:
    asked = Impersonation("system:serviceaccount:ns:sa")
    (check,) = required(asked)
    assert (check.verb, check.resource, check.namespace, check.name) == (
        "impersonate",
        "serviceaccounts",
        "ns",
        "sa",
    )
    user = impersonated_user(asked)
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:ns",
        "system:authenticated",
    )


def test_user_and_group_checks() -> None:
    checks = required(Impersonation("bob", ("devs",)))
    assert [(c.resource, c.name) for c in checks] == [("users", "bob"), ("groups", "devs")]
    assert impersonated_user(Impersonation("bob", ("devs",))).groups == (
        "devs",
        "system:authenticated",
    )
    assert impersonated_user(Impersonation("system:anonymous")).groups == (
        "system:unauthenticated",
    )
