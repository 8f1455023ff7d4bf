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

# Flags accepted for compatibility that change nothing; admission warns about them.
NO_EFFECT: Final[Mapping[str, frozenset[str]]] = {"ssh": frozenset({"no-root"})}


class FlagKind(Enum):
    STRING = "string"
    INT = "int"
    BOOL = "bool"


@dataclass(frozen=True)
class Flag:
    kind: FlagKind
    default: str | int | bool


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

# Flags of each supported plugin with Volcano's defaults.
PLUGIN_FLAGS: Final[Mapping[str, Mapping[str, Flag]]] = {
    "env": {},
    "svc": {
        "publish-not-ready-addresses": Flag(FlagKind.BOOL, False),
        "disable-network-policy": Flag(FlagKind.BOOL, False),
        "inject-hosts-env": Flag(FlagKind.BOOL, True),
    },
    "ssh": {
        "ssh-key-file-path": Flag(FlagKind.STRING, "/root/.ssh"),
        "ssh-private-key": Flag(FlagKind.STRING, ""),
        "ssh-public-key": Flag(FlagKind.STRING, ""),
        "ssh-port": Flag(FlagKind.INT, 22),
        # Removed from Volcano's ssh plugin in 2020 and ignored since, but still passed by
        # Volcano's own e2e suites: known, so it does not stop the parsing, and without effect.
        "no-root": Flag(FlagKind.BOOL, False),
    },
    "tensorflow": {
        "ps": Flag(FlagKind.STRING, "ps"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "chief": Flag(FlagKind.STRING, "chief"),
        "evaluator": Flag(FlagKind.STRING, "evaluator"),
        "port": Flag(FlagKind.INT, 2222),
    },
    "pytorch": {
        "master": Flag(FlagKind.STRING, "master"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "port": Flag(FlagKind.INT, 23456),
        "wait-master-enabled": Flag(FlagKind.BOOL, False),
        "wait-master-timeout": Flag(FlagKind.INT, 300),
        "wait-master-image": Flag(FlagKind.STRING, "busybox:1.36.1"),
    },
    "mpi": {
        "master": Flag(FlagKind.STRING, "master"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "port": Flag(FlagKind.INT, 22),
    },
    # Ray's flag names are camelCase in Volcano.
    "ray": {
        "head": Flag(FlagKind.STRING, "head"),
        "headContainer": Flag(FlagKind.STRING, "head"),
        "worker": Flag(FlagKind.STRING, "worker"),
        "workerContainer": Flag(FlagKind.STRING, "worker"),
        "port": Flag(FlagKind.INT, 6379),
        "dashboardPort": Flag(FlagKind.INT, 8265),
        "clientPort": Flag(FlagKind.INT, 10001),
    },
    "hcclrank": {
        "master": Flag(FlagKind.STRING, "master"),
        "worker": Flag(FlagKind.STRING, "worker"),
    },
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
    values: dict[str, str | int | bool] = field(default_factory=dict)
    errors: list[ArgError] = field(default_factory=list)

    def get(self, name: str) -> str | int | bool:
        if name in self.values:
            return self.values[name]
        return PLUGIN_FLAGS[self.plugin][name].default

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


def parse(plugin: str, arguments: Sequence[str]) -> PluginArgs:
    """Parse one plugin's argument list; `plugin` must be a key of PLUGIN_FLAGS.

    `values` holds what Go's flag package would have set: the flags before the first error."""
    result = _scan(plugin, arguments)
    if result.errors:
        # Re-scan only the arguments before the first problem: Go stops parsing there.
        first = result.errors[0].index
        result.values = _scan(plugin, arguments[:first]).values
    return result


def _scan(plugin: str, arguments: Sequence[str]) -> PluginArgs:
    flags = PLUGIN_FLAGS[plugin]
    result = PluginArgs(plugin)
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
