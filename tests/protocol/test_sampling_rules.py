"""Sampling requests that break a protocol rule are refused with -32602 before any work."""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.errors import INVALID_PARAMS, RpcError
from host_receiver.protocol.sampling_rules import check_request
from host_receiver.protocol.types import CreateMessageRequestParams


def text(role: str, value: str = "x") -> dict[str, Any]:
    return {"role": role, "content": {"type": "text", "text": value}}


def use(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": i, "name": "f", "input": {}} for i in ids],
    }


def results(*ids: str, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    blocks = [{"type": "tool_result", "toolUseId": i, "content": []} for i in ids]
    return {"role": "user", "content": blocks + (extra or [])}


TOOLS = [{"name": "f", "inputSchema": {"type": "object"}}]

CASES: list[tuple[str, dict[str, Any], str | None]] = [
    ("plain", {"messages": [text("user")]}, None),
    ("tool round trip", {"messages": [text("user"), use("a", "b"), results("b", "a")], "tools": TOOLS}, None),
    ("single result object", {"messages": [text("user"), use("a"), {"role": "user", "content": {
        "type": "tool_result", "toolUseId": "a", "content": []}}], "tools": TOOLS}, None),
    ("missing result", {"messages": [text("user"), use("a", "b"), results("a")], "tools": TOOLS},
     "Tool result missing"),
    ("mixed content", {"messages": [text("user"), use("a"), results("a", extra=[
        {"type": "text", "text": "hi"}])], "tools": TOOLS}, "mixed with other content"),
    ("text instead of results", {"messages": [text("user"), use("a"), text("user")], "tools": TOOLS},
     "Tool result missing"),
    ("unknown tool_use id", {"messages": [text("user"), results("zzz")], "tools": TOOLS}, "unknown tool_use"),
    ("result from assistant", {"messages": [text("user"), {"role": "assistant", "content": {
        "type": "tool_result", "toolUseId": "a", "content": []}}]}, "belongs in a user message"),
    ("tool_use from user", {"messages": [{"role": "user", "content": {
        "type": "tool_use", "id": "a", "name": "f", "input": {}}}]}, "belongs in an assistant message"),
    ("dangling tool_use", {"messages": [text("user"), use("a")], "tools": TOOLS}, "Tool result missing"),
    ("empty messages", {"messages": []}, "must not be empty"),
    ("zero maxTokens", {"messages": [text("user")], "maxTokens": 0}, "positive"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "params", "error"), CASES, ids=[c[0] for c in CASES])
def test_sampling_rules(name: str, params: dict[str, Any], error: str | None) -> None:
    parsed = CreateMessageRequestParams.model_validate({"maxTokens": 100, **params})
    if error is None:
        check_request(parsed, tools_declared=True)
        return
    with pytest.raises(RpcError) as raised:
        check_request(parsed, tools_declared=True)
    assert raised.value.code == INVALID_PARAMS and error in raised.value.message


@pytest.mark.parametrize("field", [{"tools": TOOLS}, {"toolChoice": {"mode": "auto"}}])
def test_tools_need_the_declared_capability(field: dict[str, Any]) -> None:
    parsed = CreateMessageRequestParams.model_validate({"maxTokens": 5, "messages": [text("user")], **field})
    with pytest.raises(RpcError) as raised:
        check_request(parsed, tools_declared=False)
    assert raised.value.code == INVALID_PARAMS and "sampling.tools" in raised.value.message
