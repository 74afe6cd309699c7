"""No API key reaches a log record, an error, a progress report, a result or the CLI's output."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from host_receiver.errors import ProviderError
from host_receiver.protocol.types import CreateMessageRequestParams, dump
from host_receiver.sanitize import safe_url
from providers import ModelInfo, OpenAIProvider, SamplingProgress, build_registry
from providers.cli import main as providers_cli
from tests.fake_openai import Completion, ErrorReply, FakeOpenAI
from tests.providers.keyring_backends import MemoryKeyring, memory_keyring

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("memory_keyring")]
__all__ = ["memory_keyring"]

SK_KEY = "sk-proj-SECRETsecret0123456789"
PLAIN_KEY = "hunter2-plain-secret-value"  # nothing key-like about it: only exact redaction helps
MODEL = ModelInfo("gpt-test", "fake")
PARAMS = CreateMessageRequestParams.model_validate(
    {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 9}
)


def leaks(text: str) -> list[str]:
    """The secrets (or telling pieces of them) found in ``text``."""
    pieces = [SK_KEY, PLAIN_KEY, "SECRETsecret", "plain-secret"]
    return [p for p in pieces if p in text]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def echoing_errors(key: str) -> list[ErrorReply]:
    """Backends that quote the key back, whole, masked or in a header."""
    masked = key[:8] + "*" * 10 + key[-4:]
    return [
        ErrorReply(status=401, message=f"Incorrect API key provided: {key}."),
        ErrorReply(status=401, message=f"Incorrect API key provided: {masked}."),
        ErrorReply(status=500, message=f"upstream said: Authorization: Bearer {key}"),
        ErrorReply(status=400, message=f"bad request from key={key}"),
    ]


@pytest.mark.parametrize("key", [SK_KEY, PLAIN_KEY])
async def test_no_key_in_errors_results_progress_or_logs(
    fake: FakeOpenAI, caplog: pytest.LogCaptureFixture, key: str
) -> None:
    caplog.set_level(logging.DEBUG)
    shown: list[str] = []

    async def sink(update: SamplingProgress) -> None:
        shown.append(update.text)

    provider = OpenAIProvider("fake", [MODEL], api_key=key, base_url=fake.url, max_retries=0)
    shown.append(repr(provider))
    fake.queue(Completion(text="fine"), Completion(text="streamed fine"))
    shown.append(json.dumps(dump(await provider.sample(PARAMS, MODEL))))
    shown.append(json.dumps(dump(await provider.sample(PARAMS, MODEL, sink))))
    for reply in [*echoing_errors(key), Completion(delay=5)]:
        fake.queue(reply)
        slow = OpenAIProvider("fake", [MODEL], api_key=key, base_url=fake.url, max_retries=0, timeout=0.2)
        with pytest.raises(ProviderError) as caught:
            await (provider if isinstance(reply, ErrorReply) else slow).sample(PARAMS, MODEL)
        await slow.aclose()
        error = caught.value
        shown += [str(error), repr(error), "".join(traceback.format_exception(error))]
        shown.append(f"The model call failed: {error}")  # what a task's statusMessage says
    await provider.aclose()
    assert fake.requests[0].headers["authorization"] == f"Bearer {key}"  # it was really used
    shown += [r.getMessage() for r in caplog.records]
    shown += [caplog.text]
    assert any("***" in text for text in shown)  # the echoed keys were there, and masked
    found = {text: leaks(text) for text in shown if leaks(text)}
    assert found == {}


async def test_no_key_from_the_environment_or_keyring_in_registry_and_cli(
    fake: FakeOpenAI,
    tmp_path: Path,
    memory_keyring: MemoryKeyring,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    config = tmp_path / "config.toml"
    monkeypatch.setenv("MY_KEY", PLAIN_KEY)
    argv = ["add", "local", "--base-url", fake.url, "--model", "gpt-test", "--api-key-env", "MY_KEY"]
    assert providers_cli([*argv, "--config", str(config)]) == 0
    assert providers_cli(["list", "--config", str(config)]) == 0
    assert memory_keyring.passwords == {("host-receiver", "local"): PLAIN_KEY}
    registry = build_registry(path=config, environ={})
    fake.queue(ErrorReply(status=403, message=f"key {PLAIN_KEY} may not use gpt-test"))
    with pytest.raises(ProviderError) as caught:
        await registry.sample(PARAMS)
    await registry.aclose()
    env_registry = build_registry(provider="openai", model="m", environ={"OPENAI_API_KEY": SK_KEY})
    await env_registry.aclose()
    out = capsys.readouterr()
    texts = [config.read_text(), out.out, out.err, str(caught.value), repr(registry)]
    texts += [repr(env_registry), repr(env_registry.providers), caplog.text]
    assert "keyring" in out.out
    assert [t for t in texts if leaks(t)] == []


def test_a_key_in_the_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[providers.x]\nbase_url = "http://h/v1"\napi_key = "{SK_KEY}"\n')
    with pytest.raises(ProviderError) as caught:
        build_registry(path=config, environ={})
    assert "API keys are never read from the config file" in str(caught.value)
    assert not leaks(str(caught.value))


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:sk-secret@api.example:8443/v1?key=sk-2#frag", "https://api.example:8443/v1"),
        ("http://[::1]:8080/v1", "http://[::1]:8080/v1"),
        ("http://localhost:99999/v1", "(an invalid URL)"),  # a port out of range
        ("http://[::1/v1", "(an invalid URL)"),  # an unclosed IPv6 literal
    ],
)
def test_a_url_is_shown_without_credentials_query_or_fragment_and_never_raises(url: str, shown: str) -> None:
    assert safe_url(url) == shown
