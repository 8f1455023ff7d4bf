"""Access and identity reviews: SelfSubjectAccessReview (`kubectl auth can-i`),
SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview (`can-i --list`) and
SelfSubjectReview (`kubectl auth whoami`), answered from the same decisions that guard requests."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from localcluster.apiserver import errors
from localcluster.apiserver.rbac import Decision
from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.users import UserInfo

AUTHORIZATION_GROUP = "authorization.k8s.io"
AUTHENTICATION_GROUP = "authentication.k8s.io"
REVIEW_KINDS = {
    (AUTHORIZATION_GROUP, "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    (AUTHORIZATION_GROUP, "subjectaccessreviews"): "SubjectAccessReview",
    (AUTHORIZATION_GROUP, "localsubjectaccessreviews"): "LocalSubjectAccessReview",
    (AUTHORIZATION_GROUP, "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
    (AUTHENTICATION_GROUP, "selfsubjectreviews"): "SelfSubjectReview",
}

Decide = Callable[[UserInfo, Attributes], Decision]
Rules = Callable[[UserInfo, str], tuple[list[Any], list[Any], bool]]


def is_review(attrs: Attributes) -> bool:
    return (
        attrs.resource_request
        and attrs.verb == "create"
        and not attrs.name
        and (attrs.api_group, attrs.resource) in REVIEW_KINDS
    )


def review_attributes(spec: Mapping[str, Any], namespace: str = "") -> Attributes:
    """The Attributes a review's spec asks about; a LocalSubjectAccessReview's namespace wins."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, Mapping):
        return Attributes(
            verb=str(resource.get("verb", "")),
            resource_request=True,
            api_group=str(resource.get("group", "")),
            api_version=str(resource.get("version", "")),
            namespace=namespace or str(resource.get("namespace", "")),
            resource=str(resource.get("resource", "")),
            subresource=str(resource.get("subresource", "")),
            name=str(resource.get("name", "")),
        )
    other = spec.get("nonResourceAttributes")
    if isinstance(other, Mapping):
        return Attributes(verb=str(other.get("verb", "")), path=str(other.get("path", "")))
    raise errors.invalid(
        "SubjectAccessReview",
        "",
        [
            {
                "field": "spec.resourceAttributes",
                "reason": "FieldValueRequired",
                "message": "Required value: exactly one of nonResourceAttributes or "
                "resourceAttributes must be specified",
            }
        ],
        AUTHORIZATION_GROUP,
    )


def spec_user(spec: Mapping[str, Any]) -> UserInfo:
    user = str(spec.get("user", ""))
    groups = tuple(str(g) for g in spec.get("groups") or [])
    if not user and not groups:
        raise errors.invalid(
            "SubjectAccessReview",
            "",
            [
                {
                    "field": "spec.user",
                    "reason": "FieldValueRequired",
                    "message": "Required value: at least one of user or group must be specified",
                }
            ],
            AUTHORIZATION_GROUP,
        )
    extra = {str(k): tuple(str(x) for x in v) for k, v in (spec.get("extra") or {}).items()}
    return UserInfo(user, groups, str(spec.get("uid", "")), extra)


def answer(
    attrs: Attributes,
    body: Mapping[str, Any],
    requester: UserInfo,
    decide: Decide,
    rules: Rules,
) -> dict[str, Any]:
    """The review `body` with its status filled in (the response of a create)."""
    kind = REVIEW_KINDS[(attrs.api_group, attrs.resource)]
    review: dict[str, Any] = copy.deepcopy(dict(body))
    review["apiVersion"] = f"{attrs.api_group}/v1"
    review["kind"] = kind
    review.setdefault("metadata", {})
    spec = review.setdefault("spec", {})
    if kind == "SelfSubjectReview":
        review["status"] = {"userInfo": requester.to_review()}
        return review
    if kind == "SelfSubjectRulesReview":
        resource_rules, other_rules, incomplete = rules(requester, str(spec.get("namespace", "")))
        review["status"] = {
            "resourceRules": resource_rules,
            "nonResourceRules": other_rules,
            "incomplete": incomplete,
        }
        return review
    if kind == "SelfSubjectAccessReview":
        subject = requester
        namespace = ""
    else:
        # As in kube-apiserver, the spec's user is asked about exactly as given.
        subject = spec_user(spec)
        namespace = attrs.namespace if kind == "LocalSubjectAccessReview" else ""
    decision = decide(subject, review_attributes(spec, namespace))
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    review["status"] = status
    return review
