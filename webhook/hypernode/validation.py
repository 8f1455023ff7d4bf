"""HyperNode admission as Volcano's webhook manager does it: at least one member, and each
member's selector names it exactly one way (exact name, regular expression, label selector), with
a regular expression Go's RE2 (Volcano's scheduler) can compile."""

from __future__ import annotations

import re
from typing import Any, Final

from shared import names
from shared.fielderrors import FieldError, Path
from shared.models.topology import MEMBER_TYPES
from webhook.verdict import Verdict

SELECTORS: Final = ("exactMatch", "regexMatch", "labelMatch")
LABEL_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")
# Python's re accepts these, Go's RE2 does not: such a pattern would never match in the scheduler.
_NOT_RE2: Final = (
    (re.compile(r"\(\?<?[=!]"), "lookaround assertions ((?=, (?!, (?<=, (?<!) are not supported"),
    (re.compile(r"\(\?>"), "atomic groups ((?>…)) are not supported"),
    (re.compile(r"(?<!\\)\\[1-9]"), "backreferences (\\1 … \\9) are not supported"),
    (re.compile(r"\(\?P=\w+\)"), "named backreferences ((?P=name)) are not supported"),
)


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is not a valid RE2 expression, or None."""
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"error parsing regexp: {exc}"
    for construct, problem in _NOT_RE2:
        if construct.search(pattern):
            return f"error parsing regexp: {problem}"
    return None


def validate_label_match(selector: Any, path: Path) -> list[FieldError]:
    if not isinstance(selector, dict):
        return [FieldError.invalid(path, selector, "must be a label selector")]
    errors: list[FieldError] = []
    expressions = selector.get("matchExpressions") or []
    for i, expression in enumerate(expressions if isinstance(expressions, list) else []):
        where = path.child("matchExpressions").index(i)
        if not isinstance(expression, dict):
            continue
        operator = expression.get("operator")
        values = expression.get("values") or []
        if operator not in LABEL_OPERATORS:
            errors.append(
                FieldError.not_supported(where.child("operator"), operator, LABEL_OPERATORS)
            )
        elif operator in ("In", "NotIn") and not values:
            errors.append(
                FieldError.required(
                    where.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            errors.append(
                FieldError.forbidden(
                    where.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    return errors


def validate_selector(selector: Any, path: Path) -> list[FieldError]:
    if not isinstance(selector, dict):
        selector = {}
    given = [key for key in SELECTORS if selector.get(key) is not None]
    if not given:
        return [
            FieldError.required(
                path, "Either ExactMatch or RegexMatch or LabelMatch must be specified"
            )
        ]
    errors: list[FieldError] = []
    if len(given) > 1:
        errors.append(
            FieldError.forbidden(
                path.child(given[1]),
                f"Only one of ExactMatch, RegexMatch, or LabelMatch can be specified "
                f"(found {', '.join(given)})",
            )
        )
    exact = selector.get("exactMatch")
    if isinstance(exact, dict):
        name = exact.get("name")
        where = path.child("exactMatch", "name")
        if not isinstance(name, str) or not name:
            errors.append(FieldError.invalid(where, name, "should be at least 1 chars long"))
        else:
            errors += FieldError.invalid_each(where, name, names.dns1123_subdomain(name))
    regex = selector.get("regexMatch")
    if isinstance(regex, dict):
        pattern = regex.get("pattern")
        where = path.child("regexMatch", "pattern")
        if not isinstance(pattern, str) or not pattern:
            errors.append(FieldError.invalid(where, pattern, "should be at least 1 chars long"))
        elif problem := regex_problem(pattern):
            errors.append(
                FieldError.invalid(
                    where, pattern, f"member regexMatch pattern is invalid: {problem}"
                )
            )
    if selector.get("labelMatch") is not None:
        errors += validate_label_match(selector["labelMatch"], path.child("labelMatch"))
    return errors


def validate_member(member: Any, path: Path, verdict: Verdict) -> None:
    if not isinstance(member, dict):
        verdict.errors.append(
            FieldError.invalid(path, member, "must be an object with type and selector")
        )
        return
    kind = member.get("type")
    if kind not in MEMBER_TYPES:
        verdict.errors.append(FieldError.not_supported(path.child("type"), kind, MEMBER_TYPES))
    selector = member.get("selector")
    verdict.errors.extend(validate_selector(selector, path.child("selector")))
    if kind == "HyperNode" and isinstance(selector, dict) and selector.get("labelMatch"):
        # Volcano admits it; its scheduler reads label selectors of Node members only.
        verdict.warnings.append(
            f"{path.child('selector', 'labelMatch')}: a label selector only takes effect for "
            "members of type Node; the scheduler ignores this member"
        )


def validate_hypernode(hypernode: Any) -> Verdict:
    """A HyperNode on CREATE or UPDATE: every problem at once."""
    verdict = Verdict()
    spec = hypernode.get("spec") if isinstance(hypernode, dict) else None
    if not isinstance(spec, dict):
        spec = {}
    path = Path.of("spec", "members")
    members = spec.get("members")
    if not isinstance(members, list) or not members:
        verdict.errors.append(
            FieldError.invalid(path, members or [], "member must have at least one member")
        )
        return verdict
    for i, member in enumerate(members):
        validate_member(member, path.index(i), verdict)
    return verdict
