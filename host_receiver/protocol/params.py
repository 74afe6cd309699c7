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
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from host_receiver.protocol.errors import invalid_params
from host_receiver.protocol.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    TaskIdParams,
)
from providers import bounded

__all__ = ["describe", "parse", "parse_elicitation", "task_id_of"]

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
        if type(task_id) is str and (meta is None or type(meta) is dict):
            return task_id
    return parse(TaskIdParams, params).task_id


def parse_elicitation(params: dict[str, Any] | None) -> ElicitRequestParams:
    """``elicitation/create`` params in the shape their ``mode`` names."""
    mode = (params or {}).get("mode", "form")
    if mode == "url":
        return parse(ElicitRequestURLParams, params)
    if mode == "form":
        return parse(ElicitRequestFormParams, params)
    raise invalid_params(f"Unsupported elicitation mode: {bounded(repr(mode))}")


def describe(exc: ValidationError) -> str:
    """A -32602 message naming each bad field by its wire path."""
    problems = []
    for error in exc.errors()[:5]:
        path = ".".join(bounded(str(part)) for part in error["loc"]) or "params"
        problems.append(f"{path}: {error['msg']}")
    more = exc.error_count() - len(problems)
    suffix = f" (and {more} more)" if more > 0 else ""
    return "Invalid params: " + "; ".join(problems) + suffix
