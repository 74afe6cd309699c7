"""The base of every MCP wire model, and how a model becomes wire JSON.

Rules:

* Field names are snake_case in Python and camelCase on the wire (``_meta`` is
  ``meta``); :func:`dump` gives the wire JSON.
* Every model keeps unknown fields (``extra="allow"``), so what a peer sends
  that the schema allows, such as ``_meta`` keys or ``metadata`` entries,
  survives a round trip.
* Types are the schema's, strictly: every model validates in pydantic's
  strict mode, which holds inside lists and nested models too (a boolean is
  not an integer, a string is not a number, a number is not a string); a
  float field still takes an integer, and an integer field (:data:`WireInt`)
  takes a float with no fractional part, as JSON Schema counts integers.
  A request's ``_meta`` (:data:`RequestMeta`) may only carry a string or
  integer ``progressToken``. Errors name the wire path (``task.ttl``,
  ``_meta.progressToken``).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

__all__ = ["MetaModel", "RequestMeta", "WireInt", "WireModel", "dump"]


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, unknown fields kept."""

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        strict=True,
    )


class MetaModel(WireModel):
    """A wire object that may carry ``_meta``."""

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


def _integral(value: Any) -> Any:
    """A float with no fractional part is the integer JSON Schema says it is (5.0 is 5)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


#: An integer of the schema: an int, or a float with no fractional part; never a
#: boolean or a string.
WireInt: TypeAlias = Annotated[int, BeforeValidator(_integral)]


def _request_meta(meta: dict[str, Any]) -> dict[str, Any]:
    if "progressToken" in meta and type(meta["progressToken"]) not in (str, int):
        raise PydanticCustomError(
            "progress_token_type", "must be a string or an integer", {"member": "progressToken"}
        )
    return meta


#: The ``_meta`` of a request: an object whose ``progressToken``, if present, is a
#: string or an integer.
RequestMeta: TypeAlias = Annotated[dict[str, Any], AfterValidator(_request_meta)]


def dump(model: BaseModel) -> dict[str, Any]:
    """Wire JSON of ``model``: aliases, and no keys for absent optional fields."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)
