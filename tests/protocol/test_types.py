"""Wire models keep what the schema allows them to carry, and refuse what it forbids."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    Task,
    dump,
)
from tests.schema import validate

ROUND_TRIPS: list[tuple[type[BaseModel], str, dict[str, Any]]] = [
    (
        CreateMessageRequestParams,
        "CreateMessageRequestParams",
        {
            "_meta": {"progressToken": "p", "vendor.example/trace": {"id": 7}},
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "hi", "_meta": {"k": 1}}},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "f", "input": {"x": [1, 2]}}]},
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": "c1", "content": [
                    {"type": "text", "text": "42"},
                    {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"}],
                    "structuredContent": {"v": 42}, "isError": False}]},
                {"role": "user", "content": {"type": "image", "data": "aGk=", "mimeType": "image/png",
                                             "annotations": {"audience": ["user"], "priority": 0.5}}},
                {"role": "user", "content": {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}},
            ],
            "modelPreferences": {"hints": [{"name": "claude-3-sonnet"}], "costPriority": 0.2,
                                 "speedPriority": 0.3, "intelligencePriority": 0.9},
            "systemPrompt": "Be brief.",
            "includeContext": "none",
            "temperature": 0.7,
            "maxTokens": 100,
            "stopSequences": ["\n\n"],
            "metadata": {"anything": {"nested": True}},
            "tools": [{"name": "f", "description": "d", "inputSchema": {"type": "object", "properties": {}},
                       "annotations": {"readOnlyHint": True}}],
            "toolChoice": {"mode": "required"},
            "task": {"ttl": 60000},
        },
    ),
    (
        CreateMessageResult,
        "CreateMessageResult",
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "model": "m",
         "stopReason": "somethingNew", "_meta": {"x": 1}},
    ),
    (
        ElicitRequestFormParams,
        "ElicitRequestFormParams",
        {"mode": "form", "message": "m", "requestedSchema": {"type": "object", "properties": {
            "a": {"type": "string", "title": "A"}}}, "_meta": {"progressToken": 3}},
    ),
    (
        ElicitRequestURLParams,
        "ElicitRequestURLParams",
        {"mode": "url", "message": "m", "url": "https://example.com", "elicitationId": "e", "task": {}},
    ),
    (ElicitResult, "ElicitResult", {"action": "accept", "content": {"a": "x", "n": 3, "b": True, "l": ["p"]},
                                    "_meta": {"y": 2}}),
    (Task, "Task", {"taskId": "t", "status": "input_required", "createdAt": "c", "lastUpdatedAt": "u",
                    "ttl": None, "pollInterval": 5}),
]  # fmt: skip


@pytest.mark.parametrize(("model", "definition", "wire"), ROUND_TRIPS, ids=[r[1] for r in ROUND_TRIPS])
def test_round_trip_keeps_every_field(model: type[BaseModel], definition: str, wire: dict[str, Any]) -> None:
    validate(definition, wire)
    parsed = model.model_validate(wire)
    again = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert again == wire


def test_unknown_extra_fields_survive() -> None:
    wire = {"messages": [], "maxTokens": 1, "futureField": {"a": 1}}
    assert dump(CreateMessageRequestParams.model_validate(wire))["futureField"] == {"a": 1}


def test_elicit_result_keeps_booleans_and_floats_apart() -> None:
    result = ElicitResult.model_validate({"action": "accept", "content": {"b": True, "f": 1.5, "i": 2}})
    assert result.content == {"b": True, "f": 1.5, "i": 2}
    assert type(result.content["b"]) is bool and type(result.content["i"]) is int


@pytest.mark.parametrize(
    "bad",
    [
        {"messages": [{"role": "system", "content": {"type": "text", "text": "x"}}], "maxTokens": 1},
        {"messages": [{"role": "user", "content": {"type": "video", "data": "x"}}], "maxTokens": 1},
        {"messages": [], "maxTokens": 1, "modelPreferences": {"costPriority": 2}},
        {"messages": [], "maxTokens": 1, "includeContext": "everything"},
        {"messages": [], "maxTokens": 1, "toolChoice": {"mode": "sometimes"}},
    ],
)
def test_what_the_schema_forbids_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CreateMessageRequestParams.model_validate(bad)
