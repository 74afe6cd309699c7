"""Request params from the wire to models: -32602 naming each bad field, and the hot-path readers.

Rules:

- :func:`parse` validates with the model's own pydantic validator and turns a
  ``ValidationError`` into -32602 whose message names each bad field by its
  wire path (at most five, then a count).
- ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` name a task on every
  poll: :func:`task_id_of` reads the usual params (a string ``taskId`` and at
  most an object ``_meta``) directly, and anything else through the model,
  which says precisely what is wrong.
- ``elicitation/create`` has two shapes, chosen by ``mode`` (absent is
  ``form``); another mode is -32602.
- A request's ``_meta`` is an object whose ``progressToken`` (if any) is a
  string or an integer, whatever the method (:func:`check_request_meta` for
  the session's own ``ping``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from host_receiver.errors import invalid_params
from host_receiver.protocol.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    TaskIdParams,
)
from host_receiver.sanitize import bounded

__all__ = [
    "check_request_meta",
    "describe",
    "meta_ok",
    "parse",
    "parse_elicitation",
    "problems",
    "task_id_of",
]

_M = TypeVar("_M", bound=BaseModel)


def parse(model: type[_M], params: dict[str, Any] | None) -> _M:
    """``params`` as ``model``; -32602 naming the bad fields."""
    # The model's own validator: model_validate adds a microsecond of argument
    # handling to every request and does nothing else for plain dicts.
    try:
        parsed: _M = model.__pydantic_validator__.validate_python(params if params is not None else {})
    except ValidationError as exc:
        raise invalid_params(describe(exc)) from None
    return parsed


def task_id_of(params: dict[str, Any] | None) -> str:
    """``taskId`` of ``tasks/get``, ``tasks/result`` and ``tasks/cancel`` params (TaskIdParams)."""
    if params is not None:
        task_id = params.get("taskId")
        meta = params.get("_meta")
        if type(task_id) is str and (meta is None or (type(meta) is dict and meta_ok(meta))):
            return task_id
    return parse(TaskIdParams, params).task_id


def meta_ok(meta: dict[str, Any]) -> bool:
    """Whether a request's ``_meta`` object is valid (its ``progressToken`` a string or an integer)."""
    return "progressToken" not in meta or type(meta["progressToken"]) in (str, int)


def check_request_meta(params: dict[str, Any] | None) -> None:
    """-32602 unless the ``_meta`` of ``params`` (absent, or an object) is a valid request ``_meta``."""
    meta = params.get("_meta") if params is not None else None
    if meta is None:
        return
    if type(meta) is not dict:
        raise invalid_params("Invalid params: _meta: Input should be a valid dictionary")
    if not meta_ok(meta):
        raise invalid_params("Invalid params: _meta.progressToken: must be a string or an integer")


def parse_elicitation(params: dict[str, Any] | None) -> ElicitRequestParams:
    """``elicitation/create`` params in the shape their ``mode`` names."""
    mode = (params or {}).get("mode", "form")
    if mode == "url":
        return parse(ElicitRequestURLParams, params)
    if mode == "form":
        return parse(ElicitRequestFormParams, params)
    raise invalid_params(f"Unsupported elicitation mode: {bounded(repr(mode))}")


def describe(exc: ValidationError) -> str:
    """A -32602 message naming each bad field by its wire path (:func:`problems`)."""
    return "Invalid params: " + problems(exc)


def problems(exc: ValidationError, whole: str = "params") -> str:
    """Each bad field of ``exc`` by its wire path and what is wrong with it (at most five;
    ``whole`` names the value itself).

    The labels pydantic gives the branches of a union (``tagged-union[...]``,
    ``list[...]``) are not wire names and are left out; of the branches of one
    union, only those that got furthest are told (a text block with a number
    for ``text`` is that, not also "not a list").
    """
    found: list[tuple[tuple[str, ...], bool, str]] = []
    for error in exc.errors():
        ctx = error.get("ctx") or {}
        loc = [*error["loc"], *([ctx["member"]] if "member" in ctx else [])]
        path = tuple(bounded(str(part)) for part in loc if not _is_branch_label(part))
        found.append((path, len(path) < len(loc), error["msg"]))
    kept = [
        (path, msg)
        for path, branch, msg in found
        if not (
            branch and any(len(other) > len(path) and other[: len(path)] == path for other, _, _ in found)
        )
    ]
    told = [f"{'.'.join(path) or whole}: {msg}" for path, msg in kept[:5]]
    more = len(kept) - len(told)
    suffix = f" (and {more} more)" if more > 0 else ""
    return "; ".join(told) + suffix


def _is_branch_label(part: str | int) -> bool:
    """Whether a location part is pydantic's label for a union branch, not a wire name."""
    return type(part) is str and part.endswith("]") and "[" in part
