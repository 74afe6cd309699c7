"""The HTTP benchmark's own parts: the echo client's reader, the requestor's framing, the choice of scenarios.

No timing is asserted; the smoke run (CI) runs the whole thing against every receiver.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from benchmarks.http_echo_limit import Connection
from benchmarks.http_requestor import sse
from benchmarks.run import scenarios

pytestmark = pytest.mark.anyio


class Pieces:
    """A socket stand-in that hands out ``pieces`` one per read, then end of file."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)

    async def receive(self) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def chunked(*chunks: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks) + b"0\r\n\r\n"


async def read_messages(data: bytes, cut_every: int) -> list[Any]:
    pieces = [data[i : i + cut_every] for i in range(0, len(data), cut_every)]
    conn = Connection(Pieces(*pieces))  # type: ignore[arg-type]
    status, headers = await conn.head()
    assert status == 200
    return [message async for message in conn.messages(headers)]


@pytest.mark.parametrize("cut_every", [1, 7, 4096])
async def test_the_echo_client_reads_sse_events_across_chunks_and_reads(cut_every: int) -> None:
    first = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": "a"}}
    second = {"jsonrpc": "2.0", "id": 2, "method": "tasks/list"}
    events = sse(json.dumps(first).encode() + b"\n" + json.dumps(second).encode())
    body = chunked(b": a comment\r\n\r\n", events[:10], events[10:])
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    assert await read_messages(head + body, cut_every) == [first, second]


async def test_the_echo_client_reads_a_json_answer_of_known_length() -> None:
    answer = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {}}).encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer)
    assert await read_messages(head + answer, 5) == [{"jsonrpc": "2.0", "id": 0, "result": {}}]


def test_an_http_scenario_is_chosen_by_its_name_or_without_its_framing() -> None:
    def chosen(names: list[str]) -> list[str]:
        return [s.name for s in scenarios(smoke=True) if s.chosen(names)]

    assert chosen(["http-latency"]) == ["http-latency-json", "http-latency-sse"]
    assert chosen(["http-latency-sse", "http-scale"]) == ["http-latency-sse", "http-scale-json"]
    assert chosen(["latency"]) == ["latency"]
