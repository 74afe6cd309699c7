"""The offline echo provider: deterministic, valid for every input, cancellable."""

from __future__ import annotations

from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from host_receiver.protocol.types import CreateMessageRequestParams, dump
from providers import ECHO_MODEL, EchoProvider, SamplingProgress, build_registry
from tests.schema import validate

pytestmark = pytest.mark.anyio


def params(text: str = "hello world", **extra: Any) -> CreateMessageRequestParams:
    raw = {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]}
    return CreateMessageRequestParams.model_validate({**raw, "maxTokens": 50, **extra})


async def sample(p: CreateMessageRequestParams, **kwargs: Any) -> dict[str, Any]:
    provider = EchoProvider(**kwargs)
    result = await provider.sample(p, provider.models()[0])
    out = dump(result)
    validate("CreateMessageResult", out)
    return out


async def test_echoes_the_last_user_message_with_an_offline_model_name() -> None:
    out = await sample(params("ping"))
    assert out == {
        "role": "assistant",
        "content": {"type": "text", "text": "echo: ping"},
        "model": "echo-offline",
        "stopReason": "endTurn",
    }
    assert "offline" in ECHO_MODEL.id


# (case, extra params, expected text, expected stopReason)
TEXT_CASES = [
    ("stop sequence", {"stopSequences": ["STOP", "wor"]}, "echo: hello ", "stopSequence"),
    ("max tokens in words", {"maxTokens": 2}, "echo: hello", "maxTokens"),
    (
        "tool choice none",
        {"tools": [{"name": "t", "inputSchema": {"type": "object"}}], "toolChoice": {"mode": "none"}},
        "echo: hello world",
        "endTurn",
    ),
]


@pytest.mark.parametrize(("extra", "text", "reason"), [pytest.param(*c[1:], id=c[0]) for c in TEXT_CASES])
async def test_text_rules(extra: dict[str, Any], text: str, reason: str) -> None:
    out = await sample(params(**extra))
    assert (out["content"]["text"], out["stopReason"]) == (text, reason)


async def test_media_are_described() -> None:
    p = CreateMessageRequestParams.model_validate(
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image", "data": "AA==", "mimeType": "image/png"},
                        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
                    ],
                }
            ],
            "maxTokens": 50,
        }
    )
    out = await sample(p)
    assert out["content"]["text"] == "echo: look [image image/png] [audio audio/wav]"


WEATHER = {
    "name": "get_weather",
    "inputSchema": {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 6},
            "units": {"enum": ["metric", "imperial"]},
            "days": {"type": "integer", "minimum": 1},
            "detail": {"type": "boolean", "default": True},
            "optional": {"type": "string"},
        },
        "required": ["city", "units", "days", "detail"],
    },
}


async def test_tools_get_a_call_with_arguments_valid_for_the_schema() -> None:
    out = await sample(params(tools=[WEATHER], toolChoice={"mode": "required"}))
    assert out["stopReason"] == "toolUse"
    call = out["content"][-1]
    assert call == {
        "type": "tool_use",
        "id": "echo_call_1",
        "name": "get_weather",
        "input": {"city": "echooo", "units": "metric", "days": 1, "detail": True},
    }
    jsonschema.validate(call["input"], WEATHER["inputSchema"])


async def test_tool_results_end_the_loop() -> None:
    p = CreateMessageRequestParams.model_validate(
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "weather?"}},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "toolUseId": "c1",
                            "content": [{"type": "text", "text": "sunny"}],
                        }
                    ],
                },
            ],
            "maxTokens": 50,
            "tools": [WEATHER],
        }
    )
    out = await sample(p)
    assert out["content"]["text"] == "echo: tool results: c1: sunny"
    assert out["stopReason"] == "endTurn"


async def test_progress_word_by_word_and_deterministic() -> None:
    seen: list[SamplingProgress] = []

    async def sink(update: SamplingProgress) -> None:
        seen.append(update)

    provider = EchoProvider()
    first = await provider.sample(params("a b c"), ECHO_MODEL, sink)
    second = await provider.sample(params("a b c"), ECHO_MODEL)
    assert first == second
    assert [(s.output_tokens, s.text) for s in seen] == [
        (1, "echo:"),
        (2, "echo: a"),
        (3, "echo: a b"),
        (4, "echo: a b c"),
    ]


async def test_a_slow_echo_is_cancelled_by_its_scope() -> None:
    provider = EchoProvider(delay=60)
    with anyio.move_on_after(0.05) as scope:
        await provider.sample(params(), ECHO_MODEL)
    assert scope.cancelled_caught


def test_echo_is_the_default_when_nothing_is_configured(tmp_path: Any) -> None:
    reg = build_registry(path=tmp_path / "none.toml", environ={})
    assert [m.id for m in reg.catalogue()] == ["echo-offline"]


# --- every valid input gets a valid result ----------------------------------------

texts = st.text(max_size=40)
b64 = st.sampled_from(["", "AA==", "aGVsbG8="])
text_block = st.builds(lambda t: {"type": "text", "text": t}, texts)
image_block = st.builds(lambda d: {"type": "image", "data": d, "mimeType": "image/png"}, b64)
audio_block = st.builds(lambda d: {"type": "audio", "data": d, "mimeType": "audio/wav"}, b64)
media = st.one_of(text_block, image_block, audio_block)
tool_use = st.builds(
    lambda i, n: {"type": "tool_use", "id": i, "name": n, "input": {}},
    st.text(min_size=1, max_size=5),
    st.sampled_from(["a", "b"]),
)
tool_result = st.builds(
    lambda i, c, e: {"type": "tool_result", "toolUseId": i, "content": c, "isError": e},
    st.text(min_size=1, max_size=5),
    st.lists(media, max_size=2),
    st.booleans(),
)
schemas = st.sampled_from(
    [
        {"type": "object"},
        WEATHER["inputSchema"],
        {
            "type": "object",
            "properties": {
                "xs": {"type": "array", "minItems": 2, "items": {"type": "number", "exclusiveMinimum": 3}}
            },
            "required": ["xs"],
        },
        {
            "type": "object",
            "properties": {
                "n": {"type": ["null", "integer"]},
                "o": {"type": "object", "properties": {"k": {"const": 7}}, "required": ["k"]},
            },
            "required": ["n", "o"],
        },
    ]
)
tools = st.lists(
    st.builds(lambda n, s: {"name": n, "inputSchema": s}, st.sampled_from(["a", "b"]), schemas),
    max_size=2,
)
message = st.one_of(
    st.builds(lambda c: {"role": "user", "content": c}, st.one_of(media, st.lists(media))),
    st.builds(lambda c: {"role": "user", "content": c}, st.lists(tool_result, min_size=1)),
    st.builds(
        lambda c: {"role": "assistant", "content": c}, st.lists(st.one_of(text_block, tool_use), min_size=1)
    ),
)
requests = st.fixed_dictionaries(
    {"messages": st.lists(message, min_size=1, max_size=4), "maxTokens": st.integers(1, 30)},
    optional={
        "tools": tools,
        "toolChoice": st.builds(lambda m: {"mode": m}, st.sampled_from(["auto", "none", "required"])),
        "stopSequences": st.lists(texts, max_size=2),
        "systemPrompt": texts,
        "temperature": st.floats(0, 2),
    },
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=requests)
def test_every_valid_request_gets_a_valid_result(raw: dict[str, Any]) -> None:
    validate("CreateMessageRequestParams", raw)
    p = CreateMessageRequestParams.model_validate(raw)
    out = anyio.run(sample, p)
    blocks = out["content"] if isinstance(out["content"], list) else [out["content"]]
    for block in blocks:
        if block["type"] == "tool_use":
            schema = next(t["inputSchema"] for t in raw["tools"] if t["name"] == block["name"])
            jsonschema.validate(block["input"], schema)
    assert anyio.run(sample, p) == out
