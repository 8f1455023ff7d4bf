"""Authentication: who a request's credentials name.

The kubeconfig's token is the admin (`system:masters`); a ServiceAccount token (TokenRequest,
projected into pods) is its ServiceAccount, while that ServiceAccount (and the Pod or Secret the
token is bound to) still exists with the uid the token names; no credentials at all is
`system:anonymous`. Anything else is 401 Unauthorized, as kube-apiserver answers.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Any

from localcluster.apiserver import errors
from localcluster.apiserver.tokens import TokenClaims, TokenIssuer
from localcluster.apiserver.users import (
    ADMIN,
    ANONYMOUS,
    UserInfo,
    service_account_groups,
    service_account_username,
)

# Looks an object up by (resource plural, namespace, name) in the core group.
Lookup = Callable[[str, str, str], Mapping[str, Any] | None]


def unauthorized() -> errors.StatusError:
    return errors.StatusError(401, "Unauthorized", "Unauthorized")


def bearer_token(authorization: str) -> str | None:
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def _uid(obj: Mapping[str, Any] | None) -> str | None:
    if obj is None:
        return None
    return str((obj.get("metadata") or {}).get("uid", ""))


def claims_user(claims: TokenClaims, lookup: Lookup) -> UserInfo | None:
    """The ServiceAccount user of verified claims, or None when what they name is gone."""
    account_uid = _uid(lookup("serviceaccounts", claims.namespace, claims.service_account))
    if account_uid is None or (
        claims.service_account_uid and account_uid != claims.service_account_uid
    ):
        return None
    extra: dict[str, tuple[str, ...]] = {}
    if claims.bound is not None:
        plural = "pods" if claims.bound.kind == "Pod" else "secrets"
        bound_uid = _uid(lookup(plural, claims.namespace, claims.bound.name))
        if bound_uid is None or (claims.bound.uid and bound_uid != claims.bound.uid):
            return None
        if claims.bound.kind == "Pod":
            extra["authentication.kubernetes.io/pod-name"] = (claims.bound.name,)
            extra["authentication.kubernetes.io/pod-uid"] = (claims.bound.uid,)
    if claims.token_id:
        extra["authentication.kubernetes.io/credential-id"] = (f"JTI={claims.token_id}",)
    return UserInfo(
        service_account_username(claims.namespace, claims.service_account),
        service_account_groups(claims.namespace),
        account_uid,
        extra,
    )


class Authenticator:
    def __init__(self, admin_token: str, issuer: TokenIssuer, lookup: Lookup) -> None:
        self._admin_token = admin_token
        self.issuer = issuer
        self._lookup = lookup

    def authenticate(self, authorization: str | None) -> UserInfo:
        if authorization is None:
            return ANONYMOUS
        token = bearer_token(authorization)
        if token is None:
            raise unauthorized()
        if hmac.compare_digest(token.encode(), self._admin_token.encode()):
            return ADMIN
        claims = self.issuer.verify(token)
        user = claims_user(claims, self._lookup) if claims is not None else None
        if user is None:
            raise unauthorized()
        return user
