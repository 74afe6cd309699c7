"""Typed results of the requests a host sends a server, in either era, as the server sent them.

Rules:

- Each model is the era-neutral result: what 2025-11-25 and 2026-07-28 share,
  typed, plus what only 2026-07-28 has (``resultType``, ``cacheScope``,
  ``ttlMs``) as optional fields. Unknown fields are kept (``extra="allow"``):
  nothing a server sent is lost.
- ``model_dump()`` and ``model_dump_json()`` give back the JSON the server
  sent: wire names (camelCase, ``_meta``), and no key the server did not send
  (``exclude_unset``). It is the same JSON value; object keys come out in the
  model's order, then the unknown ones in the server's, and a number in a
  float field (``annotations.priority``) comes out as a float.
- Types are the schema's, in the wire models' strict mode. :func:`parse_result`
  turns a result that breaks them into a :class:`BadResult` naming the server,
  the method and each bad field by its wire path (``content.0.text.text``);
  only that call fails, and the connection goes on serving.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, Discriminator, Tag, ValidationError

from host_receiver.protocol.modern import BadResult
from host_receiver.protocol.params import problems
from host_receiver.protocol.types import (
    ContentBlock,
    MetaModel,
    Role,
    TextContent,
    Tool,
    WireInt,
    WireModel,
)
from providers import safe_text

__all__ = [
    "BlobResourceContents",
    "CallToolResult",
    "GetPromptResult",
    "ListedTool",
    "PromptMessage",
    "ReadResourceResult",
    "Received",
    "ResourceContents",
    "Result",
    "TextResourceContents",
    "parse_result",
    "parse_tools",
]

_M = TypeVar("_M", bound=BaseModel)

#: How much of a validation error a BadResult quotes.
_QUOTED = 600


class Received(WireModel):
    """A model of what a server sent, whose dump is that JSON (rules above)."""

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """The JSON the server sent, as Python values (fields it did not send left out)."""
        kwargs.setdefault("exclude_unset", True)
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        """The JSON the server sent, as text (fields it did not send left out)."""
        kwargs.setdefault("exclude_unset", True)
        return super().model_dump_json(**kwargs)


class Result(Received, MetaModel):
    """What every result may carry: ``_meta``, and (2026-07-28) ``resultType``."""

    #: ``complete`` for a final modern result; absent from a 2025-11-25 server.
    result_type: str | None = None


class CallToolResult(Result):
    """The result of ``tools/call``: a tool that failed is ``is_error=True``, not an exception."""

    content: list[ContentBlock]
    #: A JSON object in 2025-11-25; any JSON value in 2026-07-28.
    structured_content: Any = None
    is_error: bool | None = None

    @property
    def text(self) -> str:
        """The text of the result's text blocks, joined (server text: show it escaped)."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


class PromptMessage(Received):
    """One message of a prompt: a role and a content block."""

    role: Role
    content: ContentBlock


class GetPromptResult(Result):
    """The result of ``prompts/get``."""

    description: str | None = None
    messages: list[PromptMessage]


class TextResourceContents(Received, MetaModel):
    """A resource's contents as text."""

    uri: str
    mime_type: str | None = None
    text: str


class BlobResourceContents(Received, MetaModel):
    """A resource's contents as base64-encoded bytes."""

    uri: str
    mime_type: str | None = None
    blob: str


def _contents_kind(item: object) -> str:
    """``blob`` for an item that has one, else ``text`` (an error's path names the kind)."""
    has_blob = isinstance(item, BlobResourceContents) or (isinstance(item, dict) and "blob" in item)
    return "blob" if has_blob else "text"


#: One item of ``contents``: text, or a blob when it has ``blob``.
ResourceContents: TypeAlias = Annotated[
    Annotated[TextResourceContents, Tag("text")] | Annotated[BlobResourceContents, Tag("blob")],
    Discriminator(_contents_kind),
]


class ReadResourceResult(Result):
    """The result of ``resources/read`` (``cache_scope`` and ``ttl_ms`` are 2026-07-28's hints)."""

    contents: list[ResourceContents]
    cache_scope: Literal["private", "public"] | None = None
    ttl_ms: WireInt | None = None


class ListedTool(Received, Tool):
    """A tool as ``tools/list`` gives it (a :class:`~host_receiver.protocol.types.Tool`)."""


class _Tools(WireModel):
    tools: list[ListedTool]


def parse_result(model: type[_M], method: str, result: object, *, server: str) -> _M:
    """``result``, the answer of ``server`` to ``method``, as ``model``; a :class:`BadResult`
    naming each bad field if it breaks the schema."""
    try:
        return model.model_validate(result)
    except ValidationError as exc:
        told = safe_text(problems(exc, "result"), _QUOTED)
        raise BadResult(f"{server} answered {method} with a result that breaks the schema: {told}") from None


def parse_tools(tools: list[dict[str, Any]], *, server: str) -> list[ListedTool]:
    """The tools of a ``tools/list`` page as models; a :class:`BadResult` naming each bad field."""
    return parse_result(_Tools, "tools/list", {"tools": tools}, server=server).tools
