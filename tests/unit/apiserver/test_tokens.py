"""ServiceAccount tokens: what is signed, what verifies, and who it authenticates as."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from localcluster.apiserver import errors
from localcluster.apiserver.authn import Authenticator, claims_user
from localcluster.apiserver.requestinfo import request_attributes
from localcluster.apiserver.tokenrequest import create_token
from localcluster.apiserver.tokens import BoundObject, TokenIssuer, load_or_create_key
from localcluster.apiserver.users import ADMIN, ANONYMOUS

OBJECTS: dict[tuple[str, str, str], dict[str, Any]] = {
    ("serviceaccounts", "ns", "sa"): {"metadata": {"name": "sa", "uid": "sa-uid"}},
    ("pods", "ns", "p"): {"metadata": {"name": "p", "uid": "pod-uid"}},
}


def lookup(plural: str, namespace: str, name: str) -> dict[str, Any] | None:
    return OBJECTS.get((plural, namespace, name))


@pytest.fixture(scope="module")
def issuer(tmp_path_factory: pytest.TempPathFactory) -> TokenIssuer:
    directory = tmp_path_factory.mktemp("pki")
    key = load_or_create_key(directory)
    assert load_or_create_key(directory).private_numbers() == key.private_numbers()
    return TokenIssuer(key)


def test_token_authenticates_as_its_service_account(issuer: TokenIssuer) -> None:
    token, _ = issuer.issue("ns", "sa", "sa-uid", bound=BoundObject("Pod", "p", "pod-uid"))
    user = Authenticator("admin", issuer, lookup).authenticate(f"Bearer {token}")
    assert user.name == "system:serviceaccount:ns:sa"
    assert user.groups == (
        "system:serviceaccounts",
        "system:serviceaccounts:ns",
        "system:authenticated",
    )
    assert user.extra["authentication.kubernetes.io/pod-name"] == ("p",)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"service_account_uid": "recreated"},
        {"bound": BoundObject("Pod", "p", "old-pod")},
        {"bound": BoundObject("Pod", "gone", "x")},
        {"audiences": ("vault",)},
        {"now": dt.datetime.now(dt.UTC) - dt.timedelta(hours=2)},
    ],
)
def test_tokens_that_do_not_authenticate(issuer: TokenIssuer, kwargs: dict[str, Any]) -> None:
    arguments: dict[str, Any] = {"service_account_uid": "sa-uid", **kwargs}
    token, _ = issuer.issue("ns", "sa", **arguments)
    with pytest.raises(errors.StatusError) as failure:
        Authenticator("admin", issuer, lookup).authenticate(f"Bearer {token}")
    assert failure.value.code == 401


def test_admin_anonymous_and_garbage(issuer: TokenIssuer) -> None:
    authenticator = Authenticator("admin", issuer, lookup)
    assert authenticator.authenticate("Bearer admin") == ADMIN
    assert authenticator.authenticate(None) == ANONYMOUS
    for header in ("Bearer nope", "Basic abc", "Bearer "):
        with pytest.raises(errors.StatusError):
            authenticator.authenticate(header)


def test_token_request(issuer: TokenIssuer) -> None:
    attrs = request_attributes("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", {})
    spec = {
        "audiences": ["a"],
        "expirationSeconds": 700,
        "boundObjectRef": {"kind": "Pod", "name": "p"},
    }
    review = create_token(attrs, {"spec": spec}, issuer, lookup)
    assert review["kind"] == "TokenRequest"
    assert review["spec"]["expirationSeconds"] == 700
    claims = issuer.verify(review["status"]["token"], ("a",))
    assert claims is not None and claims.bound == BoundObject("Pod", "p", "pod-uid")
    assert claims_user(claims, lookup) is not None


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"spec": {"expirationSeconds": 60}}, 422),
        ({"spec": {"boundObjectRef": {"kind": "Pod", "name": "gone"}}}, 404),
        ({"spec": {"boundObjectRef": {"kind": "Pod", "name": "p", "uid": "other"}}}, 409),
        ({"spec": {"boundObjectRef": {"kind": "Node", "name": "n"}}}, 422),
    ],
)
def test_token_request_errors(issuer: TokenIssuer, body: dict[str, Any], code: int) -> None:
    attrs = request_attributes("POST", "/api/v1/namespaces/ns/serviceaccounts/sa/token", {})
    with pytest.raises(errors.StatusError) as failure:
        create_token(attrs, body, issuer, lookup)
    assert failure.value.code == code


def test_unknown_service_account(issuer: TokenIssuer, tmp_path: Path) -> None:
    attrs = request_attributes("POST", "/api/v1/namespaces/ns/serviceaccounts/nobody/token", {})
    with pytest.raises(errors.StatusError) as failure:
        create_token(attrs, {}, issuer, lookup)
    assert failure.value.code == 404
