"""Building the registry for ``host-receiver run``: config file + ``--provider/--model`` + environment.

Rules:

* Without ``--provider``: every configured provider; with none configured, the
  offline echo provider alone (so the demo runs offline). Environment keys
  alone never switch on a paid backend.
* ``--provider NAME``: that entry alone. ``echo`` and ``openai`` work without
  an entry: ``openai`` then means the ``openai`` library's own defaults
  (``OPENAI_BASE_URL`` or OpenAI's URL, ``OPENAI_API_KEY`` or the keyring).
* ``--model ID``: the catalogue shrinks to that model. A model the chosen
  provider does not list is added with neutral ratings (0.5) and permissive
  capabilities (tools and images yes, audio no, 128k context); without
  ``--provider`` it must be listed by some configured provider, or exactly one
  provider must be configured.
* An OpenAI-compatible entry without models needs ``--model``.
* Keys follow :mod:`providers._credentials`; a missing key is a
  :class:`ConfigError` naming the ways to provide one, unless the entry says
  ``api_key_required = false`` (a placeholder key is sent then).
* ``OPENAI_BASE_URL`` applies to entries without a ``base_url`` of their own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from host_receiver.errors import ConfigError

from ._config import DEFAULT_BASE_URL, Config, ProviderEntry, config_path, load_config
from ._contract import ModelInfo, Provider
from ._credentials import find_key
from ._echo import ECHO_MODEL, EchoProvider
from ._registry import ProviderRegistry

__all__ = ["build_provider", "build_registry"]

BASE_URL_ENV = "OPENAI_BASE_URL"
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
    if model is not None:
        entries = _restrict(entries, model, explicit=provider is not None)
    built = [build_provider(entry, env) for entry in entries]
    return ProviderRegistry(built, aliases=config.aliases, allowed=config.servers, limits=config.limits)


def build_provider(entry: ProviderEntry, environ: Mapping[str, str]) -> Provider:
    """The provider for one entry, with its key resolved."""
    if entry.type == "echo":
        return EchoProvider(entry.name, delay=entry.delay)
    if not entry.models:
        raise ConfigError(f"provider {entry.name!r} lists no models; pass --model or add models to its entry")
    found = find_key(entry, environ)
    if found is None and entry.api_key_required:
        ways = [f"export {entry.api_key_env}"] if entry.api_key_env else []
        if entry.base_url is None:
            ways.append("export OPENAI_API_KEY")
        ways.append(f"run `host-receiver providers add {entry.name}`")
        raise ConfigError(f"no API key for provider {entry.name!r}: {', or '.join(ways)}")
    base_url = entry.base_url or environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    # Imported here: the openai package takes about a second to import, and runs that
    # use only the echo provider (the demo, most CLI calls) never need it.
    from ._openai import OpenAIProvider

    return OpenAIProvider(
        entry.name,
        entry.models,
        api_key=found.value if found else NO_KEY_PLACEHOLDER,
        base_url=base_url,
        timeout=entry.timeout,
        max_retries=entry.max_retries,
        stream=entry.stream,
        forward_metadata=entry.forward_metadata,
        max_tokens_param=entry.max_tokens_param,
        http_transport=entry.http_transport,
    )


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
    known = ", ".join(["echo", "openai", *(p.name for p in config.providers)])
    raise ConfigError(
        f"unknown provider {provider!r} (known: {known}); add it with "
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
    return [replace(entry, models=(ModelInfo(id=model, provider=entry.name),))]


def _model_ids(entry: ProviderEntry) -> set[str]:
    if entry.type == "echo":
        return {ECHO_MODEL.id}
    return {m.id for m in entry.models}
