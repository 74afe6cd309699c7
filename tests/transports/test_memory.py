"""The in-memory pair behaves like a pipe: JSON text across, clean end of stream."""

from __future__ import annotations

import anyio
import pytest

from host_receiver.errors import PARSE_ERROR, InvalidMessage, TransportError
from host_receiver.protocol.jsonrpc import Message, Request, Response
from host_receiver.transports.base import MessageStream
from host_receiver.transports.memory import MemoryTransport, create_memory_pair

pytestmark = pytest.mark.anyio


async def test_messages_cross_as_copies() -> None:
    a, b = create_memory_pair()
    params = {"nested": {"n": 1}}
    await a.send(Request(1, "m", params))
    received = await b.receive()
    assert received == Request(1, "m", {"nested": {"n": 1}})
    assert isinstance(received, Request) and received.params is not params
    await b.send(Response(1, {}))
    assert await a.receive() == Response(1, {})


async def test_garbage_is_reported_as_a_value_and_the_stream_goes_on() -> None:
    a, b = create_memory_pair()
    await a.send_raw("this is not json")
    await a.send(Request(2, "ping"))
    invalid = await b.receive()
    assert isinstance(invalid, InvalidMessage) and invalid.code == PARSE_ERROR
    assert await b.receive() == Request(2, "ping")


async def test_closing_one_end_ends_the_other() -> None:
    a, b = create_memory_pair()
    await a.send(Request(1, "ping"))
    await a.aclose()
    assert await b.receive() == Request(1, "ping")  # what was sent is still delivered
    with pytest.raises(anyio.EndOfStream):
        await b.receive()
    with pytest.raises(TransportError):
        await b.send(Response(1, {}))
    with pytest.raises(anyio.EndOfStream):
        await a.receive()


async def test_transport_yields_the_client_end_and_closes_it() -> None:
    transport = MemoryTransport()
    async with transport.connect() as stream:
        await stream.send(Request(1, "ping"))
        assert await transport.peer.receive() == Request(1, "ping")
    with pytest.raises(anyio.EndOfStream):
        await transport.peer.receive()


async def test_a_stream_written_for_the_old_hooks_fails_at_its_definition_saying_where_they_went() -> None:
    with pytest.raises(TypeError, match=r"OldStream defines .*set_protocol_version: Binding\.agree"):

        class OldStream(MessageStream):
            async def send(self, message: Message) -> None: ...

            async def receive(self) -> Message | InvalidMessage:
                raise anyio.EndOfStream

            def set_protocol_version(self, version: str) -> None: ...
