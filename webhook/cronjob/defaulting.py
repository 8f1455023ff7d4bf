"""Defaults applied to a CronJob on CREATE (`/cronjobs/mutate`): its own, and a Job's CREATE
defaults on its job template (`webhook.job.defaulting`); the mutation patch is the JSON Patch diff
to the defaulted form."""

from __future__ import annotations

from typing import Any

from shared.models.cronjob import (
    DEFAULT_FAILED_HISTORY,
    DEFAULT_SUCCESSFUL_HISTORY,
    ConcurrencyPolicy,
)
from webhook.job.defaulting import copy_json, default_job, diff
from webhook.settings import Settings


def defaulted(raw: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """The CronJob with its defaults, and its job template with a Job's CREATE defaults."""
    out: dict[str, Any] = copy_json(raw)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    spec.setdefault("concurrencyPolicy", ConcurrencyPolicy.ALLOW.value)
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", DEFAULT_SUCCESSFUL_HISTORY)
    spec.setdefault("failedJobsHistoryLimit", DEFAULT_FAILED_HISTORY)
    template = spec.get("jobTemplate")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        template["spec"] = default_job({"spec": template["spec"]}, settings.scheduler_name)["spec"]
    return out


def mutation_patch(raw: dict[str, Any], settings: Settings) -> list[dict[str, Any]]:
    """The JSON Patch to the defaulted CronJob (empty when nothing changes)."""
    return diff(raw, defaulted(raw, settings))
