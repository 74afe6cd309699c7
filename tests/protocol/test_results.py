"""Typed results (host_receiver/protocol/results.py): what a server sent, as models, in both eras.

Each example is first checked against the official schema of its era, so the
models are tested on what a conforming server may send; ``model_dump()`` must
give that JSON back, key for key and number for number.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from host_receiver.client.connection import ClientConnection
from host_receiver.errors import BadResult
from host_receiver.protocol.jsonrpc import Request
from host_receiver.protocol.results import (
    BlobResourceContents,
    CallToolResult,
    GetPromptResult,
    ListedTool,
    ReadResourceResult,
    TextResourceContents,
)
from host_receiver.protocol.types import EmbeddedResource, ImageContent, ResourceLink, TextContent
from host_receiver.testing import FakeServer
from tests.cli_command import run_cli
from tests.schema import LEGACY, MODERN, validate

pytestmark = pytest.mark.anyio

RAW_SERVER = Path(__file__).parent.parent / "servers" / "stdio_mcp_server.py"

#: Keys in an order no model declares, and an integer in a float field (priority).
TEXT = {
    "_meta": {"k": 1},
    "text": "héllo",
    "type": "text",
    "annotations": {"priority": 1, "audience": ["user"]},
}
CONTENT = [
    TEXT,
    {"type": "image", "data": "aGk=", "mimeType": "image/png"},
    {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "size": 12, "title": "A"},
    {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "aGk=", "mimeType": "x/y"}},
]
LEGACY_CALL = {
    "isError": False,
    "vendorField": {"kept": True},
    "content": CONTENT,
    "structuredContent": {"n": 1, "x": [1, 2.5, None]},
    "_meta": {"trace": "t-1"},
}
#: 2026-07-28: resultType is required and structuredContent may be any JSON value.
MODERN_CALL = {**LEGACY_CALL, "resultType": "complete", "structuredContent": [1, "two"]}
PROMPT = {
    "description": "a prompt",
    "messages": [{"content": TEXT, "role": "user"}, {"role": "assistant", "content": CONTENT[4]}],
}
RESOURCE = {
    "contents": [
        {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "a"},
        {"uri": "file:///b.bin", "blob": "aGk="},
    ]
}
TOOL = {
    "name": "deploy",
    "title": "Deploy",
    "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}},
    "annotations": {"destructiveHint": True},
    "icons": [{"src": "https://example.com/i.png"}],
}

EXAMPLES = [
    pytest.param(CallToolResult, "CallToolResult", LEGACY_CALL, LEGACY, id="call-legacy"),
    pytest.param(CallToolResult, "CallToolResult", MODERN_CALL, MODERN, id="call-modern"),
    pytest.param(GetPromptResult, "GetPromptResult", PROMPT, LEGACY, id="prompt-legacy"),
    pytest.param(
        GetPromptResult, "GetPromptResult", {**PROMPT, "resultType": "complete"}, MODERN, id="prompt-modern"
    ),
    pytest.param(ReadResourceResult, "ReadResourceResult", RESOURCE, LEGACY, id="resource-legacy"),
    pytest.param(
        ReadResourceResult,
        "ReadResourceResult",
        {**RESOURCE, "resultType": "complete", "cacheScope": "private", "ttlMs": 5000},
        MODERN,
        id="resource-modern",
    ),
    pytest.param(ListedTool, "Tool", TOOL, LEGACY, id="tool-legacy"),
    pytest.param(ListedTool, "Tool", TOOL, MODERN, id="tool-modern"),
]


def same_json(dumped: Any, sent: Any) -> bool:
    """Whether two JSON values encode alike: the same keys in the same order, an integer never
    a float (1 is not 1.0)."""
    return json.dumps(dumped) == json.dumps(sent)


@pytest.mark.parametrize(("model", "definition", "sent", "version"), EXAMPLES)
def test_a_schema_valid_result_dumps_back_to_what_the_server_sent(
    model: type[CallToolResult | GetPromptResult | ReadResourceResult | ListedTool],
    definition: str,
    sent: dict[str, Any],
    version: str,
) -> None:
    validate(definition, sent, version=version)
    parsed = model.model_validate(sent)
    assert same_json(parsed.model_dump(), sent)
    assert same_json(json.loads(parsed.model_dump_json()), sent)


def test_the_fields_are_typed_and_what_the_schema_does_not_name_is_kept() -> None:
    result = CallToolResult.model_validate(MODERN_CALL)
    text, image, _, link, embedded = result.content
    assert isinstance(text, TextContent) and text.text == "héllo" and text.meta == {"k": 1}
    assert isinstance(image, ImageContent) and image.mime_type == "image/png"
    assert isinstance(link, ResourceLink) and link.model_extra == {"size": 12, "title": "A"}
    assert isinstance(embedded, EmbeddedResource)
    assert (result.result_type, result.is_error, result.meta) == ("complete", False, {"trace": "t-1"})
    assert result.structured_content == [1, "two"]
    assert result.model_extra == {"vendorField": {"kept": True}}
    assert result.text == "héllo"
    contents = ReadResourceResult.model_validate(RESOURCE).contents
    assert [type(c) for c in contents] == [TextResourceContents, BlobResourceContents]
    assert GetPromptResult.model_validate(PROMPT).messages[1].role == "assistant"


def test_a_changed_field_is_dumped_as_it_is_now_after_the_servers_keys() -> None:
    result = CallToolResult.model_validate({"isError": False, "content": [TEXT]})
    result.is_error = True
    result.structured_content = {"n": 2}
    assert json.dumps(result.model_dump()) == json.dumps(
        {"isError": True, "content": [TEXT], "structuredContent": {"n": 2}}
    )
    built = CallToolResult(
        is_error=True, content=[TextContent.model_validate(TEXT)], structured_content={"n": 2}
    )
    assert result == built  # what the server sent orders the dump; it is not part of the value


def test_a_result_without_optional_fields_dumps_without_them() -> None:
    sent: dict[str, Any] = {"content": []}
    result = CallToolResult.model_validate(sent)
    assert result.is_error is None and result.result_type is None
    assert result.model_dump() == sent and result.model_dump_json() == '{"content":[]}'


@asynccontextmanager
async def connected(server: FakeServer) -> AsyncIterator[ClientConnection]:
    async with server, ClientConnection.connect(server.transport, name="fake") as connection:
        yield connection


async def test_prompts_resources_and_tools_that_break_the_schema_are_named_too() -> None:
    async def prompt(request: Request) -> dict[str, Any]:
        return {"messages": [{"role": "system", "content": TEXT}]}

    async def resource(request: Request) -> dict[str, Any]:
        return {"contents": [{"uri": "file:///a"}]}

    async def tools(request: Request) -> dict[str, Any]:
        return {"tools": [TOOL, {"name": "no-schema"}]}

    methods = {"prompts/get": prompt, "resources/read": resource, "tools/list": tools}
    async with connected(FakeServer(methods=methods)) as connection:
        with pytest.raises(BadResult, match=r"answered prompts/get .*: messages\.0\.role: Input should be"):
            await connection.get_prompt("p")
        with pytest.raises(
            BadResult, match=r"answered resources/read .*: contents\.0\.text\.text: Field required$"
        ):
            await connection.read_resource("file:///a")
        with pytest.raises(BadResult, match=r"answered tools/list .*: tools\.1\.inputSchema: Field required"):
            await connection.list_tools()


async def test_a_prompt_and_a_resource_come_back_typed_with_their_json() -> None:
    async def prompt(request: Request) -> dict[str, Any]:
        return PROMPT

    async def resource(request: Request) -> dict[str, Any]:
        return RESOURCE

    async def tools(request: Request) -> dict[str, Any]:
        return {"tools": [TOOL]}

    methods = {"prompts/get": prompt, "resources/read": resource, "tools/list": tools}
    async with connected(FakeServer(methods=methods)) as connection:
        got = await connection.get_prompt("p")
        read = await connection.read_resource("file:///a.txt")
        (listed,) = await connection.list_tools()
    assert got.description == "a prompt" and same_json(got.model_dump(), PROMPT)
    assert same_json(read.model_dump(), RESOURCE)
    assert listed.name == "deploy" and same_json(listed.model_dump(), TOOL)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("flags", "sent"), [([], LEGACY_CALL), (["--modern"], MODERN_CALL)], ids=["legacy", "modern"]
)
def test_the_cli_prints_the_json_the_server_sent(
    flags: list[str], sent: dict[str, Any], tmp_path: Path
) -> None:
    env = {**os.environ, "HOST_RECEIVER_CONFIG": str(tmp_path / "absent.toml")}
    arguments = json.dumps({"result": sent})
    done = run_cli(
        env,
        "--log-level",
        "INFO",
        "run",
        "--call",
        "verbatim",
        "--args",
        arguments,
        "--",
        sys.executable,
        str(RAW_SERVER),
        *flags,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and same_json(json.loads(done.stdout), sent), done.stdout
    era = "(protocol 2026-07-28, modern)" if flags else "(protocol 2025-11-25, legacy)"
    assert era in done.stderr
