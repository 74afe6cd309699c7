"""The TOML config file and building the registry for ``run`` from config, flags and environment."""

from __future__ import annotations

import ntpath
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import keyring.backends.fail
import keyring.backends.null
import platformdirs.macos
import platformdirs.unix
import platformdirs.windows
import pytest

from host_receiver.errors import ConfigError
from host_receiver.paths import user_config_dir, written_out_config_dir
from host_receiver.protocol.types import CreateMessageRequestParams
from providers import (
    CONFIG_ENV,
    Config,
    EchoProvider,
    ModelInfo,
    OpenAIProvider,
    ProviderEntry,
    ProviderLimits,
    build_registry,
    config_path,
    find_key,
    load_config,
    save_config,
    store_key,
)
from tests.fake_anthropic import FakeAnthropic
from tests.fake_gemini import FakeGemini
from tests.fake_openai import ErrorReply, FakeOpenAI
from tests.providers.keyring_backends import FILE_ENV, MemoryKeyring, PlaintextKeyring, memory_keyring

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("memory_keyring")]
__all__ = ["memory_keyring"]

PARAMS = CreateMessageRequestParams.model_validate(
    {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 9}
)
FULL = Config(
    providers=(
        ProviderEntry(
            "openai",
            models=(
                ModelInfo("gpt-4o-mini", "openai", cost=0.9, speed=0.8, intelligence=0.6),
                ModelInfo("gpt-4o", "openai", cost=0.3, intelligence=0.9, audio=True),
            ),
            max_tokens_param="max_completion_tokens",
        ),
        ProviderEntry(
            "ollama",
            base_url="http://localhost:11434/v1",
            api_key_required=False,
            timeout=30.0,
            max_retries=0,
            stream=False,
            forward_metadata=True,
            http_transport="httpx",
            models=(ModelInfo("llama3.2:3b", "ollama", tools=False, images=False, context_tokens=8192),),
        ),
        ProviderEntry("demo", type="echo", delay=0.5),
    ),
    aliases={"claude-3-sonnet": "gpt-4o", "claude": "gpt-4o-mini"},
    servers={"weather": ("gpt-4o-mini",), "*": ("llama3.2:3b",)},
    limits=ProviderLimits(max_tokens=4096, max_messages=50),
)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_round_trip_keeps_every_setting_and_the_order(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    save_config(FULL, path)
    assert load_config(path) == FULL
    text = path.read_text()
    assert text.index("[providers.openai]") < text.index("[providers.ollama]")


def test_missing_file_is_an_empty_config(tmp_path: Path) -> None:
    assert load_config(tmp_path / "nope.toml") == Config()


def test_config_path_argument_then_environment_then_platform(tmp_path: Path) -> None:
    assert config_path(tmp_path / "a.toml", {CONFIG_ENV: "/elsewhere.toml"}) == tmp_path / "a.toml"
    assert config_path(None, {CONFIG_ENV: "/elsewhere.toml"}) == Path("/elsewhere.toml")
    default = config_path(None, {})
    assert default.name == "config.toml" and "host-receiver" in str(default)


PLATFORMDIRS: dict[
    str, type[platformdirs.unix.Unix | platformdirs.macos.MacOS | platformdirs.windows.Windows]
] = {
    "linux": platformdirs.unix.Unix,
    "darwin": platformdirs.macos.MacOS,
    "win32": platformdirs.windows.Windows,
}


@pytest.mark.parametrize(
    ("platform", "environ"),
    [
        ("linux", {}),
        ("linux", {"XDG_CONFIG_HOME": "/xdg/config"}),
        ("linux", {"XDG_CONFIG_HOME": "relative/config"}),
        ("darwin", {}),
        ("darwin", {"XDG_CONFIG_HOME": "/xdg/config"}),
        ("win32", {"LOCALAPPDATA": r"C:\Users\me\AppData\Local"}),
    ],
    ids=lambda v: str(v) if isinstance(v, str) else ",".join(v) or "no-variables",
)
def test_without_platformdirs_the_config_dir_is_the_one_platformdirs_gives(
    platform: str, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library alone (no [cli] extra) keeps its files where the CLI's platformdirs does."""
    monkeypatch.setenv("HOME", "/home/me")
    for name in ("XDG_CONFIG_HOME", "LOCALAPPDATA", "WIN_PD_OVERRIDE_LOCAL_APPDATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    # Off Windows, platformdirs can only read the folder from the environment, as the rule does.
    windows = platformdirs.windows
    monkeypatch.setattr(windows, "_RESOLVE_WIN_FOLDER", windows.get_win_folder_from_env_vars)
    expected = PLATFORMDIRS[platform]("host-receiver", appauthor=False).user_config_dir
    if platform == "win32":
        expected = ntpath.normpath(expected)  # platformdirs joins with this OS's separator
    assert written_out_config_dir(platform, environ, "/home/me") == expected


def test_the_default_paths_are_the_same_without_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    with_it = (user_config_dir(), config_path(None, {}))
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # as if not installed
    assert (user_config_dir(), config_path(None, {})) == with_it


# (case, TOML text, words the error must contain)
BAD = [
    ("invalid TOML", "[providers", "invalid TOML"),
    ("unknown top-level key", "colour = 1", "colour is not a known setting"),
    ("typo in an entry", '[providers.x]\nbase_ulr = "u"', "providers.x.base_ulr is not a known"),
    ("key in the file", '[providers.x]\ntoken = "t"', "API keys are never read from the config"),
    (
        "bad type",
        '[providers.x]\ntype = "claude"',
        'type must be "openai" or "anthropic" or "gemini" or "echo"',
    ),
    ("rating out of range", '[[providers.x.models]]\nid = "m"\ncost = 2', "models[0].cost must be between"),
    ("model without id", "[[providers.x.models]]\ncost = 0.1", "models[0].id is required"),
    ("duplicate model", '[[providers.x.models]]\nid = "m"\n[[providers.x.models]]\nid = "m"', "twice"),
    ("negative timeout", "[providers.x]\ntimeout = -1", "providers.x.timeout must be positive"),
    ("bad transport", '[providers.x]\nhttp_transport = "h2"', 'providers.x.http_transport must be "lean" or'),
    ("boolean as string", '[providers.x]\nstream = "yes"', "providers.x.stream must be true or false"),
    ("allow-list not a list", '[servers.s]\nallowed_models = "m"', "must be a list"),
    ("bad limit", "[limits]\nmax_tokens = 0", "limits.max_tokens must be an integer of at least 1"),
    ("alias not a string", "[aliases]\nx = 1", "aliases.x must be a non-empty string"),
]


@pytest.mark.parametrize(("text", "words"), [pytest.param(*c[1:], id=c[0]) for c in BAD])
def test_config_errors_name_the_key(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert words in str(caught.value)
    assert str(path) in str(caught.value)


# --- building the registry ----------------------------------------------------------


def test_nothing_configured_means_offline_echo(tmp_path: Path) -> None:
    registry = build_registry(path=tmp_path / "none.toml", environ={"OPENAI_API_KEY": "sk-x"})
    assert [type(p) for p in registry.providers] == [EchoProvider]


async def test_provider_openai_works_with_only_the_standard_environment(
    fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-123456")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.url)
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "absent.toml"))
    async with build_registry(provider="openai", model="my-model") as registry:
        result = await registry.sample(PARAMS)
    assert result.model == "my-model"
    assert fake.chat_bodies[0]["model"] == "my-model"
    assert fake.requests[0].headers["authorization"] == "Bearer sk-env-key-123456"


#: Per vendor: its fake, the variables of its key and base URL, and the path its models API answers on.
VENDORS = {
    "openai": (FakeOpenAI, "OPENAI_API_KEY", "OPENAI_BASE_URL", "/v1/models"),
    "anthropic": (FakeAnthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "/v1/models"),
    "gemini": (FakeGemini, "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "/v1beta/models"),
}


@pytest.mark.parametrize("vendor", list(VENDORS))
async def test_an_entry_without_models_takes_the_ones_its_api_lists_when_a_key_is_present(
    vendor: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kind, key_variable, url_variable, models_path = VENDORS[vendor]
    with kind(models=("first-model", "second-model")) as fake:
        environ = {key_variable: "k-123456", url_variable: fake.url}
        registry = build_registry(provider=vendor, config=Config(), environ=environ)
        assert registry.catalogue() == ()  # listed when the registry opens
        async with registry:
            assert [m.id for m in registry.catalogue()] == ["first-model", "second-model"]
            result = await registry.sample(PARAMS)
        (listing, sampling) = fake.requests
    assert listing.method == "GET" and listing.path.split("?")[0] == models_path
    assert sampling.method == "POST" and result.model == "first-model"
    # Gemini's API takes audio: a model it lists accepts it; the others' do not.
    assert registry.catalogue()[0].audio == (vendor == "gemini")


async def test_a_listing_that_fails_names_the_provider_and_what_to_do(fake: FakeOpenAI) -> None:
    fake.models_error = ErrorReply(status=401, message="bad key", type="invalid_request_error")
    environ = {"OPENAI_API_KEY": "k-123456", "OPENAI_BASE_URL": fake.url}
    registry = build_registry(provider="openai", config=Config(), environ=environ)
    with pytest.raises(ConfigError) as caught:
        async with registry:
            pass
    assert str(caught.value).startswith(
        "provider 'openai' lists no models in its entry, and listing them failed: "
        f"provider 'openai' ({fake.url}): HTTP 401, authentication failed"
    )
    assert str(caught.value).endswith("; add models to its entry or pass --model")


def test_a_gemini_model_takes_audio_unless_its_entry_says_otherwise(tmp_path: Path) -> None:
    """The Gemini API takes audio: a model of a gemini entry accepts it unless ``audio = false``."""
    path = tmp_path / "config.toml"
    path.write_text(
        '[providers.gem]\ntype = "gemini"\n[[providers.gem.models]]\nid = "g1"\n'
        '[[providers.gem.models]]\nid = "g2"\naudio = false\n'
        '[providers.oa]\ntype = "openai"\n[[providers.oa.models]]\nid = "o1"\n'
    )
    config = load_config(path)
    audio = {m.id: m.audio for entry in config.providers for m in entry.models}
    assert audio == {"g1": True, "g2": False, "o1": False}
    save_config(config, path)
    assert load_config(path) == config  # a round trip keeps each


def test_an_entry_without_models_or_key_needs_a_model(tmp_path: Path) -> None:
    configured = Config(providers=(ProviderEntry("openai", type="openai"),))
    with pytest.raises(
        ConfigError, match="'openai' lists no models and has no key to list them with; pass --model"
    ):
        build_registry(provider="openai", config=configured, environ={})
    with pytest.raises(ConfigError, match=r"^provider 'openai' is not configured: set OPENAI_API_KEY or run"):
        build_registry(provider="openai", config=Config(), environ={})


def test_missing_key_says_how_to_provide_one(memory_keyring: MemoryKeyring) -> None:
    with pytest.raises(ConfigError) as caught:
        build_registry(provider="openai", model="m", config=Config(), environ={})
    assert str(caught.value) == (
        "no API key for provider 'openai': export OPENAI_API_KEY, or run `host-receiver providers add openai`"
    )


def entry(name: str, **kwargs: Any) -> ProviderEntry:
    return ProviderEntry(name, models=(ModelInfo("m", name),), **kwargs)


# (case, entry, environment, keyring contents, expected key source or None)
KEYS = [
    ("api_key_env first", entry("p", api_key_env="MINE"), {"MINE": "a", "OPENAI_API_KEY": "b"},
     {"p": "c"}, "from $MINE"),
    ("OPENAI_API_KEY before the keyring", entry("p"), {"OPENAI_API_KEY": "b"}, {"p": "c"},
     "from $OPENAI_API_KEY"),
    ("keyring", entry("p"), {}, {"p": "c"}, "keyring"),
    ("empty variable skipped", entry("p", api_key_env="MINE"), {"MINE": ""}, {"p": "c"}, "keyring"),
    ("OPENAI_API_KEY never goes to another base URL", entry("p", base_url="http://h/v1"),
     {"OPENAI_API_KEY": "b"}, {}, None),
    ("nothing", entry("p"), {}, {"q": "c"}, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("the_entry", "environ", "stored", "source"), [pytest.param(*c[1:], id=c[0]) for c in KEYS]
)
def test_key_lookup_order(
    memory_keyring: MemoryKeyring,
    the_entry: ProviderEntry,
    environ: dict[str, str],
    stored: dict[str, str],
    source: str | None,
) -> None:
    for name, value in stored.items():
        store_key(name, value)
    found = find_key(the_entry, environ)
    assert (found.source if found else None) == source


async def test_keyless_local_server_gets_a_placeholder(fake: FakeOpenAI) -> None:
    config = Config(providers=(entry("ollama", base_url=fake.url, api_key_required=False),))
    async with build_registry(config=config, environ={}) as registry:
        await registry.sample(PARAMS)
    assert fake.requests[0].headers["authorization"] == "Bearer no-key-needed"


def test_model_flag_restricts_or_extends_the_catalogue() -> None:
    env = {"OPENAI_API_KEY": "k"}
    registry = build_registry(model="gpt-4o", config=FULL, environ=env)
    assert [(m.provider, m.id) for m in registry.catalogue()] == [("openai", "gpt-4o")]
    added = build_registry(provider="ollama", model="qwen3", config=FULL, environ=env)
    assert added.catalogue() == (ModelInfo("qwen3", "ollama"),)
    with pytest.raises(ConfigError, match="name the provider that serves it with --provider"):
        build_registry(model="qwen3", config=FULL, environ=env)
    with pytest.raises(ConfigError, match="serves only 'echo-offline'"):
        build_registry(provider="echo", model="gpt-4o", config=Config(), environ={})
    echo = build_registry(model="echo-offline", config=Config(), environ={})
    assert [m.id for m in echo.catalogue()] == ["echo-offline"]


def test_settings_reach_the_registry_and_providers() -> None:
    registry = build_registry(config=FULL, environ={"OPENAI_API_KEY": "k"})
    assert registry.aliases == FULL.aliases
    assert registry.limits == FULL.limits
    assert registry.allowed_models("weather") == ("gpt-4o-mini",)
    assert registry.allowed_models("other") == ("llama3.2:3b",)
    openai_p, ollama_p, demo = registry.providers
    assert isinstance(openai_p, OpenAIProvider) and isinstance(ollama_p, OpenAIProvider)
    assert (openai_p.base_url, openai_p.max_tokens_param) == (
        "https://api.openai.com/v1",
        "max_completion_tokens",
    )
    assert (ollama_p.timeout, ollama_p.max_retries, ollama_p.stream) == (30.0, 0, False)
    assert ollama_p.forward_metadata and ollama_p.max_tokens_param == "max_tokens"
    assert (openai_p.http_transport, ollama_p.http_transport) == ("lean", "httpx")
    assert isinstance(demo, EchoProvider) and demo.delay == 0.5


def test_unknown_provider_lists_the_configured_ones() -> None:
    configured = ", ".join(p.name for p in FULL.providers)
    with pytest.raises(ConfigError, match=rf"^unknown provider 'groq' \(configured: {configured}\); add it"):
        build_registry(provider="groq", config=FULL, environ={})


def test_without_a_usable_keyring_lookups_are_empty_and_storing_explains() -> None:
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())  # type: ignore[no-untyped-call]
    try:
        assert find_key(entry("p"), {}) is None
        with pytest.raises(
            ConfigError, match=r"no OS keyring is available; store no key .*--runtime-key-env VAR"
        ):
            store_key("p", "secret")
    finally:
        keyring.set_keyring(previous)


@pytest.mark.parametrize(
    ("backend", "problem"),
    [
        (keyring.backends.null.Keyring, "keeps nothing"),
        (PlaintextKeyring, "stores secrets unencrypted"),
    ],
    ids=["null", "plain-text"],
)
def test_a_keyring_that_would_not_keep_the_key_safe_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, backend: type[Any], problem: str
) -> None:
    """As the OAuth token store does: a null keyring drops keys, a plain-text one exposes them."""
    monkeypatch.setenv(FILE_ENV, str(tmp_path / "keys.json"))
    previous = keyring.get_keyring()
    keyring.set_keyring(backend())
    try:
        with pytest.raises(ConfigError, match=f"{problem}; store no key and read it from a variable"):
            store_key("p", "secret")
        assert not (tmp_path / "keys.json").exists()
        assert find_key(entry("p"), {}) is None
    finally:
        keyring.set_keyring(previous)
