"""Job plugin arguments (`spec.plugins`), parsed the way Go's `flag` package reads them.

The one parser for both sides: the webhook denies a job whose arguments have `errors`, the
controller uses `values`.

Accepted forms: `--name=value`, `-name=value`, `--name value` (not for booleans), and a bare
`--flag` for booleans. Like Volcano's `flag.ContinueOnError` parsing, the values stop at the first
problem (unknown flag, bad value, stray word, `--`): flags before it keep what they were given,
everything after it keeps its default. Unlike Volcano, which only logs that, every argument is
still checked so that each problem is reported with its index.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Final


class FlagKind(Enum):
    STRING = "string"
    INT = "int"
    BOOL = "bool"


@dataclass(frozen=True)
class Flag:
    kind: FlagKind
    default: str | int | bool


__all__ = ["ArgError", "Flag", "FlagKind", "PluginArgs", "parse"]

_BOOL_WORDS: Final = {
    "1": True,
    "t": True,
    "T": True,
    "true": True,
    "TRUE": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "false": False,
    "FALSE": False,
    "False": False,
}


@dataclass(frozen=True)
class ArgError:
    """A problem with the argument at `index` of the plugin's list."""

    index: int
    argument: str
    detail: str


@dataclass
class PluginArgs:
    plugin: str
    flags: Mapping[str, Flag]
    values: dict[str, str | int | bool] = field(default_factory=dict)
    errors: list[ArgError] = field(default_factory=list)

    def get(self, name: str) -> str | int | bool:
        if name in self.values:
            return self.values[name]
        return self.flags[name].default

    def string(self, name: str) -> str:
        return str(self.get(name))

    def integer(self, name: str) -> int:
        value = self.get(name)
        return value if isinstance(value, int) else int(value)

    def boolean(self, name: str) -> bool:
        return bool(self.get(name))


def _parse_int(text: str) -> int | None:
    """Like Go's strconv.ParseInt(text, 0, 64): decimal, 0x…, 0o…/0…, 0b…, underscores."""
    try:
        return int(text, 0)
    except ValueError:
        try:
            return int(text, 8) if text.startswith("0") and text.isdigit() else None
        except ValueError:
            return None


def parse(plugin: str, flags: Mapping[str, Flag], arguments: Sequence[str]) -> PluginArgs:
    """Parse one plugin's argument list against its flags (its descriptor's, `shared.plugins`).

    `values` holds what Go's flag package would have set: the flags before the first error."""
    result = _scan(plugin, flags, arguments)
    if result.errors:
        # Re-scan only the arguments before the first problem: Go stops parsing there.
        first = result.errors[0].index
        result.values = _scan(plugin, flags, arguments[:first]).values
    return result


def _scan(plugin: str, flags: Mapping[str, Flag], arguments: Sequence[str]) -> PluginArgs:
    result = PluginArgs(plugin, flags)
    supported = ", ".join(f"--{name}" for name in flags) or "none"
    i = 0
    while i < len(arguments):
        arg = arguments[i]
        index = i
        i += 1
        if arg == "--":
            if i < len(arguments):
                result.errors.append(
                    ArgError(i, arguments[i], "positional arguments are not accepted")
                )
            break
        if len(arg) < 2 or not arg.startswith("-"):
            detail = "positional arguments are not accepted"
            previous = arguments[index - 1] if index else ""
            if arg.lower() in ("true", "false") and previous.startswith("-"):
                detail += f"; a boolean flag takes its value as {previous}={arg}"
            result.errors.append(ArgError(index, arg, detail))
            continue
        body = arg[2:] if arg.startswith("--") else arg[1:]
        name, has_value, value = body.partition("=")
        if not name or name.startswith(("-", "=")):
            result.errors.append(ArgError(index, arg, "bad flag syntax"))
            continue
        spec = flags.get(name)
        if spec is None:
            result.errors.append(
                ArgError(index, arg, f"unknown flag --{name}; supported flags: {supported}")
            )
            continue
        if spec.kind is FlagKind.BOOL:
            if not has_value:
                result.values[name] = True
            elif value in _BOOL_WORDS:
                result.values[name] = _BOOL_WORDS[value]
            else:
                result.errors.append(
                    ArgError(index, arg, f"invalid boolean value {value!r} for --{name}")
                )
            continue
        if not has_value:
            if i >= len(arguments):
                result.errors.append(ArgError(index, arg, f"flag --{name} needs a value"))
                continue
            value = arguments[i]
            i += 1
        if spec.kind is FlagKind.INT:
            number = _parse_int(value)
            if number is None:
                result.errors.append(
                    ArgError(index, arg, f"invalid integer value {value!r} for --{name}")
                )
                continue
            result.values[name] = number
        else:
            result.values[name] = value
    return result
