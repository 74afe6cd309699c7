"""Whether the OS keyring can keep a secret: the one check for API keys and OAuth tokens alike.

A backend that keeps nothing counts as no keyring: keyring's ``fail`` backend
(none found), its ``null`` backend (it drops what it is given) and plain-text
ones (keyrings.alt's ``PlaintextKeyring`` writes secrets to a file in clear
text; a backend whose ``scheme`` is ``"no encryption"``). In a chain, the
first backend is the one writes go to. keyring's ``priority`` does not tell
them apart (keyrings.alt's ``EncryptedKeyring``, which encrypts, ranks below
1 too). A fit backend must also answer a read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["NO_KEYRING", "secret_store_problem"]

NO_KEYRING = "no OS keyring is available"


def secret_store_problem(service: str, probe: str) -> str | None:
    """Why the OS keyring cannot keep secrets, or None when its backend is fit and answers
    a read of ``probe`` under ``service``."""
    import keyring
    import keyring.errors

    problem = _unfit(keyring.get_keyring())
    if problem is not None:
        return problem
    try:
        keyring.get_password(service, probe)
    except keyring.errors.KeyringError:
        return NO_KEYRING
    return None


def _unfit(backend: Any) -> str | None:
    """Why ``backend`` cannot keep secrets (it has none, drops or exposes them), or None."""
    import keyring.backends.chainer
    import keyring.backends.fail
    import keyring.backends.null

    if isinstance(backend, keyring.backends.chainer.ChainerBackend):
        chain = list(backend.backends)
        return _unfit(chain[0]) if chain else NO_KEYRING  # writes go to the first that takes them
    name = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if isinstance(backend, keyring.backends.fail.Keyring):
        return NO_KEYRING
    if isinstance(backend, keyring.backends.null.Keyring):
        return f"the keyring backend {name} keeps nothing"
    if "plaintext" in type(backend).__name__.lower() or getattr(backend, "scheme", None) == "no encryption":
        return f"the keyring backend {name} stores secrets unencrypted"
    return None
