"""Access and identity reviews answered from the authorizer's decisions."""

from __future__ import annotations

from typing import Any

import pytest

from localcluster.apiserver import errors
from localcluster.apiserver.rbac import Decision
from localcluster.apiserver.requestinfo import Attributes, request_attributes
from localcluster.apiserver.reviews import answer, is_review
from localcluster.apiserver.users import UserInfo

ME = UserInfo("me", ("devs", "system:authenticated"))
asked: list[tuple[UserInfo, Attributes]] = []


def decide(user: UserInfo, attrs: Attributes) -> Decision:
    asked.append((user, attrs))
    return Decision(attrs.verb == "get", "RBAC: allowed by test" if attrs.verb == "get" else "")


def rules(user: UserInfo, namespace: str) -> tuple[list[Any], list[Any], bool]:
    return [{"verbs": ["get"], "resources": ["pods"]}], [], False


def review(path: str, body: dict[str, Any]) -> dict[str, Any]:
    attrs = request_attributes("POST", path, {})
    assert is_review(attrs)
    return answer(attrs, body, ME, decide, rules)


def test_self_subject_access_review_asks_about_the_requester() -> None:
    spec = {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "ns"}}
    done = review("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {"spec": spec})
    assert done["status"] == {"allowed": True, "reason": "RBAC: allowed by test"}
    user, attrs = asked[-1]
    assert user == ME and (attrs.namespace, attrs.resource) == ("ns", "pods")


def test_subject_access_review_asks_about_the_spec_user() -> None:
    spec = {"user": "bob", "groups": ["g"], "nonResourceAttributes": {"verb": "post", "path": "/x"}}
    done = review("/apis/authorization.k8s.io/v1/subjectaccessreviews", {"spec": spec})
    assert done["status"] == {"allowed": False}
    user, attrs = asked[-1]
    assert (user.name, user.groups, attrs.path) == ("bob", ("g",), "/x")


def test_local_review_uses_the_path_namespace() -> None:
    spec = {
        "user": "bob",
        "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "x"},
    }
    review("/apis/authorization.k8s.io/v1/namespaces/ns/localsubjectaccessreviews", {"spec": spec})
    assert asked[-1][1].namespace == "ns"


def test_rules_review_and_whoami() -> None:
    done = review(
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", {"spec": {"namespace": "ns"}}
    )
    assert done["status"]["resourceRules"] == [{"verbs": ["get"], "resources": ["pods"]}]
    whoami = review("/apis/authentication.k8s.io/v1/selfsubjectreviews", {})
    assert whoami["status"]["userInfo"] == {
        "username": "me",
        "groups": ["devs", "system:authenticated"],
    }


@pytest.mark.parametrize(
    "spec",
    [
        {"resourceAttributes": {"verb": "get"}},  # neither user nor groups
        {"user": "bob"},  # no attributes
    ],
)
def test_invalid_subject_access_reviews(spec: dict[str, Any]) -> None:
    with pytest.raises(errors.StatusError) as failure:
        review("/apis/authorization.k8s.io/v1/subjectaccessreviews", {"spec": spec})
    assert failure.value.code == 422
