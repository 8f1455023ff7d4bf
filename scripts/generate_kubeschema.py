"""Regenerate `shared/data/kubernetes-definitions.json`: the Kubernetes definitions vcjob reads
(PodTemplateSpec, PersistentVolumeClaimSpec and everything they reference), taken from the
OpenAPI v3 document of the Kubernetes version the local cluster runs — the `k8s.io/kubernetes`
module pinned in `controlplane/go.mod`, whose `api/openapi-spec/v3/api__v1_openapi.json` is what
that version's kube-apiserver serves at `/openapi/v3/api/v1` — with their descriptions, so the
CRDs' pod templates match that version field for field and `kubectl explain` describes them.

    .venv/bin/python scripts/generate_kubeschema.py          # write the file
    .venv/bin/python scripts/generate_kubeschema.py --check  # exit 1 when it is out of date
    .venv/bin/python scripts/generate_kubeschema.py --openapi FILE --version vX.Y.Z
        # from a saved `kubectl get --raw /openapi/v3/api/v1` instead of the Go module cache

The module is in Go's module cache once `make cluster` has built the control plane. The
definitions keep the JSON-schema form vcjob's readers expect (`shared.kubeschema`, the webhook's
pod template check): `$ref`s to `#/$defs/<name>`, every type nullable except required fields,
no defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from localcluster import kubebin
from shared import kubeschema

ROOT = Path(__file__).resolve().parents[1]
GO_MOD = ROOT / "controlplane" / "go.mod"
MODULE = "k8s.io/kubernetes"
SPEC_IN_MODULE = "api/openapi-spec/v3/api__v1_openapi.json"
_COMPONENTS = "#/components/schemas/"
# The two definitions whose JSON-schema form is a `oneOf` of scalars.
_SCALAR_UNIONS: dict[str, dict[str, Any]] = {
    kubeschema.QUANTITY: {"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]
    },
}
# OpenAPI keywords kept; `default` is dropped (a CRD default would change stored objects).
_KEPT = ("description", "format", "enum", "required")


def pinned_version() -> str:
    """The k8s.io/kubernetes version `controlplane/go.mod` pins (`v1.37.2`)."""
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(MODULE)}\s+(v\S+)", GO_MOD.read_text(), re.M)
    if found is None:
        raise SystemExit(f"{GO_MOD}: no {MODULE} requirement")
    return found.group(1)


def module_spec(version: str) -> Path:
    """The OpenAPI document inside the module cache (GOMODCACHE, else ~/go/pkg/mod)."""
    cache = os.environ.get("GOMODCACHE")
    if not cache:
        try:
            # Go's own environment for the build (its telemetry counters stay in the checkout).
            cache = subprocess.run(
                ["go", "env", "GOMODCACHE"],
                capture_output=True,
                text=True,
                check=True,
                env=kubebin.go_env(os.environ),
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            cache = str(Path.home() / "go" / "pkg" / "mod")
    path = Path(cache) / f"{MODULE}@{version}" / SPEC_IN_MODULE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: run `make cluster` (it downloads {MODULE} {version}), or pass "
            "--openapi with a saved `kubectl get --raw /openapi/v3/api/v1`"
        )
    return path


def _convert(node: Any, required: bool) -> Any:
    """One OpenAPI v3 node in vcjob's JSON-schema form; `required`: a required property."""
    if not isinstance(node, dict):
        return node
    wrapped = node.get("allOf")
    if isinstance(wrapped, list) and len(wrapped) == 1 and "$ref" in wrapped[0]:
        # `allOf: [$ref]` is how v3 puts a description (and a default) beside a reference.
        node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": wrapped[0]["$ref"]}
    out: dict[str, Any] = {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        out["$ref"] = "#/$defs/" + ref.removeprefix(_COMPONENTS)
        if "description" in node:
            out["description"] = node["description"]
        return out
    for key in _KEPT:
        if key in node:
            out[key] = node[key]
    kind = node.get("type")
    if isinstance(kind, str):
        out["type"] = kind if required else [kind, "null"]
    needed = set(node.get("required") or ())
    properties = node.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            name: _convert(child, name in needed) for name, child in sorted(properties.items())
        }
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            out[key] = _convert(node[key], False)
    for key, value in node.items():
        if key.startswith("x-kubernetes-") and key != "x-kubernetes-group-version-kind":
            out[key] = value
    return out


def convert(schemas: dict[str, Any]) -> dict[str, Any]:
    """Every definition of an OpenAPI v3 `components.schemas` in vcjob's form, by name."""
    out: dict[str, Any] = {}
    for name, schema in schemas.items():
        if name in _SCALAR_UNIONS:
            out[name] = {"description": schema.get("description", ""), **_SCALAR_UNIONS[name]}
        else:
            out[name] = _convert(schema, False)
    return out


def reachable(definitions: dict[str, Any], roots: tuple[str, ...]) -> dict[str, Any]:
    """The named definitions and every definition they reference, by name, sorted."""
    found: dict[str, Any] = {}
    pending: list[Any] = [{"$ref": f"#/$defs/{root}"} for root in roots]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.rsplit("/", 1)[-1]
                if name not in found:
                    found[name] = definitions[name]
                    pending.append(definitions[name])
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return dict(sorted(found.items()))


def generate(spec: Path, version: str, source: str) -> str:
    schemas = json.loads(spec.read_text(encoding="utf-8"))["components"]["schemas"]
    document = {
        "source": source,
        "kubernetesVersion": version,
        "roots": list(kubeschema.ROOTS),
        "definitions": reachable(convert(schemas), kubeschema.ROOTS),
    }
    return json.dumps(document, indent=None, separators=(",", ":"), sort_keys=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    parser.add_argument("--openapi", type=Path, help="an OpenAPI v3 document of /api/v1")
    parser.add_argument("--version", help="the Kubernetes version of --openapi")
    args = parser.parse_args()
    version = args.version or pinned_version()
    if args.openapi is not None:
        spec, source = args.openapi, f"kube-apiserver {version} /openapi/v3/api/v1"
    else:
        try:
            spec = module_spec(version)
        except FileNotFoundError as exc:
            print(exc, file=sys.stderr)
            return 2
        source = f"{MODULE} {version} {SPEC_IN_MODULE}"
    target = Path(str(resources.files("shared") / kubeschema.DATA_FILE))
    text = generate(spec, version, source)
    if args.check:
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            print(f"{target} is out of date: run scripts/generate_kubeschema.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({len(text)} bytes, Kubernetes {version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
