"""Validation of every message the project emits against the official 2025-11-25 schema."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "shared" / "spec" / "schema-2025-11-25.json"

#: Result definition for each method a client answers.
RESULT_OF = {
    "sampling/createMessage": "CreateMessageResult",
    "elicitation/create": "ElicitResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
    "ping": "EmptyResult",
}
NOTIFICATION_OF = {
    "notifications/tasks/status": "TaskStatusNotification",
    "notifications/progress": "ProgressNotification",
    "notifications/cancelled": "CancelledNotification",
    "notifications/initialized": "InitializedNotification",
}


def _find_schema() -> Path:
    for candidate in (SCHEMA_PATH, Path.cwd().parent / "shared" / "spec" / "schema-2025-11-25.json"):
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"official schema not found at {SCHEMA_PATH}")


@cache
def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_find_schema().read_text())
    # schema.json types ElicitResult.content values as string|integer|boolean|string[];
    # the spec's schema.ts says number. Follow the spec (docs/protocol.md, "Deviations").
    content = schema["$defs"]["ElicitResult"]["properties"]["content"]["additionalProperties"]
    for option in content["anyOf"]:
        if option.get("type") == ["string", "integer", "boolean"]:
            option["type"] = ["string", "number", "boolean"]
    return schema


@cache
def _validator(definition: str) -> jsonschema.protocols.Validator:
    schema = _schema()
    wrapper = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(wrapper)
    return cls(wrapper)  # type: ignore[no-any-return]


def validate(definition: str, instance: Any) -> None:
    """Raise jsonschema.ValidationError unless ``instance`` is a valid ``definition``."""
    _validator(definition).validate(instance)


def validate_result(method: str, result: dict[str, Any], *, task: bool = False) -> None:
    """Validate what a client answers to ``method`` (a CreateTaskResult when ``task``)."""
    validate("CreateTaskResult" if task else RESULT_OF[method], result)
    validate("JSONRPCResultResponse", {"jsonrpc": "2.0", "id": 1, "result": result})


def validate_error(error: dict[str, Any]) -> None:
    validate("JSONRPCErrorResponse", {"jsonrpc": "2.0", "id": 1, "error": error})


def validate_notification(method: str, params: dict[str, Any] | None) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    validate(NOTIFICATION_OF.get(method, "JSONRPCNotification"), message)


def validate_message(message: dict[str, Any]) -> None:
    """Validate any JSON-RPC message a client sends."""
    validate("JSONRPCMessage", message)
    if "method" in message and "id" not in message and message["method"] in NOTIFICATION_OF:
        validate(NOTIFICATION_OF[message["method"]], message)
