"""Label and field selectors as Kubernetes parses them (`app=web,tier in (a,b),!canary`).

Pure functions: `parse_labels` / `parse_fields` turn the query-string form into requirements, and
`matches` decides whether a set of labels (or of field values) satisfies all of them. The wording
of parse errors follows apimachinery's `labels.Parse`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class Operator(StrEnum):
    EQUALS = "="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"


class SelectorError(ValueError):
    """A selector that cannot be parsed; the message says what is wrong and where."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: Operator
    values: frozenset[str] = frozenset()

    def matches(self, values: Mapping[str, str]) -> bool:
        present = self.key in values
        if self.operator is Operator.EXISTS:
            return present
        if self.operator is Operator.DOES_NOT_EXIST:
            return not present
        if self.operator is Operator.EQUALS or self.operator is Operator.IN:
            return present and values[self.key] in self.values
        # != and notin also match objects that lack the key, as in Kubernetes.
        return not present or values[self.key] not in self.values


Selector = tuple[Requirement, ...]

_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unbalanced parentheses in selector {text!r}")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth != 0:
        raise SelectorError(f"unbalanced parentheses in selector {text!r}")
    parts.append(current)
    return parts


_SET_TERM = re.compile(r"^\s*(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_EQUALITY_TERM = re.compile(
    r"^\s*(?P<key>[^\s!=()]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)\s*$"
)
_EXISTS_TERM = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=()]+)\s*$")


def _check_key(key: str, validate: bool) -> str:
    if validate and (len(key.rsplit("/", 1)[-1]) > 63 or not _KEY.match(key)):
        raise SelectorError(
            f"invalid label key {key!r}: name part must consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return key


def _check_value(value: str, validate: bool) -> str:
    if validate and (len(value) > 63 or not _VALUE.match(value)):
        raise SelectorError(
            f"invalid label value: {value!r}: must be 63 characters or less and consist of "
            "alphanumeric characters, '-', '_' or '.', starting and ending with an alphanumeric"
        )
    return value


def _parse(text: str, allow_sets: bool, validate: bool) -> Selector:
    if not text.strip():
        return ()
    requirements: list[Requirement] = []
    for term in _split_top_level(text):
        if not term.strip():
            raise SelectorError(f"found ',', expected: identifier in selector {text!r}")
        if allow_sets and (match := _SET_TERM.match(term)):
            values = [v.strip() for v in match["values"].split(",")]
            if values == [""]:
                raise SelectorError(
                    f"for 'in', 'notin' operators, values set can't be empty: {term!r}"
                )
            op = Operator.IN if match["op"] == "in" else Operator.NOT_IN
            requirements.append(
                Requirement(
                    _check_key(match["key"], validate),
                    op,
                    frozenset(_check_value(v, validate) for v in values),
                )
            )
        elif match := _EQUALITY_TERM.match(term):
            op = Operator.NOT_EQUALS if match["op"] == "!=" else Operator.EQUALS
            requirements.append(
                Requirement(
                    _check_key(match["key"], validate),
                    op,
                    frozenset([_check_value(match["value"], validate)]),
                )
            )
        elif allow_sets and (match := _EXISTS_TERM.match(term)):
            op = Operator.DOES_NOT_EXIST if match["neg"] else Operator.EXISTS
            requirements.append(Requirement(_check_key(match["key"], validate), op))
        else:
            kind = "label" if allow_sets else "field"
            raise SelectorError(f"unable to parse requirement {term.strip()!r} in {kind} selector")
    return tuple(requirements)


def parse_labels(text: str) -> Selector:
    """A label selector: `=`, `==`, `!=`, `in`, `notin`, `key` (exists) and `!key`."""
    return _parse(text, allow_sets=True, validate=True)


def parse_fields(text: str) -> Selector:
    """A field selector: only `=`, `==` and `!=` terms, values are free text."""
    return _parse(text, allow_sets=False, validate=False)


def matches(selector: Selector, values: Mapping[str, str]) -> bool:
    return all(requirement.matches(values) for requirement in selector)


def from_label_selector(spec: Mapping[str, object] | None) -> Selector:
    """A `metav1.LabelSelector` (`matchLabels` + `matchExpressions`) as requirements."""
    if not spec:
        return ()
    requirements: list[Requirement] = []
    match_labels = spec.get("matchLabels") or {}
    if isinstance(match_labels, Mapping):
        for key, value in match_labels.items():
            requirements.append(Requirement(str(key), Operator.EQUALS, frozenset([str(value)])))
    expressions = spec.get("matchExpressions") or []
    if isinstance(expressions, list):
        operators = {
            "In": Operator.IN,
            "NotIn": Operator.NOT_IN,
            "Exists": Operator.EXISTS,
            "DoesNotExist": Operator.DOES_NOT_EXIST,
        }
        for expression in expressions:
            operator = operators.get(str(expression.get("operator")))
            if operator is None:
                raise SelectorError(
                    f"{expression.get('operator')!r} is not a valid selector operator"
                )
            values = frozenset(str(v) for v in expression.get("values") or [])
            requirements.append(Requirement(str(expression.get("key")), operator, values))
    return tuple(requirements)
