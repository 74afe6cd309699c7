"""The OpenAI-compatible provider end to end: the real ``openai`` client against a loopback server.

Each test scripts the fake server, runs the provider, and asserts the exact
request body the client sent and the sampling result that came back.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from host_receiver.errors import ProviderError, UnsupportedRequest
from host_receiver.protocol.types import CreateMessageRequestParams, dump
from providers import ModelInfo, OpenAIProvider, SamplingProgress
from providers.backends._openai import default_max_tokens_param
from tests.fake_openai import Completion, Drop, ErrorReply, FakeOpenAI, ToolCall
from tests.schema import validate

pytestmark = pytest.mark.anyio

KEY = "sk-test-0123456789abcdef"
MODEL = ModelInfo("gpt-test", "fake")
FAST_RETRY = {"retry-after-ms": "1"}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def provider(fake: FakeOpenAI, **kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider("fake", [MODEL], api_key=KEY, base_url=fake.url, **kwargs)


def params(*messages: dict[str, Any], **extra: Any) -> CreateMessageRequestParams:
    raw = {"messages": list(messages) or [user("Hi")], "maxTokens": 64}
    return CreateMessageRequestParams.model_validate({**raw, **extra})


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": content}}


async def run(p: OpenAIProvider, request: CreateMessageRequestParams, **kw: Any) -> dict[str, Any]:
    try:
        result = await p.sample(request, MODEL, **kw)
    finally:
        await p.aclose()
    out = dump(result)
    validate("CreateMessageResult", out)
    return out


def recorder() -> tuple[list[tuple[int, str]], Callable[[SamplingProgress], Any]]:
    seen: list[tuple[int, str]] = []

    async def sink(update: SamplingProgress) -> None:
        seen.append((update.output_tokens, update.text))

    return seen, sink


# --- plain and streamed text ---------------------------------------------------


async def test_plain_request_body_headers_and_result(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text="Paris."))
    request = params(
        user("Hi"),
        {"role": "assistant", "content": {"type": "text", "text": "Hello!"}},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Capital"}, {"type": "text", "text": "of France?"}],
        },
        systemPrompt="Be brief.",
        temperature=0.2,
        stopSequences=["END"],
        metadata={"trace": "abc"},
    )
    out = await run(provider(fake), request)
    assert fake.chat_bodies == [
        {
            "model": "gpt-test",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Capital"}, {"type": "text", "text": "of France?"}],
                },
            ],
            "max_tokens": 64,
            "temperature": 0.2,
            "stop": ["END"],
        }
    ]
    headers = fake.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["content-type"] == "application/json"
    assert out == {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris."},
        "model": "gpt-test",
        "stopReason": "endTurn",
    }


async def test_streaming_reports_progress_and_sends_stream_options(fake: FakeOpenAI) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
    fake.queue(Completion(text="Hello from fake-openai.", usage=usage))
    seen, sink = recorder()
    out = await run(provider(fake), params(), progress=sink)
    assert fake.chat_bodies == [
        {
            "model": "gpt-test",
            "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 64,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ]
    assert seen == [
        (1, "Hello "),
        (2, "Hello from "),
        (3, "Hello from fake-openai."),
        (7, "Hello from fake-openai."),  # the backend's own count, from the usage chunk
    ]
    assert out["content"] == {"type": "text", "text": "Hello from fake-openai."}
    assert out["stopReason"] == "endTurn"


async def test_no_streaming_when_disabled(fake: FakeOpenAI) -> None:
    seen, sink = recorder()
    await run(provider(fake, stream=False), params(), progress=sink)
    assert "stream" not in fake.chat_bodies[0]
    assert seen == []


async def test_progress_text_is_bounded(fake: FakeOpenAI) -> None:
    fake.queue(Completion(pieces=tuple("x" * 100 for _ in range(50)), text=None))
    seen, sink = recorder()
    out = await run(provider(fake), params(), progress=sink)
    assert len(out["content"]["text"]) == 5000
    assert max(len(text) for _, text in seen) == 2000
    assert seen[-1][1].endswith("x" * 1999)


# --- parameters ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("https://my-res.openai.azure.com/openai/v1", "max_completion_tokens"),
        ("http://localhost:11434/v1", "max_tokens"),
        ("https://openrouter.ai/api/v1", "max_tokens"),
    ],
)
def test_max_tokens_parameter_by_host(base_url: str, expected: str) -> None:
    assert default_max_tokens_param(base_url) == expected


async def test_max_completion_tokens_when_configured(fake: FakeOpenAI) -> None:
    await run(provider(fake, max_tokens_param="max_completion_tokens"), params())
    assert fake.chat_bodies[0]["max_completion_tokens"] == 64
    assert "max_tokens" not in fake.chat_bodies[0]


async def test_metadata_is_forwarded_only_when_enabled_and_only_safe_entries(
    fake: FakeOpenAI,
) -> None:
    metadata = {"trace": "abc", "count": 3, "k" * 65: "long key", "big": "v" * 513, "ok": ""}
    await run(provider(fake), params(metadata=metadata))
    await run(provider(fake, forward_metadata=True), params(metadata=metadata))
    assert [body.get("metadata") for body in fake.chat_bodies] == [None, {"trace": "abc", "ok": ""}]


async def test_images_and_audio_are_sent_as_content_parts(fake: FakeOpenAI) -> None:
    request = params(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image", "data": "iVBORw0=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "audio", "data": "SUQz", "mimeType": "audio/mpeg"},
            ],
        }
    )
    await run(provider(fake), request)
    assert fake.chat_bodies[0]["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0="}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
            ],
        }
    ]


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (
            {"role": "user", "content": {"type": "audio", "data": "AA==", "mimeType": "audio/ogg"}},
            "audio of type audio/ogg",
        ),
        (
            {"role": "assistant", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}},
            "image content in an assistant message",
        ),
    ],
)
async def test_content_the_api_cannot_take_is_refused_before_any_request(
    fake: FakeOpenAI, message: dict[str, Any], words: str
) -> None:
    with pytest.raises(UnsupportedRequest, match=words):
        await run(provider(fake), params(message))
    assert fake.requests == []


# --- tools -----------------------------------------------------------------------

WEATHER = {
    "name": "get_weather",
    "description": "Weather for a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
HISTORY = (
    user("Weather in Paris and Rome?"),
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "toolUseId": "call_1",
                "content": [
                    {"type": "text", "text": "18C"},
                    {"type": "resource_link", "uri": "https://w.example/paris", "name": "paris"},
                ],
            },
            {
                "type": "tool_result",
                "toolUseId": "call_2",
                "content": [],
                "structuredContent": {"temp": 25},
                "isError": True,
            },
        ],
    },
)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "stream"])
async def test_tools_to_function_tools_and_back(fake: FakeOpenAI, streamed: bool) -> None:
    fake.queue(
        Completion(
            text="Let me look.",
            tool_calls=(
                ToolCall("call_9", "get_weather", '{"city": "Oslo"}'),
                ToolCall("call_10", "get_weather", ""),
            ),
        )
    )
    request = params(*HISTORY, tools=[WEATHER], toolChoice={"mode": "required"})
    _, sink = recorder()
    out = await run(provider(fake), request, progress=sink if streamed else None)
    body = fake.chat_bodies[0]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city",
                "parameters": WEATHER["inputSchema"],
            },
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["messages"] == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "18C\n[resource paris: https://w.example/paris]",
        },
        {"role": "tool", "tool_call_id": "call_2", "content": '[error] {"temp": 25}'},
    ]
    assert out == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "call_9", "name": "get_weather", "input": {"city": "Oslo"}},
            {"type": "tool_use", "id": "call_10", "name": "get_weather", "input": {}},
        ],
        "model": "gpt-test",
        "stopReason": "toolUse",
    }


@pytest.mark.parametrize(
    ("tools", "choice", "expected"),
    [
        ([WEATHER], "auto", "auto"),
        ([WEATHER], "required", "required"),
        ([WEATHER], "none", "none"),
        ([WEATHER], None, None),
        (None, "required", None),  # no tools: no tool_choice (the API would refuse it)
    ],
)
async def test_tool_choice_modes(
    fake: FakeOpenAI, tools: Any, choice: str | None, expected: str | None
) -> None:
    extra: dict[str, Any] = {}
    if tools:
        extra["tools"] = tools
    if choice:
        extra["toolChoice"] = {"mode": choice}
    await run(provider(fake), params(**extra))
    assert fake.chat_bodies[0].get("tool_choice") == expected


async def test_invalid_tool_arguments_fail_clearly(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text=None, tool_calls=(ToolCall("c", "get_weather", "{oops"),)))
    with pytest.raises(ProviderError, match="tool 'get_weather' with arguments that are not"):
        await run(provider(fake), params(tools=[WEATHER]))


# --- finish reasons ------------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(
    ("finish", "extra", "expected"),
    [
        ("stop", {}, "endTurn"),
        ("length", {}, "maxTokens"),
        ("content_filter", {}, "contentFilter"),
        ("tool_calls", {}, "toolUse"),
        ("stop", {"stop_reason": "END"}, "stopSequence"),  # vLLM names the matched stop
        ("stop", {"stop_reason": 128001}, "endTurn"),  # vLLM: a stop token id, not a sequence
    ],
)
async def test_finish_reasons(
    fake: FakeOpenAI, streamed: bool, finish: str, extra: dict[str, Any], expected: str
) -> None:
    fake.queue(Completion(text="ok", finish_reason=finish, choice_extra=extra))
    _, sink = recorder()
    request = params(stopSequences=["END"])
    out = await run(provider(fake), request, progress=sink if streamed else None)
    assert out["stopReason"] == expected


# --- errors and retries ------------------------------------------------------------


async def test_401_fails_at_once_with_a_useful_message(fake: FakeOpenAI) -> None:
    fake.queue(ErrorReply(status=401, message="Invalid token.", type="invalid_request_error"))
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake), params())
    assert str(caught.value) == (
        f"provider 'fake' ({fake.url}): HTTP 401, authentication failed; check the API key "
        "configured for this provider: Invalid token."
    )
    assert caught.value.status == 401
    assert len(fake.requests) == 1


async def test_429_is_retried_with_backoff_then_reported(fake: FakeOpenAI) -> None:
    fake.queue(*[ErrorReply(status=429, message="Slow down.", headers=FAST_RETRY)] * 3)
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake, max_retries=2), params())
    assert "HTTP 429, rate limited: Slow down. (after 3 attempts)" in str(caught.value)
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "1", "2"]


async def test_500_then_success_is_retried_transparently(fake: FakeOpenAI) -> None:
    fake.queue(ErrorReply(status=500, message="boom", headers=FAST_RETRY), Completion(text="ok"))
    out = await run(provider(fake, max_retries=2), params())
    assert out["content"]["text"] == "ok"
    assert len(fake.requests) == 2
    assert fake.chat_bodies[0] == fake.chat_bodies[1]


async def test_500_without_retries(fake: FakeOpenAI) -> None:
    fake.queue(ErrorReply(status=503, message="overloaded"))
    with pytest.raises(ProviderError, match=r"HTTP 503, server error: overloaded$"):
        await run(provider(fake, max_retries=0), params())


async def test_400_is_not_retried(fake: FakeOpenAI) -> None:
    fake.queue(ErrorReply(status=400, message="bad 'stop'", type="invalid_request_error"))
    with pytest.raises(ProviderError, match="HTTP 400, the request was rejected: bad 'stop'"):
        await run(provider(fake, max_retries=2), params())
    assert len(fake.requests) == 1


async def test_slow_response_times_out_and_the_server_sees_the_client_leave(
    fake: FakeOpenAI,
) -> None:
    fake.queue(Completion(delay=30))
    with pytest.raises(ProviderError, match=r"no response within 0\.3 s$"):
        await run(provider(fake, timeout=0.3, max_retries=0), params())
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)


async def test_dropped_connection_before_a_response(fake: FakeOpenAI) -> None:
    fake.queue(Drop())
    with pytest.raises(ProviderError, match="connection failed: Server disconnected"):
        await run(provider(fake, max_retries=0), params())


async def test_dropped_connection_is_retried(fake: FakeOpenAI, quick_sdk_retries: None) -> None:
    fake.queue(Drop(), Completion(text="second try"))
    out = await run(provider(fake, max_retries=1), params())
    assert out["content"]["text"] == "second try"


async def test_dropped_stream_fails_after_partial_progress(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text="one two three four", drop_after=3))
    seen, sink = recorder()
    with pytest.raises(ProviderError, match="connection failed: peer closed connection"):
        await run(provider(fake, max_retries=2), params(), progress=sink)
    assert seen == [(1, "one "), (2, "one two ")]
    assert len(fake.requests) == 1  # a stream that started is not retried


async def test_error_event_inside_a_stream(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text="one two three", error_after=2))
    seen, sink = recorder()
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake), params(), progress=sink)
    assert str(caught.value) == (
        f"provider 'fake' ({fake.url}): the backend reported an error: "
        "The server had an error while processing your request."
    )
    assert seen == [(1, "one ")]


async def test_tool_calls_without_ids_get_ids(fake: FakeOpenAI) -> None:
    fake.queue(Completion(text=None, tool_calls=(ToolCall("", "get_weather", "{}"),)))
    out = await run(provider(fake), params(tools=[WEATHER]))
    assert out["content"] == [{"type": "tool_use", "id": "call_0", "name": "get_weather", "input": {}}]


async def test_unreachable_server() -> None:
    with FakeOpenAI() as closed:
        url = closed.url
    p = OpenAIProvider("fake", [MODEL], api_key=KEY, base_url=url, max_retries=0)
    with pytest.raises(ProviderError, match=r"could not connect"):
        await run(p, params())


# --- cancellation --------------------------------------------------------------------


async def test_cancelling_a_stream_closes_the_request_promptly(
    fake: FakeOpenAI, record_property: Callable[[str, object], None]
) -> None:
    fake.queue(Completion(text=" ".join(["word"] * 200), chunk_delay=0.1))
    p = provider(fake)
    first = anyio.Event()

    async def sink(update: SamplingProgress) -> None:
        first.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(p.sample, params(), MODEL, sink)
        await first.wait()
        cancelled_at = time.monotonic()
        tg.cancel_scope.cancel()
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)
    record_property("disconnect_after_cancel_s", time.monotonic() - cancelled_at)
    assert not fake.requests[0].completed
    await p.aclose()


async def test_cancelling_a_waiting_request_closes_it(fake: FakeOpenAI) -> None:
    fake.queue(Completion(delay=30))
    p = provider(fake)
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(p.sample, params(), MODEL)
            await anyio.to_thread.run_sync(fake.wait_for_requests, 1)
            scope.cancel()
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)
    await p.aclose()


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_streaming_on_trio(fake: FakeOpenAI) -> None:
    seen, sink = recorder()
    out = await run(provider(fake), params(), progress=sink)
    assert out["content"]["text"] == "Hello from fake-openai."
    assert len(seen) == 3
