"""The TOML configuration file: provider entries, catalogue, aliases, allow-lists, limits.

Rules:

* Location: the ``path`` argument, else ``$HOST_RECEIVER_CONFIG``, else
  ``config.toml`` in host-receiver's directory of the user's config directory
  (:func:`~host_receiver.paths.user_config_dir`).
  A missing file is an empty configuration.
* API keys are never read from or written to this file: a key-like entry
  (``api_key``, ``key``, ``token``, ``secret``, ``password``) is an error that
  says where keys go instead. Unknown keys are errors too (typos fail loudly).
* Order is meaning: providers and their models are listed in the catalogue in
  file order (the host's preference for ties), and aliases apply in file order.
* Writing is atomic (temporary file, then rename) and preserves every setting.

Layout::

    [limits]                       # providers.SamplingLimits: the host's bounds on a request
    max_tokens = 32768
    max_messages = 1000
    max_tool_rounds = 32
    over_max_tokens = "clamp"      # or "refuse": what a larger maxTokens gets
    deadline = 300.0               # seconds for one whole sampling call (retries included)
    max_reply_chars = 1048576      # the longest reply taken; a longer one stops its stream

    [aliases]                      # hint (family) -> model id
    "claude-3-sonnet" = "gpt-4o"

    [providers.openai]
    type = "openai"                # "openai" (any OpenAI-compatible API), "anthropic", "gemini" or "echo"
    base_url = "https://api.openai.com/v1"   # absent: $OPENAI_BASE_URL, else OpenAI
    api_key_env = "MY_OPENAI_KEY"  # optional: read the key from this variable
    api_key_required = true        # false for keyless local servers (Ollama)
    timeout = 120.0                # seconds, for connecting and for every read (not retried)
    max_retries = 2
    stream = true                  # stream to report progress
    forward_metadata = false
    max_tokens_param = "max_completion_tokens"   # or "max_tokens"; absent: by host
    http_transport = "lean"        # or "httpx": the HTTP pool for an http(s) base URL

    [[providers.openai.models]]
    id = "gpt-4o-mini"
    cost = 0.9                     # 0..1, 1 = cheapest
    speed = 0.8                    # 0..1, 1 = fastest
    intelligence = 0.6             # 0..1, 1 = most capable
    tools = true
    images = true
    audio = false                  # absent: false, but true in a "gemini" entry (the API takes audio)
    context_tokens = 128000

    [providers.claude]
    type = "anthropic"             # the Messages API; base_url absent: $ANTHROPIC_BASE_URL, else Anthropic
    api_version = "2023-06-01"     # optional: the anthropic-version sent (absent: the SDK's)

    [providers.gemini]
    type = "gemini"                # the Gemini API; base_url absent: $GOOGLE_GEMINI_BASE_URL, else Google
    api_version = "v1beta"         # optional: the API version in the path (absent: v1beta)

    [providers.demo]
    type = "echo"                  # offline; no key, no models to list
    delay = 2.0                    # seconds per answer, to demo progress

    [servers."my-server"]          # "*" applies to servers not listed
    allowed_models = ["gpt-4o-mini"]
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, cast

from host_receiver.errors import ConfigError
from host_receiver.paths import user_config_dir

from .._contract import ModelInfo, listed_model
from .._limits import SamplingLimits
from ..backends._settings import DEFAULT_ANTHROPIC_URL, DEFAULT_BASE_URL, DEFAULT_GEMINI_URL, HttpTransport

__all__ = [
    "CONFIG_ENV",
    "DEFAULT_ANTHROPIC_URL",
    "DEFAULT_BASE_URL",
    "DEFAULT_GEMINI_URL",
    "PROVIDER_TYPES",
    "Config",
    "ProviderEntry",
    "config_path",
    "load_config",
    "parse_config",
    "save_config",
]

CONFIG_ENV = "HOST_RECEIVER_CONFIG"
ProviderType = Literal["openai", "anthropic", "gemini", "echo"]
#: The entry types, as the config file and ``providers add --type`` spell them.
PROVIDER_TYPES: tuple[ProviderType, ...] = ("openai", "anthropic", "gemini", "echo")
_SECRET_KEYS = {"api_key", "apikey", "key", "token", "secret", "password"}


@dataclass(frozen=True)
class ProviderEntry:
    """One configured provider; ``models`` is its catalogue."""

    name: str
    type: ProviderType = "openai"
    base_url: str | None = None
    api_key_env: str | None = None
    api_key_required: bool = True
    timeout: float = 120.0
    max_retries: int = 2
    stream: bool = True
    forward_metadata: bool = False
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None
    http_transport: HttpTransport = "lean"
    api_version: str | None = None  # anthropic: the anthropic-version; gemini: the path's version
    delay: float = 0.0  # echo only: seconds per answer
    models: tuple[ModelInfo, ...] = ()


@dataclass(frozen=True)
class Config:
    """The whole configuration file."""

    providers: tuple[ProviderEntry, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    servers: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    limits: SamplingLimits = field(default_factory=SamplingLimits)

    def entry(self, name: str) -> ProviderEntry | None:
        """The provider entry called ``name``, if any."""
        return next((p for p in self.providers if p.name == name), None)

    def with_entry(self, entry: ProviderEntry) -> Config:
        """A copy with ``entry`` added, or replacing the entry of the same name in place."""
        names = [p.name for p in self.providers]
        if entry.name in names:
            providers = tuple(entry if p.name == entry.name else p for p in self.providers)
        else:
            providers = (*self.providers, entry)
        return replace(self, providers=providers)

    def without_entry(self, name: str) -> Config:
        """A copy without the entry called ``name``."""
        return replace(self, providers=tuple(p for p in self.providers if p.name != name))


def config_path(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Path:
    """Where the configuration lives (see the module rules)."""
    if path is not None:
        return Path(path)
    env = os.environ if environ is None else environ
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    return user_config_dir() / "config.toml"


def load_config(path: Path) -> Config:
    """The configuration in ``path``; an empty one when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    return parse_config(data, str(path))


def save_config(config: Config, path: Path) -> None:
    """Write ``config`` to ``path`` atomically, creating the directory if needed.

    Needs ``tomli-w``, which comes with the CLI extra (``host-receiver[cli]``).
    """
    try:
        import tomli_w
    except ImportError:
        raise ConfigError(
            "writing the configuration needs tomli-w: pip install 'host-receiver[cli]'"
        ) from None
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "# host-receiver configuration. API keys are kept in the OS keyring, never here.\n\n"
    text += tomli_w.dumps(_to_dict(config))
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- parsing -----------------------------------------------------------------


def parse_config(data: Mapping[str, Any], source: str = "config") -> Config:
    """Validate a parsed TOML document; errors name the offending key."""
    r = _Reader(source)
    r.keys(data, "", {"providers", "aliases", "servers", "limits"})
    providers = []
    for name, table in r.table(data.get("providers", {}), "providers").items():
        providers.append(_entry(r, name, r.table(table, f"providers.{name}")))
    aliases = {
        str(k): r.string(v, f"aliases.{k}") for k, v in r.table(data.get("aliases", {}), "aliases").items()
    }
    servers = {}
    for name, table in r.table(data.get("servers", {}), "servers").items():
        where = f"servers.{name}"
        r.keys(r.table(table, where), where, {"allowed_models"})
        allowed = table.get("allowed_models", [])
        if not isinstance(allowed, list):
            raise r.error(f"{where}.allowed_models", "must be a list of model ids")
        servers[str(name)] = tuple(r.string(m, f"{where}.allowed_models") for m in allowed)
    limits_table = r.table(data.get("limits", {}), "limits")
    r.keys(limits_table, "limits", set(_LIMIT_KEYS))
    defaults = SamplingLimits()
    counts = {
        key: r.integer(limits_table.get(key, getattr(defaults, key)), f"limits.{key}", 1)
        for key in _LIMIT_KEYS
        if key not in ("over_max_tokens", "deadline")
    }
    policy = limits_table.get("over_max_tokens", defaults.over_max_tokens)
    if policy not in ("clamp", "refuse"):
        raise r.error("limits.over_max_tokens", "must be 'clamp' or 'refuse'")
    deadline = r.number(limits_table.get("deadline", defaults.deadline), "limits.deadline", positive=True)
    limits = SamplingLimits(**counts, over_max_tokens=policy, deadline=deadline)
    return Config(tuple(providers), aliases, servers, limits)


_ENTRY_KEYS = {f.name for f in fields(ProviderEntry)} - {"name"}
_LIMIT_KEYS = tuple(f.name for f in fields(SamplingLimits))
_MODEL_KEYS = {f.name for f in fields(ModelInfo)} - {"provider"}


def _entry(r: _Reader, name: str, table: Mapping[str, Any]) -> ProviderEntry:
    where = f"providers.{name}"
    r.keys(table, where, _ENTRY_KEYS)
    default = ProviderEntry(name)
    kind = table.get("type", default.type)
    if kind not in PROVIDER_TYPES:
        raise r.error(f"{where}.type", "must be " + " or ".join(f'"{t}"' for t in PROVIDER_TYPES))
    param = table.get("max_tokens_param")
    if param not in (None, "max_tokens", "max_completion_tokens"):
        raise r.error(f"{where}.max_tokens_param", 'must be "max_tokens" or "max_completion_tokens"')
    transport = table.get("http_transport", default.http_transport)
    if transport not in ("lean", "httpx"):
        raise r.error(f"{where}.http_transport", 'must be "lean" or "httpx"')
    models_raw = table.get("models", [])
    if not isinstance(models_raw, list):
        raise r.error(f"{where}.models", "must be an array of tables ([[...models]])")
    models = tuple(
        _model(
            r, listed_model("-", name, str(kind)), r.table(m, f"{where}.models[{i}]"), f"{where}.models[{i}]"
        )
        for i, m in enumerate(models_raw)
    )
    seen = [m.id for m in models]
    if len(set(seen)) != len(seen):
        raise r.error(f"{where}.models", "lists a model id twice")
    optional = r.optional_string
    return ProviderEntry(
        name=name,
        type=cast(ProviderType, kind),
        base_url=optional(table.get("base_url"), f"{where}.base_url"),
        api_key_env=optional(table.get("api_key_env"), f"{where}.api_key_env"),
        api_key_required=r.boolean(table.get("api_key_required", True), f"{where}.api_key_required"),
        timeout=r.number(table.get("timeout", default.timeout), f"{where}.timeout", positive=True),
        max_retries=r.integer(table.get("max_retries", default.max_retries), f"{where}.max_retries", 0),
        stream=r.boolean(table.get("stream", True), f"{where}.stream"),
        forward_metadata=r.boolean(table.get("forward_metadata", False), f"{where}.forward_metadata"),
        max_tokens_param=param,
        http_transport=cast(HttpTransport, transport),
        api_version=optional(table.get("api_version"), f"{where}.api_version"),
        delay=r.number(table.get("delay", 0.0), f"{where}.delay"),
        models=models,
    )


def _model(r: _Reader, default: ModelInfo, table: Mapping[str, Any], where: str) -> ModelInfo:
    """A model's table, the keys it leaves out taken from ``default`` (the entry type's)."""
    r.keys(table, where, _MODEL_KEYS)
    if "id" not in table:
        raise r.error(f"{where}.id", "is required")
    ratings = {
        k: r.number(table.get(k, getattr(default, k)), f"{where}.{k}", unit=True)
        for k in ("cost", "speed", "intelligence")
    }
    flags = {
        k: r.boolean(table.get(k, getattr(default, k)), f"{where}.{k}") for k in ("tools", "images", "audio")
    }
    return ModelInfo(
        id=r.string(table["id"], f"{where}.id"),
        provider=default.provider,
        cost=ratings["cost"],
        speed=ratings["speed"],
        intelligence=ratings["intelligence"],
        tools=flags["tools"],
        images=flags["images"],
        audio=flags["audio"],
        context_tokens=r.integer(
            table.get("context_tokens", default.context_tokens), f"{where}.context_tokens", 1
        ),
    )


class _Reader:
    """Typed access to TOML values with errors that name the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, where: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {where} {problem}")

    def keys(self, table: Mapping[str, Any], where: str, allowed: set[str]) -> None:
        for key in table:
            here = f"{where}.{key}" if where else key
            if key.lower() in _SECRET_KEYS:
                raise self.error(
                    here,
                    "is not allowed: API keys are never read from the config file; store the "
                    "key with `host-receiver providers add` (OS keyring) or name an environment "
                    "variable with api_key_env",
                )
            if key not in allowed:
                raise self.error(here, f"is not a known setting (known: {', '.join(sorted(allowed))})")

    def table(self, value: object, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(where, "must be a table")
        return value

    def string(self, value: object, where: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.error(where, "must be a non-empty string")
        return value

    def optional_string(self, value: object, where: str) -> str | None:
        return None if value is None else self.string(value, where)

    def boolean(self, value: object, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(where, "must be true or false")
        return value

    def integer(self, value: object, where: str, minimum: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.error(where, f"must be an integer of at least {minimum}")
        return value

    def number(self, value: object, where: str, *, unit: bool = False, positive: bool = False) -> float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.error(where, "must be a number")
        if unit and not 0 <= value <= 1:
            raise self.error(where, "must be between 0 and 1")
        if positive and value <= 0:
            raise self.error(where, "must be positive")
        if value < 0:
            raise self.error(where, "must not be negative")
        return float(value)


# --- writing -----------------------------------------------------------------


def _to_dict(config: Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    defaults = SamplingLimits()
    limits = {
        k: getattr(config.limits, k) for k in _LIMIT_KEYS if getattr(config.limits, k) != getattr(defaults, k)
    }
    if limits:
        out["limits"] = limits
    if config.aliases:
        out["aliases"] = dict(config.aliases)
    if config.providers:
        out["providers"] = {p.name: _entry_dict(p) for p in config.providers}
    if config.servers:
        out["servers"] = {k: {"allowed_models": list(v)} for k, v in config.servers.items()}
    return out


def _entry_dict(entry: ProviderEntry) -> dict[str, Any]:
    default = ProviderEntry(entry.name)
    table: dict[str, Any] = {"type": entry.type}
    for name in sorted(_ENTRY_KEYS - {"type", "models"}):
        value = getattr(entry, name)
        if value is not None and value != getattr(default, name):
            table[name] = value
    if entry.models:
        table["models"] = [
            {k: getattr(m, k) for k in ("id", *sorted(_MODEL_KEYS - {"id"}))} for m in entry.models
        ]
    return table
