"""Wire types are the schema's, strictly: a boolean is not an integer, a string is not a number.

Each request goes through a receiver scope (tests/receiver_harness.py), so the
error is also checked against the official schema. Every refusal is -32602
naming the field by its wire path; nothing is created and nothing is sampled.
"""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.errors import INVALID_PARAMS, RpcError
from host_receiver.receiver import Receiver
from host_receiver.session import Session
from host_receiver.transports.memory import create_memory_pair
from tests.receiver_harness import connect, form_params, sampling_params, sampling_script

pytestmark = pytest.mark.anyio

TEXT = {"type": "text", "text": "hi"}


def with_meta(params: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    return {**params, "_meta": meta}


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("sampling/createMessage", sampling_params(maxTokens=True), "maxTokens"),
        ("sampling/createMessage", sampling_params(maxTokens="50"), "maxTokens"),
        ("sampling/createMessage", sampling_params(maxTokens=50.5), "maxTokens"),
        ("sampling/createMessage", sampling_params(task={"ttl": True}), "task.ttl"),
        ("sampling/createMessage", sampling_params(task={"ttl": "60000"}), "task.ttl"),
        ("sampling/createMessage", sampling_params(task=True), "task"),
        ("sampling/createMessage", sampling_params(temperature="0.5"), "temperature"),
        ("sampling/createMessage", sampling_params(temperature=False), "temperature"),
        ("sampling/createMessage", sampling_params(stopSequences=[1]), "stopSequences.0"),
        ("sampling/createMessage", sampling_params(modelPreferences={"costPriority": True}), "costPriority"),
        ("sampling/createMessage", sampling_params(systemPrompt=7), "systemPrompt"),
        (
            "sampling/createMessage",
            sampling_params(messages=[{"role": "user", "content": {"type": "text", "text": 5}}]),
            "messages.0.content.text.text",
        ),
        (
            "sampling/createMessage",
            sampling_params(
                messages=[
                    {
                        "role": "user",
                        "content": {"type": "tool_result", "toolUseId": "c", "content": [], "isError": 1},
                    }
                ]
            ),
            "isError",
        ),
        (
            "sampling/createMessage",
            with_meta(sampling_params(), {"progressToken": [1]}),
            "_meta.progressToken",
        ),
        (
            "sampling/createMessage",
            with_meta(sampling_params(), {"progressToken": True}),
            "_meta.progressToken",
        ),
        (
            "sampling/createMessage",
            with_meta(sampling_params(), {"progressToken": 1.5}),
            "_meta.progressToken",
        ),
        ("elicitation/create", form_params(message=1), "message"),
        ("elicitation/create", form_params(task={"ttl": False}), "task.ttl"),
        ("elicitation/create", with_meta(form_params(), {"progressToken": None}), "_meta.progressToken"),
        ("tasks/get", {"taskId": 5}, "taskId"),
        ("tasks/get", {"taskId": "x", "_meta": {"progressToken": {}}}, "_meta.progressToken"),
        ("tasks/result", {"taskId": True}, "taskId"),
        ("tasks/list", {"cursor": 3}, "cursor"),
        ("tasks/cancel", {"taskId": ["x"]}, "taskId"),
    ],
)
async def test_a_value_of_another_type_is_refused_naming_the_field(
    method: str, params: dict[str, Any], field: str
) -> None:
    script = sampling_script(block=False)
    receiver = Receiver(sampling=script, elicitation=script)
    async with connect(receiver) as server:
        error = await server.error(method, params)
        assert error.code == INVALID_PARAMS, error
        assert field in error.message, error.message
        assert script.calls == []
        assert (await server.request("tasks/list"))["tasks"] == []  # nothing was created


@pytest.mark.parametrize(
    "params",
    [
        sampling_params(maxTokens=50.0),  # an integer, as JSON Schema counts them
        sampling_params(temperature=1),  # an integer is a number
        sampling_params(modelPreferences={"speedPriority": 1, "intelligencePriority": 0.5}),
        sampling_params(task={"ttl": 60000.0}),
        with_meta(sampling_params(), {"progressToken": "t-1"}),
        with_meta(sampling_params(), {"progressToken": -7, "vendor.example/flag": [True]}),
    ],
)
async def test_values_the_schema_allows_are_accepted(params: dict[str, Any]) -> None:
    script = sampling_script(block=False)
    async with connect(Receiver(sampling=script)) as server:
        result = await server.request("sampling/createMessage", params)
    assert ("task" in result) == ("task" in params)
    if "task" not in params:
        assert result["content"] == TEXT | {"text": "hi there"}
    sent = script.calls[0][0] if script.calls else None
    if sent is not None:
        assert type(sent.max_tokens) is int


async def test_ping_with_a_malformed_progress_token_is_refused() -> None:
    """The session answers ``ping`` itself, and checks its ``_meta`` like any request's."""
    client_side, server_side = create_memory_pair()
    async with Session(client_side), Session(server_side) as server:
        with pytest.raises(RpcError) as caught:
            await server.request("ping", {"_meta": {"progressToken": [1]}})
        assert await server.request("ping", {"_meta": {"progressToken": 1}}) == {}
    assert caught.value.code == INVALID_PARAMS
    assert "_meta.progressToken" in caught.value.message
