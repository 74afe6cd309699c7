"""What the web inbox's tests share: views of every kind, a hook call run beside a test, an API client."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from host_receiver.people.approval import (
    FormView,
    SamplingRequestView,
    SamplingResultView,
    UrlView,
    url_warnings,
)
from host_receiver.protocol.elicitation_rules import parse_form_schema
from host_receiver.protocol.types import CreateMessageResult, SamplingRequest, TextContent
from host_receiver.web import WebInbox

#: The origin the API tests' client speaks from (the ASGI app checks no Host there).
ORIGIN = "http://inbox.test"


@pytest.fixture
def inbox() -> WebInbox:
    return WebInbox(timeout=30, auth_delay=0.05)


@pytest.fixture
async def api(inbox: WebInbox) -> AsyncIterator[httpx.AsyncClient]:
    """An API client with the bearer token, on the ASGI app."""
    transport = httpx.ASGITransport(app=inbox.app)
    headers = {"Authorization": f"Bearer {inbox.token}"}
    async with httpx.AsyncClient(transport=transport, base_url=ORIGIN, headers=headers) as client:
        yield client


#: A form with every field type the elicitation schema allows.
EVERY_FIELD = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "minLength": 2, "default": "Ada"},
        "email": {"type": "string", "format": "email", "description": "where we write to"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "seats": {"type": "integer", "title": "Seats", "minimum": 1, "maximum": 4, "default": 2},
        "budget": {"type": "number", "minimum": 0.5},
        "agree": {"type": "boolean", "title": "I agree", "default": False},
        "colour": {
            "type": "string",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "tags": {
            "type": "array",
            "title": "Tags",
            "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]},
            "maxItems": 1,
        },
    },
    "required": ["name", "email", "colour"],
}


def sampling_view(
    server: str = "notes", system: str | None = "Be brief.", text: str = "Hello"
) -> SamplingRequestView:
    params = SamplingRequest.model_validate(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "systemPrompt": system,
            "maxTokens": 100,
        }
    )
    return SamplingRequestView(server, "task-1", params, "echo-offline", ("echo-offline",))


def result_view(server: str = "notes", text: str = "A reply") -> SamplingResultView:
    result = CreateMessageResult(role="assistant", content=TextContent(text=text), model="echo-offline")
    return SamplingResultView(server, "task-1", sampling_view(server).params, result)


def form_view(
    server: str = "notes", schema: dict[str, Any] | None = None, message: str = "Tell us"
) -> FormView:
    parsed = parse_form_schema(schema or EVERY_FIELD)
    return FormView(server, "task-2", message, parsed, parsed.defaults())


def url_view(
    server: str = "notes", url: str = "http://192.0.2.1:8080/login", message: str = "Sign in"
) -> UrlView:
    return UrlView(server, "task-3", message, url, "el-1", url_warnings(url, message))


@asynccontextmanager
async def asking(inbox: WebInbox, call: Callable[[], Awaitable[Any]]) -> AsyncIterator[list[Any]]:
    """Run the hook ``call`` beside the block, once its item is pending; the list holds its answer
    when it returned (the block waits for that, 10 s at most)."""
    answers: list[Any] = []

    async def run() -> None:
        answers.append(await call())

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group, inbox.events() as events:
            group.start_soon(run)
            async for name, _ in events:
                if name == "added":
                    break
            yield answers
