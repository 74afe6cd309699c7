"""Building the registry for ``host-receiver run``: config file + ``--provider/--model`` + environment.

Rules:

* Without ``--provider``: every configured provider; with none configured, the
  offline echo provider alone (so the demo runs offline). Environment keys
  alone never switch on a paid backend.
* ``--provider NAME``: that entry alone. ``echo``, ``openai``, ``anthropic``
  and ``gemini`` work without an entry: ``openai`` then means the ``openai``
  library's own defaults (``OPENAI_BASE_URL`` or OpenAI's URL,
  ``OPENAI_API_KEY`` or the keyring), ``anthropic`` the ``anthropic``
  library's (``ANTHROPIC_BASE_URL`` or Anthropic's URL, ``ANTHROPIC_API_KEY``
  or the keyring), ``gemini`` the ``google-genai`` library's
  (``GOOGLE_GEMINI_BASE_URL`` or Google's URL, ``GOOGLE_API_KEY`` or
  ``GEMINI_API_KEY`` or the keyring).
* ``--model ID``: the catalogue shrinks to that model. A model the chosen
  provider does not list is added with neutral ratings (0.5) and permissive
  capabilities (:func:`~providers._contract.listed_model`: tools and images
  yes, audio only for Gemini, 128k context); without ``--provider`` it must be
  listed by some configured provider, or exactly one provider must be
  configured.
* ``--provider openai`` (``anthropic``, ``gemini``) with no entry, no key and
  no ``--model`` is "not configured", naming the variables and
  ``providers add``; an unknown name is named with the configured ones (those
  ``providers list`` shows), no others.
* A vendor entry (``openai``, ``anthropic``, ``gemini``) without models takes
  the models its API lists, when the registry opens (the entry needs a key,
  or ``api_key_required = false``); without a key it needs ``--model``.
* Keys follow :mod:`providers.config._credentials`; a missing key is a
  :class:`ConfigError` naming the ways to provide one, unless the entry says
  ``api_key_required = false`` (a placeholder key is sent then).
* ``OPENAI_BASE_URL`` (``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``)
  applies to ``openai`` (``anthropic``, ``gemini``) entries without a
  ``base_url`` of their own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from host_receiver.errors import ConfigError

from .._contract import Provider, listed_model
from .._registry import ProviderRegistry
from ..backends._echo import ECHO_MODEL, EchoProvider
from ._config import (
    DEFAULT_ANTHROPIC_URL,
    DEFAULT_BASE_URL,
    DEFAULT_GEMINI_URL,
    Config,
    ProviderEntry,
    config_path,
    load_config,
)
from ._credentials import VENDOR_KEY_ENV, find_key

if TYPE_CHECKING:
    from ..backends._anthropic import AnthropicProvider
    from ..backends._gemini import GeminiProvider
    from ..backends._openai import OpenAIProvider

__all__ = ["build_provider", "build_registry"]

BASE_URL_ENV = "OPENAI_BASE_URL"
#: Per entry type: the variable naming the vendor's base URL, and the vendor's own URL.
VENDOR_BASE_URL = {
    "openai": (BASE_URL_ENV, DEFAULT_BASE_URL),
    "anthropic": ("ANTHROPIC_BASE_URL", DEFAULT_ANTHROPIC_URL),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", DEFAULT_GEMINI_URL),
}
#: Sent as the key to servers that need none (the openai client insists on one).
NO_KEY_PLACEHOLDER = "no-key-needed"


def build_registry(
    *,
    provider: str | None = None,
    model: str | None = None,
    config: Config | None = None,
    path: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ProviderRegistry:
    """The registry for a run (rules in the module docstring).

    ``config`` is used as given; otherwise it is loaded from ``path`` (or the
    default location, see :func:`config_path`). ``environ`` defaults to
    ``os.environ``.
    """
    env = os.environ if environ is None else environ
    if config is None:
        config = load_config(config_path(path, env))
    entries = _entries(config, provider)
    unconfigured = provider is not None and config.entry(provider) is None and provider in VENDOR_KEY_ENV
    if unconfigured and model is None and find_key(entries[0], env) is None:  # say how to configure it
        assert provider is not None
        variables = " or ".join(VENDOR_KEY_ENV[provider])
        raise ConfigError(
            f"provider {provider!r} is not configured: set {variables} "
            f"or run `host-receiver providers add {provider}`"
        )
    if model is not None:
        entries = _restrict(entries, model, explicit=provider is not None)
    built = [build_provider(entry, env) for entry in entries]
    listing = [e.name for e in entries if e.type != "echo" and not e.models]
    return ProviderRegistry(
        built, aliases=config.aliases, allowed=config.servers, limits=config.limits, listing=listing
    )


def build_provider(entry: ProviderEntry, environ: Mapping[str, str]) -> Provider:
    """The provider for one entry, with its key resolved (an entry without models: none yet,
    for its registry to list)."""
    if entry.type == "echo":
        return EchoProvider(entry.name, delay=entry.delay)
    found = find_key(entry, environ)
    if found is None and entry.api_key_required:
        if not entry.models:
            raise ConfigError(
                f"provider {entry.name!r} lists no models and has no key to list them with; "
                "pass --model or add models to its entry"
            )
        raise ConfigError(f"no API key for provider {entry.name!r}: {', or '.join(key_ways(entry))}")
    return vendor_provider(entry, found.value if found else NO_KEY_PLACEHOLDER, environ)


def vendor_provider(
    entry: ProviderEntry, key: str, environ: Mapping[str, str]
) -> OpenAIProvider | AnthropicProvider | GeminiProvider:
    """The vendor's provider for ``entry`` (``openai``, ``anthropic``, ``gemini``) with ``key``."""
    variable, default_url = VENDOR_BASE_URL[entry.type]
    base_url = entry.base_url or environ.get(variable) or default_url
    options: dict[str, Any] = {
        "api_key": key,
        "base_url": base_url,
        "timeout": entry.timeout,
        "max_retries": entry.max_retries,
        "stream": entry.stream,
        "forward_metadata": entry.forward_metadata,
        "http_transport": entry.http_transport,
    }
    # Imported here: each vendor's package takes about a second to import, and runs that
    # use only the echo provider (the demo, most CLI calls) never need it.
    if entry.type == "anthropic":
        from ..backends._anthropic import AnthropicProvider

        return AnthropicProvider(entry.name, entry.models, api_version=entry.api_version, **options)
    if entry.type == "gemini":
        from ..backends._gemini import GeminiProvider

        return GeminiProvider(entry.name, entry.models, api_version=entry.api_version, **options)
    from ..backends._openai import OpenAIProvider

    return OpenAIProvider(entry.name, entry.models, max_tokens_param=entry.max_tokens_param, **options)


def key_ways(entry: ProviderEntry) -> list[str]:
    """The ways to give ``entry`` a key, each named once."""
    variables = [entry.api_key_env]
    if entry.base_url is None:
        variables += VENDOR_KEY_ENV.get(entry.type, ())
    ways = [f"export {v}" for v in dict.fromkeys(variables) if v]
    ways.append(f"run `host-receiver providers add {entry.name}`")
    return ways


def _entries(config: Config, provider: str | None) -> list[ProviderEntry]:
    if provider is None:
        return list(config.providers) or [ProviderEntry("echo", type="echo")]
    entry = config.entry(provider)
    if entry is not None:
        return [entry]
    if provider == "echo":
        return [ProviderEntry("echo", type="echo")]
    if provider == "openai":
        return [ProviderEntry("openai", type="openai")]
    if provider == "anthropic":
        return [ProviderEntry("anthropic", type="anthropic")]
    if provider == "gemini":
        return [ProviderEntry("gemini", type="gemini")]
    # The names `providers list` shows, no others.
    configured = ", ".join(p.name for p in config.providers)
    known = (
        f" (configured: {configured})"
        if configured
        else ": none is configured (`host-receiver providers list`)"
    )
    raise ConfigError(
        f"unknown provider {provider!r}{known}; add it with "
        f"`host-receiver providers add {provider} --base-url URL`"
    )


def _restrict(entries: list[ProviderEntry], model: str, *, explicit: bool) -> list[ProviderEntry]:
    listing = [e for e in entries if model in _model_ids(e)]
    if listing:
        return [replace(e, models=tuple(m for m in e.models if m.id == model)) for e in listing]
    if len(entries) != 1 or (not explicit and entries[0].type == "echo"):
        raise ConfigError(
            f"model {model!r} is not in any configured provider's catalogue; "
            "name the provider that serves it with --provider"
        )
    (entry,) = entries
    if entry.type == "echo":
        raise ConfigError(f"the echo provider serves only {ECHO_MODEL.id!r}")
    return [replace(entry, models=(listed_model(model, entry.name, entry.type),))]


def _model_ids(entry: ProviderEntry) -> set[str]:
    if entry.type == "echo":
        return {ECHO_MODEL.id}
    return {m.id for m in entry.models}
