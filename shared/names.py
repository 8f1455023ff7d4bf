"""Kubernetes name rules (apimachinery's IsDNS1123Label / IsDNS1123Subdomain), with its wording."""

from __future__ import annotations

import re
from typing import Final

DNS1123_LABEL_MAX: Final = 63
DNS1123_SUBDOMAIN_MAX: Final = 253
_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT: Final = rf"{_LABEL_FMT}(\.{_LABEL_FMT})*"
_LABEL_RE: Final = re.compile(rf"^{_LABEL_FMT}$")
_SUBDOMAIN_RE: Final = re.compile(rf"^{_SUBDOMAIN_FMT}$")
_ENV_NAME_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_NAME_RE: Final = re.compile(rf"^{_ENV_NAME_FMT}$")
_IANA_SVC_RE: Final = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_HAS_LETTER_RE: Final = re.compile(r"[a-z]")

LABEL_HINT: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_LABEL_FMT}')"
)
SUBDOMAIN_HINT: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN_FMT}')"
)
ENV_NAME_HINT: Final = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', "
    "'-', or '.', and must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or "
    f"'MyEnvName1', regex used for validation is '{_ENV_NAME_FMT}')"
)


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label(value: str) -> list[str]:
    """Why `value` is not a DNS-1123 label (empty when it is one)."""
    errors: list[str] = []
    if len(value) > DNS1123_LABEL_MAX:
        errors.append(_too_long(DNS1123_LABEL_MAX))
    if not _LABEL_RE.match(value):
        errors.append(LABEL_HINT)
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errors.append(_too_long(DNS1123_SUBDOMAIN_MAX))
    if not _SUBDOMAIN_RE.match(value):
        errors.append(SUBDOMAIN_HINT)
    return errors


def env_var_name(value: str) -> list[str]:
    return [] if _ENV_NAME_RE.match(value) else [ENV_NAME_HINT]


def port_name(value: str) -> list[str]:
    """IANA service names, as container port names must be."""
    errors: list[str] = []
    if len(value) > 15:
        errors.append(_too_long(15))
    if not _IANA_SVC_RE.match(value):
        errors.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if "--" in value:
        errors.append("must not contain consecutive hyphens")
    if not _HAS_LETTER_RE.search(value):
        errors.append("must contain at least one letter (a-z)")
    return errors
