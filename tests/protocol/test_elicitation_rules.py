"""Form schemas are held to the spec's restricted subset; answers are checked before sending."""

from __future__ import annotations

from typing import Any

import pytest

from host_receiver.errors import INVALID_PARAMS, RpcError
from host_receiver.protocol.elicitation_rules import check_request, parse_form_schema
from host_receiver.protocol.types import ElicitRequestFormParams, ElicitRequestURLParams


def form(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("string with bounds and format", form(email={"type": "string", "format": "email", "minLength": 3,
                                                  "maxLength": 50, "title": "Email", "description": "d"})),
    ("number and integer", form(n={"type": "number", "minimum": 0.5, "maximum": 2}, i={"type": "integer"})),
    ("boolean with default", form(ok={"type": "boolean", "default": True})),
    ("untitled single select", form(c={"type": "string", "enum": ["r", "g"], "default": "g"})),
    ("titled single select", form(c={"type": "string", "oneOf": [{"const": "r", "title": "Red"}]})),
    ("legacy enumNames", form(c={"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"]})),
    ("untitled multi select", form(c={"type": "array", "items": {"type": "string", "enum": ["a", "b"]},
                                      "minItems": 1, "maxItems": 2, "default": ["a"]})),
    ("titled multi select", form(c={"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}})),
    ("empty form", form()),
]  # fmt: skip

REJECTED: list[tuple[str, Any, str]] = [
    ("not an object", {"type": "array"}, "type 'object'"),
    ("no properties", {"type": "object"}, "properties"),
    ("nested object", form(address={"type": "object", "properties": {}}), "properties.address"),
    ("array of numbers", form(xs={"type": "array", "items": {"type": "number"}}), "properties.xs"),
    ("unknown format", form(s={"type": "string", "format": "ipv4"}), "format 'ipv4'"),
    ("required names unknown", {**form(a={"type": "string"}), "required": ["b"]}, "unknown properties"),
    ("bad default", form(n={"type": "integer", "minimum": 3, "default": 1}), "default must be at least 3"),
    ("enum default not listed", form(c={"type": "string", "enum": ["a"], "default": "z"}), "default"),
    ("enumNames length", form(c={"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}), "enumNames"),
    ("min over max", form(s={"type": "string", "minLength": 5, "maxLength": 2}), "minLength"),
    ("null type", form(x={"type": "null"}), "type 'null'"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "schema"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_subset_schemas_are_accepted(name: str, schema: dict[str, Any]) -> None:
    parse_form_schema(schema)


@pytest.mark.parametrize(("name", "schema", "needle"), REJECTED, ids=[c[0] for c in REJECTED])
def test_schemas_outside_the_subset_are_invalid_params(name: str, schema: Any, needle: str) -> None:
    with pytest.raises(RpcError) as raised:
        parse_form_schema(schema)
    assert raised.value.code == INVALID_PARAMS and needle in raised.value.message


def test_defaults_and_answer_problems() -> None:
    schema = parse_form_schema(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2, "default": "Ada"},
                "age": {"type": "integer", "minimum": 0},
                "when": {"type": "string", "format": "date"},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 1},
                "agree": {"type": "boolean", "default": False},
            },
            "required": ["name", "age"],
        }
    )
    assert schema.defaults() == {"name": "Ada", "agree": False}
    assert schema.problems({"name": "Ada", "age": 3, "when": "2025-11-25", "tags": ["a"]}) == {}
    assert schema.problems({"age": 2.5, "when": "tomorrow", "tags": ["a", "b"], "extra": 1}) == {
        "name": "is required",
        "age": "must be a whole number",
        "when": "must be a valid date",
        "tags": "choose at most 1",
        "extra": "is not a field of this form",
    }
    assert schema.problems({"name": "A", "age": True}) == {
        "name": "must be at least 2 characters",
        "age": "must be a number",
    }


def test_modes_must_be_declared_and_urls_absolute() -> None:
    url = ElicitRequestURLParams(mode="url", message="m", url="https://example.com/x", elicitation_id="e")
    check_request(url, modes=("form", "url"))
    with pytest.raises(RpcError, match="mode 'url' is not supported"):
        check_request(url, modes=("form",))
    with pytest.raises(RpcError, match="absolute http"):
        check_request(url.model_copy(update={"url": "javascript:alert(1)"}), modes=("url",))
    form_request = ElicitRequestFormParams(message="m", requested_schema=form())
    with pytest.raises(RpcError, match="mode 'form' is not supported"):
        check_request(form_request, modes=("url",))
