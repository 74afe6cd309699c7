"""The Anthropic provider end to end: the real ``anthropic`` package against a loopback Messages API.

Each test scripts the fake server (tests/fake_anthropic.py), runs the provider,
and asserts the exact request body the SDK sent and the sampling result that
came back (schema-valid).
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from host_receiver import AutoApprove, Receiver, SamplingService
from host_receiver.errors import INVALID_PARAMS, ProviderError
from providers import ModelInfo, ProviderRegistry
from tests.fake_anthropic import FakeAnthropic
from tests.fake_openai import Completion, ErrorReply, ToolCall
from tests.providers.sampling import hinted_task, params, recorder, run, user
from tests.receiver_harness import connect, sampling_params

if TYPE_CHECKING:  # imported by the tests themselves: ``anthropic`` takes a second, paid by who runs them
    from providers import AnthropicProvider

pytestmark = pytest.mark.anyio

KEY = "sk-ant-test-0123456789abcdef"
MODEL = ModelInfo("claude-test", "claude")
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
PDF = base64.b64encode(b"%PDF-1.7 fake").decode()
#: Ids as a server may write them: kept exactly, never split or rebuilt.
ODD_IDS = ("toolu_01A:b/c", "call 2|x")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(models=("claude-test", "claude-other")) as server:
        yield server


def provider(fake: FakeAnthropic, **kwargs: Any) -> AnthropicProvider:
    from providers import AnthropicProvider

    kwargs.setdefault("max_retries", 0)
    return AnthropicProvider("claude", [MODEL], api_key=KEY, base_url=fake.url, **kwargs)


async def test_plain_request_body_headers_and_result(fake: FakeAnthropic) -> None:
    fake.queue(Completion(text="Hello there."))
    request = params(user("Hi"), systemPrompt="Be brief.", stopSequences=["END"], temperature=0.2)
    p = provider(fake)
    out = await run(p, request)
    assert out == {
        "role": "assistant",
        "content": {"type": "text", "text": "Hello there."},
        "model": "claude-test",
        "stopReason": "endTurn",
    }
    (sent,) = fake.requests
    assert sent.path == "/v1/messages"
    assert sent.headers["anthropic-version"] == p.api_version == "2026-10-21"  # the SDK's own
    assert KEY in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))
    # Under 2026-10-21 the Messages API takes no temperature: it is left out, and the provider says so.
    assert sent.body == {
        "model": "claude-test",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "system": "Be brief.",
        "stop_sequences": ["END"],
    }
    assert provider(fake).dropped(request) == ("temperature",)


async def test_an_older_api_version_pinned_by_the_entry_takes_temperature(fake: FakeAnthropic) -> None:
    request = params(temperature=0.2)
    pinned = provider(fake, api_version="2023-06-01")
    assert pinned.dropped(request) == ()
    await run(pinned, request)
    (sent,) = fake.requests
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.body["temperature"] == 0.2


async def test_streaming_reports_progress_with_the_backends_token_count(fake: FakeAnthropic) -> None:
    fake.queue(Completion(text="one two three"))
    seen, sink = recorder()
    out = await run(provider(fake), params(), progress=sink)
    assert out["content"] == {"type": "text", "text": "one two three"}
    assert fake.requests[0].body["stream"] is True
    assert [u.text for u in seen] == ["one ", "one two ", "one two three"]
    assert [u.characters for u in seen] == [4, 8, 13]


async def test_no_streaming_when_disabled(fake: FakeAnthropic) -> None:
    seen, sink = recorder()
    await run(provider(fake, stream=False), params(), progress=sink)
    assert "stream" not in fake.requests[0].body and seen == []


async def test_images_and_tool_results_with_images_and_pdfs_are_sent_as_blocks(fake: FakeAnthropic) -> None:
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    pdf = {
        "type": "resource",
        "resource": {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": PDF},
    }
    use = {"type": "tool_use", "id": ODD_IDS[0], "name": "snap", "input": {}}
    result = {
        "type": "tool_result",
        "toolUseId": ODD_IDS[0],
        "content": [{"type": "text", "text": "here"}, image, pdf],
        "isError": True,
    }
    request = params(
        {"role": "user", "content": [{"type": "text", "text": "Look"}, image]},
        {"role": "assistant", "content": use},
        {"role": "user", "content": result},
        tools=[{"name": "snap", "inputSchema": {"type": "object"}}],
    )
    await run(provider(fake), request)
    source = {"type": "base64", "media_type": "image/png", "data": PNG}
    assert fake.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image", "source": source},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": ODD_IDS[0], "name": "snap", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": ODD_IDS[0],
                    "content": [
                        {"type": "text", "text": "here"},
                        {"type": "image", "source": source},
                        {
                            "type": "document",
                            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                        },
                    ],
                    "is_error": True,
                }
            ],
        },
    ]


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_tools_and_parallel_tool_uses_keep_their_ids(fake: FakeAnthropic, streamed: bool) -> None:
    calls = (ToolCall(ODD_IDS[0], "weather", '{"city": "Paris"}'), ToolCall(ODD_IDS[1], "time", "{}"))
    fake.queue(Completion(text="Checking.", tool_calls=calls))
    tool = {"name": "weather", "description": "Weather now", "inputSchema": {"type": "object"}}
    request = params(
        tools=[tool, {"name": "time", "inputSchema": {"type": "object"}}], toolChoice={"mode": "auto"}
    )
    seen, sink = recorder()
    out = await run(provider(fake), request, progress=sink if streamed else None)
    assert out["stopReason"] == "toolUse"
    assert out["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": ODD_IDS[0], "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": ODD_IDS[1], "name": "time", "input": {}},
    ]
    body = fake.requests[0].body
    assert body["tools"] == [
        {"name": "weather", "description": "Weather now", "input_schema": {"type": "object"}},
        {"name": "time", "input_schema": {"type": "object"}},
    ]
    assert body["tool_choice"] == {"type": "auto"}
    assert bool(seen) == streamed


@pytest.mark.parametrize(("mode", "sent"), [("auto", "auto"), ("required", "any"), ("none", "none")])
async def test_tool_choice_modes(fake: FakeAnthropic, mode: str, sent: str) -> None:
    tool = {"name": "t", "inputSchema": {"type": "object"}}
    await run(provider(fake), params(tools=[tool], toolChoice={"mode": mode}))
    assert fake.requests[0].body["tool_choice"] == {"type": sent}


async def test_invalid_tool_input_fails_clearly(fake: FakeAnthropic) -> None:
    fake.queue(Completion(text=None, tool_calls=(ToolCall("t1", "weather", '{"city": '),)))
    _, sink = recorder()
    with pytest.raises(
        ProviderError, match="called tool 'weather' with arguments that are not a JSON object"
    ):
        await run(
            provider(fake),
            params(tools=[{"name": "weather", "inputSchema": {"type": "object"}}]),
            progress=sink,
        )


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("end_turn", "endTurn"),
        ("max_tokens", "maxTokens"),
        ("stop_sequence", "stopSequence"),
        ("refusal", "refusal"),
        ("pause_turn", "pauseTurn"),
    ],
)
@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_stop_reasons(fake: FakeAnthropic, reason: str, expected: str, streamed: bool) -> None:
    fake.queue(Completion(text="x", finish_reason=reason))
    _, sink = recorder()
    out = await run(provider(fake), params(), progress=sink if streamed else None)
    assert out["stopReason"] == expected


async def test_metadata_is_forwarded_only_when_the_entry_says_so(fake: FakeAnthropic) -> None:
    request = params(metadata={"user_id": "u-1", "other": "x"})
    await run(provider(fake), request)
    await run(provider(fake, forward_metadata=True), request)
    first, second = fake.requests
    assert "metadata" not in first.body
    assert second.body["metadata"] == {"user_id": "u-1"}


async def test_overloaded_names_the_status_and_when_to_come_back(fake: FakeAnthropic) -> None:
    fake.queue(
        ErrorReply(status=529, message="Overloaded", type="overloaded_error", headers={"retry-after": "7"})
    )
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake), params())
    assert str(caught.value) == (
        f"provider 'claude' ({fake.url}): HTTP 529, the backend is overloaded: Overloaded (retry after 7 s)"
    )


async def test_a_rejected_key_is_named_and_never_shown(fake: FakeAnthropic) -> None:
    fake.queue(ErrorReply(status=401, message=f"invalid x-api-key {KEY}", type="authentication_error"))
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake), params())
    assert "HTTP 401, authentication failed" in str(caught.value) and KEY not in str(caught.value)


async def test_an_error_event_inside_a_stream(fake: FakeAnthropic) -> None:
    fake.queue(Completion(text="one two three", error_after=4))
    _, sink = recorder()
    with pytest.raises(
        ProviderError, match="the backend reported an error: overloaded_error: The server had"
    ):
        await run(provider(fake), params(), progress=sink)


async def test_the_models_api_lists_the_catalogue(fake: FakeAnthropic) -> None:
    p = provider(fake)
    try:
        assert await p.list_models() == ["claude-test", "claude-other"]
    finally:
        await p.aclose()


async def test_audio_is_refused_before_a_task_exists_naming_the_content(fake: FakeAnthropic) -> None:
    """The Messages API takes no audio: a Claude model's catalogue entry says so, and the plan refuses."""
    from providers import AnthropicProvider

    registry = ProviderRegistry([AnthropicProvider("claude", [MODEL], api_key=KEY, base_url=fake.url)])
    audio = {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}
    request = sampling_params(messages=[{"role": "user", "content": audio}], task={})
    async with registry, connect(Receiver(sampling=SamplingService(registry, AutoApprove()))) as server:
        error = await server.error("sampling/createMessage", request)
        tasks = await server.request("tasks/list")
    assert error.code == INVALID_PARAMS
    assert (
        error.message
        == "no permitted model can serve this request: claude-test does not accept audio content"
    )
    assert tasks["tasks"] == [] and fake.requests == []


async def test_a_claude_hint_is_served_by_the_anthropic_provider_and_the_plan_says_why(
    fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    """With OpenAI and Anthropic configured, a Claude hint goes to Claude; the audit line and the
    approval view name the provider, the model, the reason and the temperature not sent."""
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    fake.queue(Completion(text="Bonjour."))
    from providers import AnthropicProvider

    claude = AnthropicProvider("claude", [MODEL], api_key=KEY, base_url=fake.url)
    result, person = await hinted_task(claude, "claude-3-sonnet", temperature=0.5)
    assert result["model"] == "claude-test" and result["content"] == {"type": "text", "text": "Bonjour."}
    assert "temperature" not in fake.requests[0].body
    reason = "hint 'claude-3-sonnet' is of the anthropic family"
    planned = "sampling planned requestor=notes provider=claude model=claude-test"
    assert f"{planned} reason={reason} not_sent=temperature" in caplog.messages
    (view,) = person.views
    assert (view.provider, view.model, view.reason, view.not_sent) == (
        "claude",
        "claude-test",
        reason,
        ("temperature",),
    )
