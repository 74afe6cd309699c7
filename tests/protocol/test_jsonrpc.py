"""JSON-RPC framing: what a peer's frame becomes, and what we put on the wire."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from host_receiver.errors import INVALID_REQUEST, PARSE_ERROR, InvalidMessage, RpcError
from host_receiver.protocol.jsonrpc import (
    ErrorResponse,
    Message,
    Notification,
    Request,
    Response,
    decode_message,
    dumps_message,
    encode_message,
    error_response,
    parse_message,
)


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ('{"jsonrpc":"2.0","id":1,"method":"ping"}', Request(1, "ping")),
        ('{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}}', Request("a", "m", {"x": 1})),
        ('{"jsonrpc":"2.0","id":2,"method":"m","params":null}', Request(2, "m")),
        ('{"jsonrpc":"2.0","method":"notifications/initialized"}', Notification("notifications/initialized")),
        ('{"jsonrpc":"2.0","id":7,"result":{}}', Response(7, {})),
        (
            '{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"no","data":[1]}}',
            ErrorResponse("x", RpcError(-1, "no", [1])),
        ),
        (
            '{"jsonrpc":"2.0","error":{"code":-32700,"message":"bad"}}',
            ErrorResponse(None, RpcError(-32700, "bad")),
        ),
        (
            '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}',
            ErrorResponse(None, RpcError(-32600, "bad")),
        ),
    ],
)
def test_valid_frames_parse_to_typed_messages(frame: str, expected: Message) -> None:
    assert decode_message(frame) == expected


@pytest.mark.parametrize(
    ("frame", "code", "request_id", "respond"),
    [
        ("{not json", PARSE_ERROR, None, True),
        (b"\xff\xfe{}", PARSE_ERROR, None, True),
        ("", PARSE_ERROR, None, True),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', INVALID_REQUEST, None, True),
        ("42", INVALID_REQUEST, None, True),
        ('{"id":1,"method":"ping"}', INVALID_REQUEST, 1, True),
        ('{"jsonrpc":"1.0","id":"k","method":"ping"}', INVALID_REQUEST, "k", True),
        ('{"jsonrpc":"2.0","id":null,"method":"ping"}', INVALID_REQUEST, None, True),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', INVALID_REQUEST, None, True),
        ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}', INVALID_REQUEST, None, True),
        ('{"jsonrpc":"2.0","id":3,"method":5}', INVALID_REQUEST, 3, True),
        ('{"jsonrpc":"2.0","id":3,"method":"m","params":[1,2]}', INVALID_REQUEST, 3, True),
        ('{"jsonrpc":"2.0","id":3,"method":"m","result":{}}', INVALID_REQUEST, 3, True),
        ('{"jsonrpc":"2.0","id":3}', INVALID_REQUEST, 3, True),
        # Broken responses are reported but never answered.
        ('{"jsonrpc":"2.0","id":3,"result":[]}', INVALID_REQUEST, 3, False),
        ('{"jsonrpc":"2.0","result":{}}', INVALID_REQUEST, None, False),
        ('{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"m"}}', INVALID_REQUEST, 3, False),
        ('{"jsonrpc":"2.0","id":3,"error":{"code":"1","message":"m"}}', INVALID_REQUEST, 3, False),
        ('{"jsonrpc":"2.0","id":3,"error":"boom"}', INVALID_REQUEST, 3, False),
    ],
)
def test_invalid_frames_say_how_to_answer(
    frame: str | bytes, code: int, request_id: Any, respond: bool
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        decode_message(frame)
    assert (caught.value.code, caught.value.request_id, caught.value.respond) == (
        code,
        request_id,
        respond,
    )
    answer = encode_message(error_response(caught.value))
    assert answer["error"]["code"] == code
    assert answer.get("id") == request_id


def test_batch_is_refused_with_a_clear_message() -> None:
    with pytest.raises(InvalidMessage, match="Batches are not supported"):
        parse_message([])


def test_error_response_without_id_omits_the_member() -> None:
    wire = encode_message(ErrorResponse(None, RpcError(PARSE_ERROR, "Parse error")))
    assert wire == {"jsonrpc": "2.0", "error": {"code": PARSE_ERROR, "message": "Parse error"}}


def test_dumps_is_one_line_utf8() -> None:
    data = dumps_message(Request(1, "m", {"text": "a\nb — é"}))
    assert b"\n" not in data
    assert json.loads(data)["params"]["text"] == "a\nb — é"


def test_dumps_writes_non_finite_numbers_as_null_and_refuses_what_json_cannot_carry() -> None:
    assert json.loads(dumps_message(Response(1, {"x": float("nan"), "y": float("inf")}))) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"x": None, "y": None},
    }
    # The first breaks Response's own type (its result's keys are strings): the check is at run time.
    bads: list[dict[Any, Any]] = [
        {1: "key that is not a string"},
        {"big": 2**64},
        {"s": "\ud800"},
        {"o": object()},
    ]
    for bad in bads:
        with pytest.raises(TypeError):
            dumps_message(Response(1, bad))


@pytest.mark.parametrize("frame", [b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN}}', b'{"a":"\xff"}'])
def test_what_json_does_not_allow_is_a_parse_error(frame: bytes) -> None:
    with pytest.raises(InvalidMessage) as caught:
        decode_message(frame)
    assert caught.value.code == PARSE_ERROR


# What JSON carries: 64-bit integers, finite floats, text without lone surrogates.
ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
texts = st.text(st.characters(blacklist_categories=["Cs"]))
json_values = st.recursive(
    st.none() | st.booleans() | ints | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(texts, json_values, max_size=4)
ids = ints | texts
messages = st.one_of(
    st.builds(Request, ids, texts, st.none() | objects),
    st.builds(Notification, texts, st.none() | objects),
    st.builds(Response, ids, objects),
    st.builds(
        ErrorResponse,
        st.none() | ids,
        st.builds(RpcError, ints, texts, st.none() | json_values),
    ),
)


@pytest.mark.slow
@given(messages)
def test_every_message_survives_the_wire(message: Message) -> None:
    assert decode_message(dumps_message(message)) == message
