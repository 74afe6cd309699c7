"""host-receiver's Host against the TypeScript SDK v2 server of the MRTR benchmark.

benchmarks/peers/ts2_mrtr_server.mjs (``@modelcontextprotocol/server`` 2.4.0,
stateless Streamable HTTP, a fresh ``McpServer`` per request) asks for one
round of input per tool with the SDK's ``inputRequired(...)`` and an
HMAC-sealed ``requestState``; it answers every POST with an SSE stream or
with a JSON body. Both framings must give the same results through a real
``Host``: the form's answer and the provider's text reach the tool, one call
at a time and many at once.
"""

from __future__ import annotations

from typing import Literal

import anyio
import pytest

from host_receiver.transports.http import HttpTransport
from tests.interop import http_server, ts2_mrtr_server_command
from tests.interop.conftest import running_host
from tests.interop.test_modern_era import Forms

pytestmark = pytest.mark.anyio

FRAMINGS: list[Literal["sse", "json"]] = ["sse", "json"]


@pytest.mark.parametrize("framing", FRAMINGS)
async def test_the_form_and_sampling_rounds_reach_the_typescript_v2_tools(
    framing: Literal["sse", "json"],
) -> None:
    forms = Forms("Grace")  # types the name, keeps the other defaults
    with http_server(ts2_mrtr_server_command(framing)) as url:
        async with running_host(ui=forms) as h:
            server = await h.connect("ts2", HttpTransport(url))
            form = await server.call_tool("form", {})
            sample = await server.call_tool("sample", {})
    assert server.protocol_version == "2026-07-28"
    # The name typed, the age the form's default: both came back through the sealed retry.
    assert (bool(form.is_error), form.text) == (False, "Grace 36")
    assert forms.asked == ["Who are you?"]
    assert (bool(sample.is_error), sample.text) == (False, "echo: Say hi.")


@pytest.mark.parametrize("framing", FRAMINGS)
async def test_twenty_calls_at_once_each_get_their_own_answer(framing: Literal["sse", "json"]) -> None:
    texts: list[str] = []
    with http_server(ts2_mrtr_server_command(framing)) as url:
        async with running_host() as h:
            server = await h.connect("ts2", HttpTransport(url))

            async def call(tool: str) -> None:
                texts.append((await server.call_tool(tool, {})).text)

            async with anyio.create_task_group() as group:
                for n in range(20):
                    group.start_soon(call, ("form", "sample")[n % 2])
    assert sorted(texts) == ["Ada 36"] * 10 + ["echo: Say hi."] * 10
