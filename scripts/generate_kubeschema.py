"""Regenerate `shared/data/kubernetes-definitions.json`: the Kubernetes JSON-schema definitions
vcjob reads (PodTemplateSpec, PersistentVolumeClaimSpec and everything they reference), taken
from the `kubernetes-validate` package (a development dependency) so that vcjob's runtime does
not need that 100 MB package.

    .venv/bin/python scripts/generate_kubeschema.py          # write the file
    .venv/bin/python scripts/generate_kubeschema.py --check  # exit 1 when it is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from shared import kubeschema

SOURCE = f"kubernetes-json-schema/{kubeschema.KUBERNETES_SCHEMA_VERSION}/_definitions.json"


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


def generate() -> str:
    text = (resources.files("kubernetes_validate") / SOURCE).read_text(encoding="utf-8")
    definitions = json.loads(text)["$defs"]
    document = {
        "source": f"kubernetes-validate {SOURCE}",
        "roots": list(kubeschema.ROOTS),
        "definitions": reachable(definitions, kubeschema.ROOTS),
    }
    return json.dumps(document, indent=None, separators=(",", ":"), sort_keys=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 if stale")
    args = parser.parse_args()
    target = Path(str(resources.files("shared") / kubeschema.DATA_FILE))
    text = generate()
    if args.check:
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            print(f"{target} is out of date: run scripts/generate_kubeschema.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
