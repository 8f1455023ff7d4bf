"""TokenRequest (`POST .../serviceaccounts/NAME/token`, `kubectl create token`): a signed token
for an existing ServiceAccount, optionally bound to a Pod or Secret."""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping
from typing import Any

from localcluster.apiserver import errors
from localcluster.apiserver.authn import Lookup
from localcluster.apiserver.requestinfo import Attributes
from localcluster.apiserver.tokens import (
    API_AUDIENCES,
    DEFAULT_EXPIRATION_SECONDS,
    MAX_EXPIRATION_SECONDS,
    MIN_EXPIRATION_SECONDS,
    BoundObject,
    TokenIssuer,
)

BOUND_KINDS = {"Pod": "pods", "Secret": "secrets"}


def is_token_request(attrs: Attributes) -> bool:
    return (
        attrs.resource_request
        and attrs.api_group == ""
        and attrs.resource == "serviceaccounts"
        and attrs.subresource == "token"
        and bool(attrs.name and attrs.namespace)
    )


def _invalid(name: str, field: str, message: str) -> errors.StatusError:
    return errors.invalid(
        "TokenRequest",
        name,
        [{"field": field, "reason": "FieldValueInvalid", "message": message}],
        "authentication.k8s.io",
    )


def create_token(
    attrs: Attributes,
    body: Mapping[str, Any],
    issuer: TokenIssuer,
    lookup: Lookup,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    if attrs.verb != "create":
        raise errors.method_not_allowed(
            "the server does not allow this method on the requested resource"
        )
    account = lookup("serviceaccounts", attrs.namespace, attrs.name)
    if account is None:
        raise errors.not_found("serviceaccounts", attrs.name)
    review: dict[str, Any] = copy.deepcopy(dict(body))
    spec = review.setdefault("spec", {})
    seconds = spec.get("expirationSeconds")
    seconds = DEFAULT_EXPIRATION_SECONDS if seconds is None else seconds
    if not isinstance(seconds, int) or seconds < MIN_EXPIRATION_SECONDS:
        raise _invalid(
            attrs.name,
            "spec.expirationSeconds",
            "spec.expirationSeconds: Invalid value: "
            f"{seconds}: may not specify a duration less than 10 minutes",
        )
    if seconds > MAX_EXPIRATION_SECONDS:
        raise _invalid(
            attrs.name,
            "spec.expirationSeconds",
            f"spec.expirationSeconds: Invalid value: {seconds}: may not specify a duration "
            "larger than 2^32 seconds",
        )
    audiences = tuple(str(a) for a in spec.get("audiences") or ()) or API_AUDIENCES
    bound = None
    ref = spec.get("boundObjectRef")
    if isinstance(ref, Mapping) and ref.get("name"):
        kind = str(ref.get("kind", ""))
        if kind not in BOUND_KINDS:
            raise _invalid(
                attrs.name,
                "spec.boundObjectRef.kind",
                f'spec.boundObjectRef.kind: Unsupported value: "{kind}": supported values: '
                '"Pod", "Secret"',
            )
        target = lookup(BOUND_KINDS[kind], attrs.namespace, str(ref["name"]))
        if target is None:
            raise errors.not_found(BOUND_KINDS[kind], str(ref["name"]))
        uid = str(target["metadata"].get("uid", ""))
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.StatusError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {BOUND_KINDS[kind]} "{ref["name"]}": '
                f"the UID in the bound object reference ({ref['uid']}) does not match the UID "
                f"in record. The object might have been deleted and then recreated",
            )
        bound = BoundObject(kind, str(ref["name"]), uid)
    token, expires = issuer.issue(
        attrs.namespace,
        attrs.name,
        str(account["metadata"].get("uid", "")),
        audiences,
        seconds,
        bound,
        now,
    )
    spec["audiences"] = list(audiences)
    spec["expirationSeconds"] = seconds
    review["apiVersion"] = "authentication.k8s.io/v1"
    review["kind"] = "TokenRequest"
    metadata = review.setdefault("metadata", {})
    metadata.update(
        {
            "name": attrs.name,
            "namespace": attrs.namespace,
            "creationTimestamp": (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
    )
    review["status"] = {
        "token": token,
        "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return review
