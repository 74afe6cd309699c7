"""A message too long to read, or not JSON, still gets its answer when it was a request.

Over a real stdio pipe (tests/servers/unreadable_server.py): the id comes from
a bounded look at the message's head; without a readable id the answer has
none (the schema's form of JSON-RPC's ``null``); a broken *response* is never
answered, but fails the request of ours it answered; and the connection keeps
serving. Every answer is checked against the official schema.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_receiver.client.connection import ClientConnection
from host_receiver.errors import PARSE_ERROR, InvalidMessage, RpcError
from host_receiver.protocol.jsonrpc import decode_message
from host_receiver.transports.stdio import StdioTransport
from tests.schema import validate

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parents[1] / "servers" / "unreadable_server.py"
LIMIT = 200_000


async def report(connection: ClientConnection) -> list[dict[str, Any]]:
    result = await connection.call_tool("report")
    answers: list[dict[str, Any]] = json.loads(result.text)
    return answers


@pytest.mark.slow
async def test_requests_too_long_or_not_json_get_errors_and_the_connection_goes_on() -> None:
    transport = StdioTransport(sys.executable, [str(SERVER), str(LIMIT * 2)], max_message_size=LIMIT)
    async with ClientConnection.connect(transport, capabilities={}) as connection:
        with anyio.fail_after(20):
            answers = await report(connection)
            while not any(a.get("id") == "ping-after" for a in answers):
                await anyio.sleep(0.05)
                answers = await report(connection)
    for answer in answers:
        validate("JSONRPCMessage", answer)
    by_id = {a.get("id"): a for a in answers}
    assert by_id["big-1"]["error"]["code"] == PARSE_ERROR
    assert f"longer than {LIMIT} bytes" in by_id["big-1"]["error"]["message"]
    assert by_id["broken-1"]["error"]["code"] == PARSE_ERROR
    assert by_id["ping-after"]["result"] == {}
    assert 77 not in by_id  # a broken response is not answered
    assert [a["error"]["code"] for a in answers if "id" not in a] == [PARSE_ERROR]  # the unknown line
    assert len(answers) == 4


@pytest.mark.slow
async def test_a_response_too_long_to_read_fails_its_request_at_once() -> None:
    transport = StdioTransport(sys.executable, [str(SERVER), str(LIMIT * 2)], max_message_size=LIMIT)
    async with ClientConnection.connect(transport, capabilities={}) as connection:
        started = time.monotonic()
        with anyio.fail_after(20), pytest.raises(RpcError) as caught:
            await connection.call_tool("huge")
        assert time.monotonic() - started < 10
        assert caught.value.code == PARSE_ERROR
        assert f"longer than {LIMIT} bytes" in caught.value.message
        assert isinstance(await report(connection), list)  # still serving


@pytest.mark.parametrize(
    ("frame", "request_id", "respond"),
    [
        ('{"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": {"taskId": ', 5, True),
        ('{"jsonrpc":"2.0","id":"a\\"b","method":"x"', 'a"b', True),
        ('{"jsonrpc": "2.0", "method": "x", "params": {"id": 9}, "id": "outer", ', "outer", True),
        ('{"jsonrpc": "2.0", "id": 7, "result": {"partial": ', 7, False),
        ('{"jsonrpc": "2.0", "id": 7, ', None, True),  # request or response? unknown: no id
        ('{"jsonrpc": "2.0", "id": true, "method": "x", ', None, True),
        ('{"jsonrpc": "2.0", "id": 1e3, "method": "x", ', None, True),
        ('{"jsonrpc": "2.0", "id": 123456789012345678901234567890, "method": "x", ', None, True),
        ('{"jsonrpc": "2.0", "params": {"x": "' + "p" * 10_000 + '"}, "id": 3, "method": "x"', None, True),
        ("not json at all", None, True),
        ("\xff\xfe", None, True),
    ],
)
def test_the_head_of_an_unparseable_frame_says_what_it_was(
    frame: str, request_id: object, respond: bool
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        decode_message(frame.encode("utf-8", "surrogateescape") if frame != "\xff\xfe" else b"\xff\xfe")
    assert caught.value.code == PARSE_ERROR
    assert caught.value.request_id == request_id
    assert caught.value.respond is respond


ids = st.one_of(st.integers(-(2**63), 2**64 - 1), st.text(max_size=50))
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(request_id=ids, method=st.text(max_size=30), params=values, cut=st.integers(0, 10_000))
def test_a_cut_request_is_answered_with_its_id_once_its_head_shows_id_and_method(
    request_id: str | int, method: str, params: object, cut: int
) -> None:
    head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "method"'
    frame = f'{head}: {json.dumps(method)}, "params": {json.dumps(params)}}}'
    cut = min(cut, len(frame) - 1)  # always cut: the frame is never whole JSON
    with pytest.raises(InvalidMessage) as caught:
        decode_message(frame[:cut].encode())
    if cut >= len(head):
        assert (caught.value.request_id, caught.value.respond) == (request_id, True)
    else:
        assert caught.value.request_id is None or caught.value.request_id == request_id
        assert caught.value.respond
