"""Typed results of the requests a host sends a server, in either era, as the server sent them.

Rules:

- Each model is the era-neutral result: what 2025-11-25 and 2026-07-28 share,
  typed, plus what only 2026-07-28 has (``resultType``, ``cacheScope``,
  ``ttlMs``) as optional fields. Unknown fields are kept (``extra="allow"``):
  nothing a server sent is lost.
- ``model_dump()`` and ``model_dump_json()`` give back the JSON the server
  sent, byte for byte once encoded alike: wire names (camelCase, ``_meta``),
  no key the server did not send (``exclude_unset``), keys in the server's
  order and its integers as integers (``annotations.priority`` is a float
  field), as the model keeps the object it was made from. A field changed
  since comes out changed, and a key added after the server's. (A model built
  in code dumps only the fields it was given: ``dump()`` is its wire JSON.)
- Types are the schema's, in the wire models' strict mode. :func:`parse_result`
  turns a result that breaks them into a :class:`BadResult` naming the server,
  the method and each bad field by its wire path (``content.0.text.text``);
  only that call fails, and the connection goes on serving.

Fixed caps (docs/limits.md): ``_QUOTED``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    Discriminator,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    model_serializer,
    model_validator,
)

from host_receiver.errors import BadResult
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
from host_receiver.sanitize import safe_text

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

#: Characters of a result's schema errors quoted in a BadResult.
_QUOTED = 600


class _Sent:
    """What a server sent, kept for the order of a dump; it never makes two models unequal."""

    __slots__ = ("value",)

    def __init__(self, value: Any = None) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Sent)

    __hash__ = None  # type: ignore[assignment]


class Received(WireModel):
    """A model of what a server sent, whose dump is that JSON (rules above)."""

    _sent: _Sent = PrivateAttr(default_factory=_Sent)

    @model_validator(mode="wrap")
    @classmethod
    def _keep_sent(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        model = handler(data)
        if isinstance(data, dict):
            model._sent = _Sent(data)
        return model

    @model_serializer(mode="wrap")
    def _as_sent(self, handler: SerializerFunctionWrapHandler) -> Any:
        return _as_sent(handler(self), self._sent.value)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """The JSON the server sent, as Python values (fields it did not send left out)."""
        kwargs.setdefault("exclude_unset", True)
        return super().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        """The JSON the server sent, as text (fields it did not send left out)."""
        kwargs.setdefault("exclude_unset", True)
        return super().model_dump_json(**kwargs)


def _as_sent(dumped: Any, sent: Any) -> Any:
    """``dumped`` with the key order and the integers of ``sent``, what the server sent, where the
    two still agree (a value changed since is kept as it is now). Iterative: a server's JSON may
    nest as deep as the decoder allows."""
    top: list[Any] = [None]
    pending: list[tuple[list[Any] | dict[str, Any], Any, Any, Any]] = [(top, 0, dumped, sent)]
    while pending:
        into, slot, value, was = pending.pop()
        if value is was:
            into[slot] = value
        elif isinstance(value, dict) and isinstance(was, dict):
            keys = [key for key in was if key in value] + [key for key in value if key not in was]
            into[slot] = ordered = dict.fromkeys(keys)
            pending.extend((ordered, key, value[key], was.get(key)) for key in keys)
        elif isinstance(value, list) and isinstance(was, list) and len(value) == len(was):
            into[slot] = items = [None] * len(value)
            pending.extend((items, index, value[index], was[index]) for index in range(len(value)))
        elif type(value) is float and type(was) is int and value == was:
            into[slot] = was
        else:
            into[slot] = value
    return top[0]


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
