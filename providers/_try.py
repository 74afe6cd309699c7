"""Trying a provider from the command line: the models its API lists, and one tiny call.

Rules: ``providers add`` without ``--model`` takes the models the API lists
with the key just given (which checks the key before it is stored);
``providers test`` sends :data:`PROBE` to the chosen model and prints the
model and the latency, or the cause (the diagnostic a failed task gets) and
what to do about it, from the HTTP status or the kind of failure.

Fixed caps (docs/limits.md): ``_MODELS_SHOWN``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from dataclasses import replace

import anyio

from host_receiver.errors import ConfigError, ProviderError
from host_receiver.protocol.types import CreateMessageRequestParams, TextContent
from host_receiver.sanitize import safe_text

from ._contract import listed_model
from ._registry import ProviderRegistry
from .config._build import NO_KEY_PLACEHOLDER, vendor_provider
from .config._config import ProviderEntry
from .config._credentials import find_key

__all__ = ["PROBE", "one_call", "some", "with_listed_models"]

#: The most model ids ``providers add`` names when it lists them.
_MODELS_SHOWN = 5
#: Gemini's reason for a key it does not know, which it answers with HTTP 400 (backends/_gemini.py).
_KEY_REJECTED = "API_KEY_INVALID"


def with_listed_models(entry: ProviderEntry, key: str | None) -> ProviderEntry:
    """``entry`` with the models its API lists (checking the key as it does)."""
    if key is None:
        found = find_key(entry, os.environ)
        key = found.value if found else None
    if key is None and entry.api_key_required:
        raise ConfigError(
            f"provider {entry.name!r} needs at least one --model, or a key to list its models with"
        )
    provider = vendor_provider(entry, key or NO_KEY_PLACEHOLDER, os.environ)

    async def listing() -> list[str]:
        try:
            return await provider.list_models()
        finally:
            await provider.aclose()

    try:
        ids = anyio.run(listing)
    except ProviderError as exc:
        raise ConfigError(f"listing the models failed: {exc}; pass --model ID to name them") from None
    if not ids:
        raise ConfigError(f"the API of provider {entry.name!r} lists no models; pass --model ID")
    return replace(entry, models=tuple(listed_model(i, entry.name, entry.type) for i in dict.fromkeys(ids)))


def some(ids: Iterable[str]) -> str:
    """The first :data:`_MODELS_SHOWN` of ``ids``, and how many more."""
    shown = _MODELS_SHOWN
    listed = list(ids)
    more = f" and {len(listed) - shown} more" if len(listed) > shown else ""
    return ", ".join(safe_text(i, 80) for i in listed[:shown]) + more


#: The one tiny request ``providers test`` sends.
PROBE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Reply with OK."}}],
    "maxTokens": 16,
}


async def one_call(registry: ProviderRegistry, name: str, *, key_source: str | None = None) -> int:
    """Sample :data:`PROBE` once with provider ``name`` and say how it went; the exit code.
    ``key_source``: where its key came from (``keyring``, ``from $VAR``), named when it is refused."""
    async with registry:
        plan = registry.plan(CreateMessageRequestParams.model_validate(PROBE))
        who = f"provider {name!r}, model {plan.model.id}"
        started = time.monotonic()
        try:
            result = await plan.sample()
        except ProviderError as exc:
            print(f"failed: {who}, after {time.monotonic() - started:.2f} s", file=sys.stderr)
            print(f"cause: {exc}", file=sys.stderr)
            print(f"what to do: {_advice(exc, name, key_source)}", file=sys.stderr)
            return 1
    elapsed = time.monotonic() - started
    text = result.content.text if isinstance(result.content, TextContent) else "(not text)"
    print(f"ok: {who}, answered in {elapsed:.2f} s: {safe_text(text, 80)!r}")
    return 0


def _advice(exc: ProviderError, name: str, key_source: str | None = None) -> str:
    """What to do about a failed call, from its status or its words."""
    status, text = exc.status, str(exc)
    if status in (401, 403) or (status == 400 and _KEY_REJECTED in text):
        if key_source is not None and key_source.startswith("from $"):
            variable = key_source.removeprefix("from ")
            return f"check {variable}, where the key comes from: export a valid key there"
        if key_source == "keyring":
            return (
                f"check the key stored in the OS keyring for {name!r}: "
                f"`host-receiver providers add {name}` stores a new one"
            )
        return (
            f"check the key: `host-receiver providers add {name}` stores a new one "
            "(or export the variable the entry reads)"
        )
    if status == 404:
        return f"check the base URL and the model id (`host-receiver providers test {name} --model ID`)"
    if status in (429, 503, 529):
        return "the backend is busy or rate limited: try again later, or check the account's quota"
    if status is not None and status >= 500:
        return "the backend failed: try again later"
    if "connect" in text or "connection" in text:
        return "check the base URL, the network and any proxy in between"
    if "no response within" in text or "deadline" in text:
        return "the backend did not answer in time: check the base URL, or raise the entry's timeout"
    return "see the cause above"
