"""Key pairs for the ssh plugin: the randomness the planner is handed (`Observed.ssh_key`)."""

from __future__ import annotations

from typing import Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from controller.job.decide.model import KeyPair


def generate_key_pair(key_type: Literal["rsa", "ed25519"]) -> KeyPair:
    """A new key pair: RSA 2048 in the traditional PEM form (as Volcano's), or ed25519 in the
    OpenSSH form; the public key is one OpenSSH line ending in a newline."""
    if key_type == "ed25519":
        ed_key = ed25519.Ed25519PrivateKey.generate()
        private = ed_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.OpenSSH,
            serialization.NoEncryption(),
        )
        public = ed_key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
    else:
        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private = rsa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
        public = rsa_key.public_key().public_bytes(
            serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
        )
    return KeyPair(private.decode(), public.decode() + "\n")
