"""The 2026-07-28 HTTP binding's mirrored headers: values, x-mcp-header annotations, rejected tools."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from host_receiver.errors import InvalidToolHeaders
from host_receiver.transports._mirror import encode_value, param_headers, request_headers, tool_header_paths
from host_receiver.transports.http import HttpTransport

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
    ],
)
def test_values_are_encoded_as_the_spec_table_says(value: str, header: str) -> None:
    assert encode_value(value) == header


def test_the_standard_headers_of_each_method() -> None:
    assert request_headers("tools/call", {"name": "get_weather"}, "2026-07-28") == {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "get_weather",
    }
    assert request_headers("resources/read", {"uri": "file:///a b"}, "2026-07-28")["mcp-name"].startswith(
        "file:///a b"
    )
    assert request_headers("tasks/get", {"taskId": "t-1"}, "2026-07-28")["mcp-name"] == "t-1"
    assert "mcp-name" not in request_headers("server/discover", {}, "2026-07-28")


def tool(properties: dict[str, Any]) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": properties}}


def test_annotated_arguments_become_mcp_param_headers() -> None:
    paths = tool_header_paths(
        tool(
            {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
                "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            }
        )
    )
    assert paths == {"Region": ("region",), "N": ("opts", "n"), "Dry-Run": ("dry",)}
    headers = param_headers(paths, {"region": "eu-west", "opts": {"n": -7}, "dry": False})
    assert headers == {"mcp-param-region": "eu-west", "mcp-param-n": "-7", "mcp-param-dry-run": "false"}
    assert param_headers(paths, {"region": None}) == {}  # null or absent: no header
    with pytest.raises(InvalidToolHeaders, match="safe integer"):
        param_headers(paths, {"opts": {"n": 2**60}})


@pytest.mark.parametrize(
    ("properties", "why"),
    [
        ({"a": {"type": "string", "x-mcp-header": ""}}, "not an HTTP header token"),
        ({"a": {"type": "string", "x-mcp-header": "Bad Name"}}, "not an HTTP header token"),
        ({"a": {"type": "number", "x-mcp-header": "A"}}, "string, integer or boolean"),
        (
            {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}},
            "twice",
        ),
        ({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}, "through properties"),
        ({"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}, "through properties"),
    ],
)
def test_invalid_annotations_are_refused(properties: dict[str, Any], why: str) -> None:
    with pytest.raises(InvalidToolHeaders, match=why):
        tool_header_paths(tool(properties))


async def test_http_leaves_out_tools_with_invalid_annotations_and_warns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    good = {"name": "good", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}
    bad = {**tool({"a": {"type": "number", "x-mcp-header": "A"}}), "name": "bad"}
    async with HttpTransport("http://127.0.0.1:9/mcp").connect() as stream:
        with caplog.at_level(logging.WARNING):
            assert stream.accept_tools([good, bad]) == [good]
    assert "left out tool 'bad'" in caplog.text
