"""ServiceAccount tokens: signed JWTs with kube-apiserver's claims, issued by TokenRequest.

A token names its ServiceAccount (and the Pod or Secret it is bound to) by name and uid; it is
valid while it is unexpired, carries an audience the API server accepts, and the objects it names
still exist with the same uids, as kube-apiserver checks. The signing key lives beside the
serving certificate so that a restart with `--data-dir` keeps issued tokens valid.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
KEY_FILE = "sa.key"
ALGORITHM = "RS256"
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 2**32


@dataclass(frozen=True)
class BoundObject:
    kind: str  # Pod or Secret
    name: str
    uid: str


@dataclass(frozen=True)
class TokenClaims:
    namespace: str
    service_account: str
    service_account_uid: str
    audiences: tuple[str, ...]
    expires: dt.datetime
    bound: BoundObject | None
    token_id: str


def load_or_create_key(directory: Path) -> rsa.RSAPrivateKey:
    path = directory / KEY_FILE
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
        if isinstance(key, rsa.RSAPrivateKey):
            return key
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    directory.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    temporary.chmod(0o600)
    temporary.replace(path)
    return key


def claims_document(claims: TokenClaims, now: dt.datetime) -> dict[str, Any]:
    """The JWT body kube-apiserver signs for a bound ServiceAccount token."""
    kubernetes: dict[str, Any] = {
        "namespace": claims.namespace,
        "serviceaccount": {"name": claims.service_account, "uid": claims.service_account_uid},
    }
    if claims.bound is not None:
        kubernetes[claims.bound.kind.lower()] = {
            "name": claims.bound.name,
            "uid": claims.bound.uid,
        }
    return {
        "iss": ISSUER,
        "sub": f"system:serviceaccount:{claims.namespace}:{claims.service_account}",
        "aud": list(claims.audiences),
        "exp": int(claims.expires.timestamp()),
        "iat": int(now.timestamp()),
        "nbf": int(now.timestamp()),
        "jti": claims.token_id,
        "kubernetes.io": kubernetes,
    }


def parse_claims(body: dict[str, Any]) -> TokenClaims | None:
    """TokenClaims from a verified JWT body, or None when it is not a ServiceAccount token."""
    kube = body.get("kubernetes.io")
    if not isinstance(kube, dict):
        return None
    account = kube.get("serviceaccount") or {}
    namespace = kube.get("namespace")
    if not isinstance(namespace, str) or not isinstance(account, dict) or not account.get("name"):
        return None
    bound = None
    for kind in ("Pod", "Secret"):
        ref = kube.get(kind.lower())
        if isinstance(ref, dict) and ref.get("name"):
            bound = BoundObject(kind, str(ref["name"]), str(ref.get("uid", "")))
    audience = body.get("aud")
    audiences = tuple(audience) if isinstance(audience, list) else (str(audience),)
    return TokenClaims(
        namespace=namespace,
        service_account=str(account["name"]),
        service_account_uid=str(account.get("uid", "")),
        audiences=audiences,
        expires=dt.datetime.fromtimestamp(int(body["exp"]), dt.UTC),
        bound=bound,
        token_id=str(body.get("jti", "")),
    )


class TokenIssuer:
    def __init__(self, key: rsa.RSAPrivateKey) -> None:
        self._key = key
        self._public = key.public_key()

    def issue(
        self,
        namespace: str,
        service_account: str,
        service_account_uid: str,
        audiences: tuple[str, ...] = API_AUDIENCES,
        expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
        bound: BoundObject | None = None,
        now: dt.datetime | None = None,
    ) -> tuple[str, dt.datetime]:
        now = now or dt.datetime.now(dt.UTC)
        expires = now + dt.timedelta(seconds=expiration_seconds)
        claims = TokenClaims(
            namespace,
            service_account,
            service_account_uid,
            audiences or API_AUDIENCES,
            expires,
            bound,
            str(uuid.uuid4()),
        )
        token = jwt.encode(claims_document(claims, now), self._key, algorithm=ALGORITHM)
        return token, expires

    def verify(self, token: str, audiences: tuple[str, ...] = API_AUDIENCES) -> TokenClaims | None:
        """The claims of a token this issuer signed that is current and meant for `audiences`."""
        try:
            body = jwt.decode(
                token,
                self._public,
                algorithms=[ALGORITHM],
                audience=list(audiences),
                issuer=ISSUER,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWTError:
            return None
        return parse_claims(body)
