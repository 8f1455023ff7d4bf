"""The ssh plugin's key pair: the shell generates it when `needs_generated_key` says so; the
planner only uses what it is handed (its memory, the Secret, a given key, `Observed.ssh_key`)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from builders import job, observe
from cryptography.hazmat.primitives import serialization

from controller.job.decide.model import KeyPair
from controller.job.decide.plan import reconcile
from controller.job.decide.plugins.ssh import needs_generated_key
from controller.job.shell.sshkeys import generate_key_pair

KEY = KeyPair("-----BEGIN OPENSSH PRIVATE KEY-----\nk\n", "ssh-ed25519 AAAA j\n")
STORED = {("Secret", "j-ssh"): {"data": {"id_rsa": "cA==", "id_rsa.pub": "cA=="}}}
EMPTY_SECRET = {("Secret", "j-ssh"): {"data": {"config": "cA=="}}}
REMEMBERED = {"sshKey": {"private": "p", "public": "q"}}


@pytest.mark.parametrize(
    ("plugins", "children", "memory", "expected"),
    [
        ({"svc": []}, {}, None, False),
        ({"ssh": []}, {}, None, True),
        ({"ssh": []}, STORED, None, False),
        ({"ssh": []}, EMPTY_SECRET, None, True),
        ({"ssh": ["--ssh-private-key=PRIVATE"]}, {}, None, False),
        ({"ssh": []}, {}, REMEMBERED, False),
        ({"ssh": []}, {}, {"sshKey": {"private": "p"}}, True),
    ],
    ids=[
        "no ssh plugin",
        "a new job",
        "the Secret holds the key",
        "a Secret without key material",
        "a private key given as argument",
        "generated earlier, the Secret not yet stored",
        "half a key remembered",
    ],
)
def test_needs_generated_key(
    plugins: dict[str, list[str]],
    children: dict[tuple[str, str], Any],
    memory: dict[str, Any] | None,
    expected: bool,
) -> None:
    j = job("j").task("w").build()
    j["spec"]["plugins"] = plugins
    assert needs_generated_key(j, children, memory) is expected


def test_the_planner_uses_the_key_it_is_handed_and_remembers_it() -> None:
    j = job("j").task("w", 2).plugin("ssh").build()
    plan = reconcile(observe(j, ssh_key=KEY))
    (secret,) = [o for o in plan.create if o["kind"] == "Secret"]
    data = secret["data"]
    assert base64.b64decode(data["id_rsa"]).decode() == KEY.private
    assert base64.b64decode(data["authorized_keys"]).decode() == KEY.public
    assert plan.memory["sshKey"] == {"private": KEY.private, "public": KEY.public}


def test_the_planner_generates_nothing_itself() -> None:
    j = job("j").task("w").plugin("ssh").build()
    with pytest.raises(ValueError, match="the ssh plugin was given no key pair"):
        reconcile(observe(j))


@pytest.mark.parametrize(
    ("key_type", "marker", "prefix"),
    [("rsa", "RSA PRIVATE KEY", "ssh-rsa "), ("ed25519", "OPENSSH PRIVATE KEY", "ssh-ed25519 ")],
)
def test_generate_key_pair(key_type: Any, marker: str, prefix: str) -> None:
    pair = generate_key_pair(key_type)
    assert marker in pair.private
    assert pair.public.startswith(prefix) and pair.public.endswith("\n")
    loaded = serialization.load_ssh_public_key(pair.public.strip().encode())
    assert loaded is not None
    assert generate_key_pair(key_type) != pair
