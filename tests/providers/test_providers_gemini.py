"""The Gemini provider end to end: the real ``google-genai`` package against a loopback Gemini API.

Each test scripts the fake server (tests/fake_gemini.py), runs the provider,
and asserts the exact request the SDK sent (path, key header, JSON body) and
the sampling result that came back (schema-valid).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from host_receiver.errors import ProviderError, UnsupportedRequest
from providers import ModelInfo
from tests.fake_gemini import FakeGemini
from tests.fake_openai import Completion, ErrorReply, RawBody, RawStream, ToolCall
from tests.providers.sampling import hinted_task, params, recorder, run, user

if TYPE_CHECKING:  # imported by the tests themselves: ``google-genai`` takes half a second
    from providers import GeminiProvider

pytestmark = pytest.mark.anyio

KEY = "AIza-test-0123456789abcdef"
MODEL = ModelInfo("gemini-test", "gem")
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode()
WAV = base64.b64encode(b"RIFF\x00\x00\x00\x00WAVEfmt fake").decode()
PDF = base64.b64encode(b"%PDF-1.7 fake").decode()
#: Ids as a server may write them: kept exactly, never split or rebuilt.
ODD_IDS = ("fc_01A:b/c", "call 2|x")
#: The request fields whose value is the caller's own JSON (a schema, arguments, a result).
FREE_FORM = frozenset({"parametersJsonSchema", "args", "response"})
GENERATE = "/v1beta/models/gemini-test:generateContent"
STREAM = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini(models=("gemini-test", "gemini-other")) as server:
        yield server


def provider(fake: FakeGemini, **kwargs: Any) -> GeminiProvider:
    from providers import GeminiProvider

    kwargs.setdefault("max_retries", 0)
    return GeminiProvider("gem", [MODEL], api_key=KEY, base_url=fake.url, **kwargs)


def camel(data: Any) -> Any:
    """``data`` with every field name in lowerCamelCase (free-form objects as they are).

    The Gemini API reads JSON by the proto3 mapping, which takes a field by its
    lowerCamelCase name or by its proto name alike; the SDK sends some fields by
    the latter (``inlineData.mime_type``, ``parameters_json_schema``).
    """
    if isinstance(data, dict):
        return {
            _camel(key): value if _camel(key) in FREE_FORM else camel(value) for key, value in data.items()
        }
    if isinstance(data, list):
        return [camel(item) for item in data]
    return data


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.capitalize() for word in rest)


async def test_plain_request_path_key_body_and_result(fake: FakeGemini) -> None:
    fake.queue(Completion(text="Hello there."))
    request = params(
        user("Hi"),
        systemPrompt="Be brief.",
        stopSequences=["END"],
        temperature=0.2,
        metadata={"user_id": "u"},
    )
    out = await run(provider(fake, forward_metadata=True), request)
    assert out == {
        "role": "assistant",
        "content": {"type": "text", "text": "Hello there."},
        "model": "gemini-test",
        "stopReason": "endTurn",
    }
    (sent,) = fake.requests
    assert sent.path == GENERATE
    assert sent.headers["x-goog-api-key"] == KEY
    # The Gemini API has no metadata field: nothing of it is sent, even when the entry forwards it.
    assert camel(sent.body) == {
        "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
        "systemInstruction": {"role": "user", "parts": [{"text": "Be brief."}]},
        "generationConfig": {"maxOutputTokens": 64, "temperature": 0.2, "stopSequences": ["END"]},
    }
    # The plan says so when the entry meant to forward it (the audit line's not_sent).
    assert provider(fake, forward_metadata=True).dropped(request) == ("metadata",)
    assert provider(fake).dropped(request) == ()


async def test_the_entry_chooses_the_api_version(fake: FakeGemini) -> None:
    await run(provider(fake, api_version="v1"), params())
    assert fake.requests[0].path == "/v1/models/gemini-test:generateContent"


async def test_streaming_reports_progress_with_the_backends_token_count(fake: FakeGemini) -> None:
    fake.queue(Completion(text="one two three"))
    seen, sink = recorder()
    out = await run(provider(fake), params(), progress=sink)
    assert out["content"] == {"type": "text", "text": "one two three"}
    assert fake.requests[0].path == STREAM
    assert [u.text for u in seen] == ["one ", "one two ", "one two three"]
    assert [u.characters for u in seen] == [4, 8, 13]
    assert [u.output_tokens for u in seen] == [1, 2, 3]  # the candidatesTokenCount of each chunk


async def test_no_streaming_when_disabled(fake: FakeGemini) -> None:
    seen, sink = recorder()
    await run(provider(fake, stream=False), params(), progress=sink)
    assert fake.requests[0].path == GENERATE and seen == []


async def test_images_audio_and_tool_results_are_sent_as_parts(fake: FakeGemini) -> None:
    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    audio = {"type": "audio", "data": WAV, "mimeType": "audio/wav"}
    pdf = {
        "type": "resource",
        "resource": {"uri": "file:///a.pdf", "mimeType": "application/pdf", "blob": PDF},
    }
    uses = [
        {"type": "tool_use", "id": ODD_IDS[0], "name": "snap", "input": {"zoom": 2}},
        {"type": "tool_use", "id": ODD_IDS[1], "name": "stats", "input": {}},
    ]
    results = [
        {
            "type": "tool_result",
            "toolUseId": ODD_IDS[0],
            "content": [{"type": "text", "text": "here"}, image, pdf],
            "isError": True,
        },
        {
            "type": "tool_result",
            "toolUseId": ODD_IDS[1],
            "content": [{"type": "text", "text": "ignored: structured wins"}],
            "structuredContent": {"count": 3},
        },
    ]
    request = params(
        {"role": "user", "content": [{"type": "text", "text": "Look and listen"}, image, audio]},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
        tools=[
            {"name": "snap", "inputSchema": {"type": "object"}},
            {"name": "stats", "inputSchema": {"type": "object"}},
        ],
    )
    await run(provider(fake), request)
    png = {"inlineData": {"mimeType": "image/png", "data": PNG}}
    assert camel(fake.requests[0].body)["contents"] == [
        {
            "role": "user",
            "parts": [
                {"text": "Look and listen"},
                png,
                {"inlineData": {"mimeType": "audio/wav", "data": WAV}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": ODD_IDS[0], "name": "snap", "args": {"zoom": 2}}},
                {"functionCall": {"id": ODD_IDS[1], "name": "stats", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": ODD_IDS[0],
                        "name": "snap",  # from the tool use of that id, not from the id
                        "response": {"error": "here"},
                        "parts": [png, {"inlineData": {"mimeType": "application/pdf", "data": PDF}}],
                    }
                },
                {
                    "functionResponse": {
                        "id": ODD_IDS[1],
                        "name": "stats",
                        "response": {"output": {"count": 3}},
                    }
                },
            ],
        },
    ]


async def test_a_tool_result_answering_no_tool_use_is_refused(fake: FakeGemini) -> None:
    result = {"type": "tool_result", "toolUseId": "nowhere", "content": []}
    with pytest.raises(UnsupportedRequest, match="answers no tool use of the request"):
        await run(provider(fake), params(user("Hi"), {"role": "user", "content": result}))
    assert fake.requests == []


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_tools_and_parallel_function_calls_keep_their_ids(fake: FakeGemini, streamed: bool) -> None:
    calls = (ToolCall(ODD_IDS[0], "weather", '{"city": "Paris"}'), ToolCall(ODD_IDS[1], "time", "{}"))
    fake.queue(Completion(text="Checking.", tool_calls=calls))
    tool = {"name": "weather", "description": "Weather now", "inputSchema": {"type": "object"}}
    schema = {"type": "object", "properties": {"zone": {"type": "string"}}, "additionalProperties": False}
    request = params(tools=[tool, {"name": "time", "inputSchema": schema}], toolChoice={"mode": "auto"})
    seen, sink = recorder()
    out = await run(provider(fake), request, progress=sink if streamed else None)
    assert out["stopReason"] == "toolUse"
    assert out["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": ODD_IDS[0], "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": ODD_IDS[1], "name": "time", "input": {}},
    ]
    body = camel(fake.requests[0].body)
    assert body["tools"] == [
        {
            "functionDeclarations": [
                {"name": "weather", "description": "Weather now", "parametersJsonSchema": {"type": "object"}},
                {"name": "time", "parametersJsonSchema": schema},  # the JSON Schema as given
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert bool(seen) == streamed


@pytest.mark.parametrize(("mode", "sent"), [("auto", "AUTO"), ("required", "ANY"), ("none", "NONE")])
async def test_tool_choice_modes(fake: FakeGemini, mode: str, sent: str) -> None:
    tool = {"name": "t", "inputSchema": {"type": "object"}}
    await run(provider(fake), params(tools=[tool], toolChoice={"mode": mode}))
    assert camel(fake.requests[0].body)["toolConfig"] == {"functionCallingConfig": {"mode": sent}}


async def test_a_call_without_an_id_gets_one_and_its_result_goes_back_under_it(fake: FakeGemini) -> None:
    fake.queue(Completion(text=None, tool_calls=(ToolCall("", "weather", '{"city": "Oslo"}'),)))
    tools = [{"name": "weather", "inputSchema": {"type": "object"}}]
    first = await run(provider(fake), params(tools=tools))
    (use,) = first["content"]
    assert use == {"type": "tool_use", "id": "call_0", "name": "weather", "input": {"city": "Oslo"}}
    result = {"type": "tool_result", "toolUseId": "call_0", "content": [{"type": "text", "text": "sunny"}]}
    await run(
        provider(fake),
        params(
            user("Weather?"),
            {"role": "assistant", "content": use},
            {"role": "user", "content": result},
            tools=tools,
        ),
    )
    sent = camel(fake.requests[1].body)["contents"]
    assert sent[1]["parts"] == [
        {"functionCall": {"id": "call_0", "name": "weather", "args": {"city": "Oslo"}}}
    ]
    assert sent[2]["parts"] == [
        {"functionResponse": {"id": "call_0", "name": "weather", "response": {"output": "sunny"}}}
    ]


async def test_a_thought_signature_goes_out_in_meta_and_comes_back_with_the_call(fake: FakeGemini) -> None:
    from providers.backends._gemini_wire import SIGNATURE_META

    signature = base64.b64encode(b"opaque signature").decode()
    part = {"functionCall": {"id": "c1", "name": "weather", "args": {}}, "thoughtSignature": signature}
    answer = {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP"}]}
    fake.queue(RawStream(events=(json.dumps(answer),)))
    _, sink = recorder()
    tools = [{"name": "weather", "inputSchema": {"type": "object"}}]
    out = await run(provider(fake), params(tools=tools), progress=sink)
    (use,) = out["content"]
    assert use["_meta"] == {SIGNATURE_META: signature}
    await run(provider(fake), params(user("Weather?"), {"role": "assistant", "content": use}, tools=tools))
    assert camel(fake.requests[1].body)["contents"][1]["parts"] == [part]


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ("STOP", "endTurn"),
        ("MAX_TOKENS", "maxTokens"),
        ("SAFETY", "safety"),
        ("RECITATION", "recitation"),
        ("PROHIBITED_CONTENT", "prohibitedContent"),
        ("MALFORMED_FUNCTION_CALL", "malformedFunctionCall"),
        ("OTHER", "other"),
    ],
)
@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_finish_reasons(fake: FakeGemini, reason: str, expected: str, streamed: bool) -> None:
    fake.queue(Completion(text="x", finish_reason=reason))
    _, sink = recorder()
    out = await run(provider(fake), params(), progress=sink if streamed else None)
    assert out["stopReason"] == expected


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_a_reply_of_the_wrong_shape_is_named_as_such(fake: FakeGemini, streamed: bool) -> None:
    part = {"functionCall": {"id": "c1", "name": "weather", "args": ["not", "an", "object"]}}
    answer = json.dumps({"candidates": [{"content": {"role": "model", "parts": [part]}}]})
    fake.queue(RawStream(events=(answer,)) if streamed else RawBody(body=answer.encode()))
    _, sink = recorder()
    with pytest.raises(ProviderError, match="the backend's reply is not what the Gemini API answers"):
        await run(provider(fake), params(), progress=sink if streamed else None)


async def test_a_blocked_prompt_is_a_failure_naming_the_reason(fake: FakeGemini) -> None:
    fake.queue(RawStream(events=(json.dumps({"promptFeedback": {"blockReason": "SAFETY"}}),)))
    _, sink = recorder()
    with pytest.raises(ProviderError, match=r"no candidates \(the prompt was blocked: SAFETY\)"):
        await run(provider(fake), params(), progress=sink)


async def test_rate_limited_names_the_status_and_when_to_come_back(fake: FakeGemini) -> None:
    fake.queue(ErrorReply(status=429, message="Resource has been exhausted", headers={"retry-after": "7"}))
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake), params())
    assert str(caught.value) == (
        f"provider 'gem' ({fake.url}): HTTP 429, rate limited: Resource has been exhausted (retry after 7 s)"
    )


@pytest.mark.slow
async def test_a_server_error_is_retried_as_the_entry_says(fake: FakeGemini) -> None:
    """The SDK's own backoff (about 1 s, and jitter) between the attempts: slow."""
    fake.queue(ErrorReply(status=503, message="busy"), Completion(text="fine"))
    out = await run(provider(fake, max_retries=1), params())
    assert out["content"] == {"type": "text", "text": "fine"} and fake.served == 2
    fake.queue(ErrorReply(status=503, message="busy"), ErrorReply(status=503, message="still busy"))
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake, max_retries=1), params())
    assert str(caught.value).endswith("HTTP 503, server error: still busy (after 2 attempts)")


async def test_a_rejected_key_is_named_and_never_shown(fake: FakeGemini) -> None:
    fake.queue(ErrorReply(status=400, message=f"API key not valid: {KEY}"))
    with pytest.raises(ProviderError) as caught:
        await run(provider(fake), params())
    assert "HTTP 400, the request was rejected: API key not valid" in str(caught.value)
    assert KEY not in str(caught.value)


async def test_an_error_event_inside_a_stream(fake: FakeGemini) -> None:
    fake.queue(Completion(text="one two three", error_after=2))
    _, sink = recorder()
    with pytest.raises(ProviderError, match="HTTP 503, server error: The server had an error"):
        await run(provider(fake), params(), progress=sink)


async def test_the_models_api_lists_the_models_that_generate_content(fake: FakeGemini) -> None:
    p = provider(fake)
    try:
        assert await p.list_models() == ["gemini-test", "gemini-other"]
    finally:
        await p.aclose()
    (listing,) = fake.requests
    assert listing.path.split("?")[0] == "/v1beta/models" and listing.headers["x-goog-api-key"] == KEY


async def test_a_gemini_hint_is_served_by_the_gemini_provider_and_the_plan_says_why(
    fake: FakeGemini, caplog: pytest.LogCaptureFixture
) -> None:
    """With OpenAI and Gemini configured, a Gemini hint goes to Gemini; the audit line and the
    approval view name the provider, the model and the reason."""
    caplog.set_level(logging.INFO, logger="host_receiver.audit")
    fake.queue(Completion(text="Bonjour."))
    from providers import GeminiProvider

    gemini = GeminiProvider("gem", [MODEL], api_key=KEY, base_url=fake.url)
    result, person = await hinted_task(gemini, "gemini-2.5-pro", temperature=0.5)
    assert result["model"] == "gemini-test" and result["content"] == {"type": "text", "text": "Bonjour."}
    assert camel(fake.requests[0].body)["generationConfig"]["temperature"] == 0.5
    reason = "hint 'gemini-2.5-pro' is of the gemini family"
    planned = "sampling planned requestor=notes provider=gem model=gemini-test"
    assert f"{planned} reason={reason} not_sent=-" in caplog.messages
    (view,) = person.views
    assert (view.provider, view.model, view.reason, view.not_sent) == ("gem", "gemini-test", reason, ())


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "stream"])
async def test_cancelling_a_call_closes_its_request(fake: FakeGemini, streamed: bool) -> None:
    """Cancelled while the backend waits (or streams slowly): the HTTP request is dropped at once."""
    fake.queue(Completion(text="one two three four", delay=0 if streamed else 30, chunk_delay=30))
    p = provider(fake)
    _, sink = recorder()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(partial(p.sample, params(), MODEL, sink if streamed else None))
            await anyio.to_thread.run_sync(fake.wait_for_requests, 1)
            scope.cancel()
    assert await anyio.to_thread.run_sync(fake.wait_for_disconnect, 10)
    assert not fake.requests[0].completed
    await p.aclose()
