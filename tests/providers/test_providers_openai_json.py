"""Reading chat-completions replies from raw JSON: what the provider makes of odd but real replies."""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.errors import ProviderError
from providers.backends._openai_json import StreamFold, completion_reply
from providers.backends._openai_wire import Reply
from providers.backends._wire import ToolCallBuffer


def choice(message: dict[str, Any], finish: str | None = "stop", **extra: Any) -> dict[str, Any]:
    return {"index": 0, "message": message, "finish_reason": finish, **extra}


def test_text_refusal_and_vllm_stop_reason() -> None:
    assert completion_reply({"choices": [choice({"content": "Paris."}, stop_reason="END")]}) == Reply(
        text="Paris.", finish_reason="stop", matched_stop="END"
    )
    refused = completion_reply({"choices": [choice({"content": None, "refusal": "I can't help."})]})
    assert refused.text == "I can't help."


def test_function_calls_are_read_and_other_tool_types_skipped() -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
        {"id": "b", "function": {"name": "g", "arguments": '{"x": 1}'}},  # no type: a function call
        {"id": "c", "type": "custom", "custom": {"name": "h", "input": "raw"}},
    ]
    reply = completion_reply({"choices": [choice({"content": None, "tool_calls": calls}, "tool_calls")]})
    assert reply.calls == [ToolCallBuffer("a", "f", "{}"), ToolCallBuffer("b", "g", '{"x": 1}')]
    assert reply.text == ""


@pytest.mark.parametrize("data", [{"choices": []}, {"choices": None}, {"error": "x"}, [], None])
def test_a_reply_without_choices_fails_clearly(data: object) -> None:
    with pytest.raises(ProviderError, match="the backend returned no choices"):
        completion_reply(data)


def test_mistyped_fields_read_as_absent() -> None:
    reply = completion_reply(
        {"choices": [{"message": {"content": 42, "tool_calls": "no"}, "finish_reason": 1}]}
    )
    assert reply == Reply(text="", finish_reason=None)


def test_stream_fold_text_refusal_tool_calls_usage_and_other_choices() -> None:
    fold = StreamFold()
    chunks: list[Any] = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"index": 0, "delta": {"content": "Hel"}}, {"index": 1, "delta": {"content": "x"}}]},
        {"choices": [{"index": 0, "delta": {"content": "lo"}}]},
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f"}}]}}
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}}
            ]
        },
        {
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"completion_tokens": 9}},
    ]
    grew = [fold.add(chunk) for chunk in chunks]
    assert grew == [False, True, True, True, True, True, False, False]
    assert fold.usage == 9
    assert fold.reply() == Reply(
        text="Hello", calls=[ToolCallBuffer("c1", "f", '{"a": 1}')], finish_reason="tool_calls"
    )

    refusing = StreamFold()
    assert refusing.add({"choices": [{"index": 0, "delta": {"content": None, "refusal": "No."}}]})
    assert refusing.reply().text == "No."
