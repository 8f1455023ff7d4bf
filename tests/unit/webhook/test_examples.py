"""Every example manifest goes through the validator: the valid ones pass, each invalid one gets
exactly the message its `# denied:` line documents."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from shared.fielderrors import render
from shared.models import Queue
from webhook.cronjob.validation import validate_cronjob
from webhook.job.create import validate_create
from webhook.job.defaulting import default_job
from webhook.settings import Settings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
VALID = sorted(EXAMPLES.glob("*.yaml"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.yaml"))
DENIED = "# denied: "


class DefaultQueueOnly:
    def get(self, name: str) -> Queue | None:
        return Queue.from_wire({"metadata": {"name": name}}) if name == "default" else None

    def children(self, name: str) -> list[str]:
        return []


def test_there_are_examples() -> None:
    assert len(VALID) >= 6
    assert len(INVALID) >= 5


@pytest.mark.parametrize("path", VALID, ids=[p.name for p in VALID])
def test_valid_example_passes(path: Path) -> None:
    job = yaml.safe_load(path.read_text())
    if job.get("kind") == "CronJob":
        assert render(validate_cronjob(job, Settings())) == ""
        return
    assert render(validate_create(job, DefaultQueueOnly(), Settings())) == ""
    # …and the defaulted form passes too (what the API server stores).
    defaulted = default_job(job, "volcano")
    assert validate_create(defaulted, DefaultQueueOnly(), Settings()) == []


@pytest.mark.parametrize("path", INVALID, ids=[p.name for p in INVALID])
def test_invalid_example_gets_its_documented_message(path: Path) -> None:
    text = path.read_text()
    documented = [line[len(DENIED) :] for line in text.splitlines() if line.startswith(DENIED)]
    assert len(documented) == 1, f"{path.name} needs one '{DENIED}<message>' line"
    errors = validate_create(yaml.safe_load(text), DefaultQueueOnly(), Settings())
    assert render(errors) == documented[0]
