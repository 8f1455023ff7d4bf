"""The loaders' credential hook runs at most once a period per configuration."""

from __future__ import annotations

import copy

from kubernetes import client

from kubeio.client import throttle_credential_refresh


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def configuration_with_hook(calls: list[str]) -> client.Configuration:
    configuration = client.Configuration()
    configuration.host = "https://127.0.0.1:6443"

    def hook(target: client.Configuration) -> None:
        calls.append(str(target.api_key.get("BearerToken")))
        target.api_key["BearerToken"] = f"token-{len(calls)}"
        # As the kubeconfig loader's hook does: it installs itself again on every run.
        target.refresh_api_key_hook = hook

    configuration.refresh_api_key_hook = hook
    return configuration


def test_the_hook_runs_once_per_period() -> None:
    calls: list[str] = []
    clock = Clock()
    configuration = configuration_with_hook(calls)
    throttle_credential_refresh(configuration, period=1.0, monotonic=clock)
    for _ in range(50):
        configuration.get_api_key_with_prefix("BearerToken")
    assert len(calls) == 1
    clock.now += 0.99
    configuration.get_api_key_with_prefix("BearerToken")
    assert len(calls) == 1
    clock.now += 0.02
    assert configuration.get_api_key_with_prefix("BearerToken") == "token-2"
    assert len(calls) == 2


def test_a_pooled_copy_refreshes_on_its_own() -> None:
    calls: list[str] = []
    clock = Clock()
    configuration = configuration_with_hook(calls)
    throttle_credential_refresh(configuration, period=1.0, monotonic=clock)
    configuration.get_api_key_with_prefix("BearerToken")
    pooled = copy.deepcopy(configuration)
    pooled.get_api_key_with_prefix("BearerToken")
    assert len(calls) == 2, "the copy's first request refreshes the copy, not the original"


def test_no_hook_is_left_alone() -> None:
    configuration = client.Configuration()
    throttle_credential_refresh(configuration)
    assert configuration.refresh_api_key_hook is None
