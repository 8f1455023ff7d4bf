"""`Impersonate-*` headers (`kubectl --as`, `--as-group`): who is asked for, and what the
requester must be allowed to do for it, as kube-apiserver's impersonation filter checks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from localcluster.apiserver import errors
from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.users import (
    ANONYMOUS_NAME,
    AUTHENTICATED,
    UNAUTHENTICATED,
    UserInfo,
    split_service_account,
)

USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"


@dataclass(frozen=True)
class Impersonation:
    user: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict)


def parse(headers: Sequence[tuple[str, str]]) -> Impersonation | None:
    """The impersonation a request asks for (header names lower-cased), or None."""
    user = ""
    uid = ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for name, value in headers:
        if name == USER_HEADER:
            user = value
        elif name == GROUP_HEADER:
            groups.append(value)
        elif name == UID_HEADER:
            uid = value
        elif name.startswith(EXTRA_PREFIX):
            extra.setdefault(name[len(EXTRA_PREFIX) :], []).append(value)
    if not user:
        if groups or uid or extra:
            raise errors.internal(
                "Internal error occurred: requested impersonation of groups, uid or extra "
                "without impersonating a user"
            )
        return None
    return Impersonation(user, tuple(groups), uid, {k: tuple(v) for k, v in extra.items()})


def required(asked: Impersonation) -> list[Attributes]:
    """What the requester must be authorized for: `impersonate` on users (or serviceaccounts),
    groups, uids and userextras."""
    checks: list[Attributes] = []
    account = split_service_account(asked.user)
    if account is not None:
        checks.append(
            Attributes(
                "impersonate",
                resource_request=True,
                namespace=account[0],
                resource="serviceaccounts",
                name=account[1],
            )
        )
    else:
        checks.append(
            Attributes("impersonate", resource_request=True, resource="users", name=asked.user)
        )
    for group in asked.groups:
        checks.append(
            Attributes("impersonate", resource_request=True, resource="groups", name=group)
        )
    if asked.uid:
        checks.append(
            Attributes(
                "impersonate",
                resource_request=True,
                api_group=AUTHENTICATION_GROUP,
                resource="uids",
                name=asked.uid,
            )
        )
    for key, values in asked.extra.items():
        for value in values:
            checks.append(
                Attributes(
                    "impersonate",
                    resource_request=True,
                    api_group=AUTHENTICATION_GROUP,
                    resource="userextras",
                    subresource=key,
                    name=value,
                )
            )
    return checks


def impersonated_user(asked: Impersonation) -> UserInfo:
    """The user a request runs as: ServiceAccounts get their groups when none are asked for,
    and everyone but `system:anonymous` is `system:authenticated`."""
    groups = list(asked.groups)
    account = split_service_account(asked.user)
    if account is not None and not groups:
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{account[0]}"]
    implied = UNAUTHENTICATED if asked.user == ANONYMOUS_NAME else AUTHENTICATED
    if implied not in groups:
        groups.append(implied)
    return UserInfo(asked.user, tuple(groups), asked.uid, dict(asked.extra))
