"""Who is asking: the authenticated user, as kube-apiserver's user.Info carries it."""

from __future__ import annotations

from dataclasses import dataclass, field

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_NAME = "system:anonymous"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ADMIN_NAME = "system:admin"


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False, hash=False)

    def to_review(self) -> dict[str, object]:
        """The `userInfo` of an AdmissionReview or a TokenReview."""
        info: dict[str, object] = {"username": self.name, "groups": list(self.groups)}
        if self.uid:
            info["uid"] = self.uid
        if self.extra:
            info["extra"] = {k: list(v) for k, v in self.extra.items()}
        return info


ADMIN = UserInfo(ADMIN_NAME, (MASTERS, AUTHENTICATED))
ANONYMOUS = UserInfo(ANONYMOUS_NAME, (UNAUTHENTICATED,))


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:NS:NAME`, or None for any other user."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username[len(SERVICE_ACCOUNT_PREFIX) :].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED)
