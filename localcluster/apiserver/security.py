"""The API server's front door: authenticate, impersonate, authorize, audit.

Every request passes `admit` before it is routed, as in kube-apiserver's filter chain; the
requests that are answered here rather than by a resource's storage (access reviews and
TokenRequests) go through `answer`. `record` writes the audit line once the status is known.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from localcluster.apiserver import errors, impersonation, rbac, reviews, tokenrequest
from localcluster.apiserver.audit import AuditLog, audit_record
from localcluster.apiserver.authn import Authenticator
from localcluster.apiserver.rbac import Decision, Policy
from localcluster.apiserver.requestinfo import Attributes, request_attributes
from localcluster.apiserver.storage import Store
from localcluster.apiserver.tokens import TokenIssuer
from localcluster.apiserver.users import ADMIN, UserInfo

RBAC = rbac.RBAC_GROUP
UNKNOWN = UserInfo("")


@dataclass
class RequestContext:
    attrs: Attributes
    user: UserInfo = UNKNOWN
    impersonator: UserInfo | None = None


def forbidden(user: UserInfo, attrs: Attributes, reason: str) -> errors.StatusError:
    details: dict[str, Any] = {}
    if attrs.resource_request and attrs.resource:
        details = {"kind": attrs.resource}
        if attrs.name:
            details["name"] = attrs.name
        if attrs.api_group:
            details["group"] = attrs.api_group
    return errors.StatusError(
        403, "Forbidden", rbac.forbidden_message(user, attrs, reason), details or None
    )


def _header(headers: Sequence[tuple[str, str]], name: str) -> str | None:
    return next((value for key, value in headers if key == name), None)


class Security:
    def __init__(
        self,
        store: Store,
        issuer: TokenIssuer,
        admin_token: str,
        audit: AuditLog | None = None,
    ) -> None:
        self.store = store
        self.issuer = issuer
        self.audit = audit
        self.authenticator = Authenticator(admin_token, issuer, self.lookup)

    def lookup(self, plural: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.store.get(("", plural), namespace, name)

    def policy(self) -> Policy:
        cluster_roles = {o["metadata"]["name"]: o for o in self.store.list((RBAC, "clusterroles"))}
        roles = {
            (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
            for o in self.store.list((RBAC, "roles"))
        }
        return Policy(
            cluster_roles,
            roles,
            self.store.list((RBAC, "clusterrolebindings")),
            self.store.list((RBAC, "rolebindings")),
        )

    def decide(self, user: UserInfo, attrs: Attributes) -> Decision:
        if ADMIN.groups[0] in user.groups:
            return Decision(True, "")
        return rbac.authorize(user, attrs, self.policy())

    def rules(self, user: UserInfo, namespace: str) -> tuple[list[Any], list[Any], bool]:
        resource_rules, other_rules, incomplete = rbac.rules_for(user, namespace, self.policy())
        return list(resource_rules), list(other_rules), incomplete

    # -- per request -------------------------------------------------------------------------

    @staticmethod
    def context(method: str, path: str, query: dict[str, str]) -> RequestContext:
        return RequestContext(request_attributes(method, path, query))

    def admit(self, context: RequestContext, headers: Sequence[tuple[str, str]]) -> None:
        """Fill in who asks, or raise 401/403 as kube-apiserver would."""
        requester = self.authenticator.authenticate(_header(headers, "authorization"))
        context.user = requester
        asked = impersonation.parse(headers)
        if asked is not None:
            for check in impersonation.required(asked):
                decision = self.decide(requester, check)
                if not decision.allowed:
                    raise forbidden(requester, check, decision.reason)
            context.impersonator = requester
            context.user = impersonation.impersonated_user(asked)
        decision = self.decide(context.user, context.attrs)
        if not decision.allowed:
            raise forbidden(context.user, context.attrs, decision.reason)

    def answer(self, context: RequestContext, body: bytes) -> dict[str, Any] | None:
        """The response body of a request answered here (reviews, tokens), else None."""
        attrs = context.attrs
        if not (reviews.is_review(attrs) or tokenrequest.is_token_request(attrs)):
            return None
        try:
            document = json.loads(body or b"{}")
        except ValueError as exc:
            raise errors.bad_request(f"invalid request body: {exc}") from exc
        if not isinstance(document, dict):
            raise errors.bad_request("the request body must be a JSON object")
        if tokenrequest.is_token_request(attrs):
            return tokenrequest.create_token(attrs, document, self.issuer, self.lookup)
        return reviews.answer(attrs, document, context.user, self.decide, self.rules)

    def record(self, context: RequestContext, code: int) -> None:
        if self.audit is not None:
            self.audit.write(audit_record(context.user, context.attrs, code, context.impersonator))
