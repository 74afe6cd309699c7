"""Validation of every message the project emits against the official schema of its era.

Legacy messages (2025-11-25) against ``schema-2025-11-25.json``; modern ones
against ``schema-2026-07-28.json``: a request whose ``_meta`` names 2026-07-28,
and every message of a connection that agreed on the modern era (``era``),
notifications included (a modern client sends only ``notifications/cancelled``,
the schema's ``ClientNotification``).
The tasks extension's methods (``tasks/get|update|cancel`` of 2026-07-28) are
not in the core schema: their envelope, ``_meta`` and ``inputResponses`` are
checked against the core definitions, their other params by hand.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
SPEC_DIR = Path(__file__).resolve().parents[2] / "shared" / "spec"
SCHEMA_PATH = SPEC_DIR / f"schema-{LEGACY}.json"
#: Request definition of each method a modern client sends (2026-07-28 core schema).
MODERN_REQUEST_OF = {
    "server/discover": "DiscoverRequest",
    "tools/call": "CallToolRequest",
    "tools/list": "ListToolsRequest",
    "prompts/get": "GetPromptRequest",
    "resources/read": "ReadResourceRequest",
    "subscriptions/listen": "SubscriptionsListenRequest",
}
#: The tasks extension's methods, and the params each needs besides ``taskId``.
TASK_EXTENSION_PARAMS = {"tasks/get": (), "tasks/update": ("inputResponses",), "tasks/cancel": ()}

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


def _find_schema(version: str) -> Path:
    """``shared/spec/schema-VERSION.json`` beside the checkout, or beside a folder above it (a
    git worktree under ``wt/``)."""
    name = f"schema-{version}.json"
    for folder in Path(__file__).resolve().parents[1:]:
        candidate = folder / "shared" / "spec" / name
        if candidate.exists():
            return candidate
    raise FileNotFoundError(f"official schema not found at {SPEC_DIR / name}")


@cache
def _schema(version: str = LEGACY) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(_find_schema(version).read_text())
    # schema.json types ElicitResult.content values as string|integer|boolean|string[];
    # the spec's schema.ts says number. Follow the spec (docs/protocol.md, "Deviations").
    content = schema["$defs"]["ElicitResult"]["properties"]["content"]["additionalProperties"]
    for option in content["anyOf"]:
        if option.get("type") == ["string", "integer", "boolean"]:
            option["type"] = ["string", "number", "boolean"]
    return schema


@cache
def _validator(definition: str, version: str = LEGACY) -> jsonschema.protocols.Validator:
    schema = _schema(version)
    wrapper = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    cls = jsonschema.validators.validator_for(wrapper)
    return cls(wrapper)


def validate(definition: str, instance: Any, *, version: str = LEGACY) -> None:
    """Raise jsonschema.ValidationError unless ``instance`` is a valid ``definition`` of ``version``."""
    _validator(definition, version).validate(instance)


def is_modern(message: dict[str, Any]) -> bool:
    """Whether ``message`` is a 2026-07-28 request (its ``_meta`` names that version)."""
    meta = (message.get("params") or {}).get("_meta") if isinstance(message.get("params"), dict) else None
    return isinstance(meta, dict) and meta.get("io.modelcontextprotocol/protocolVersion") == MODERN


def validate_modern_request(message: dict[str, Any]) -> None:
    """Validate a request a modern client sends, by the 2026-07-28 schema (rules above)."""
    validate("JSONRPCRequest", message, version=MODERN)
    params = message.get("params")
    assert isinstance(params, dict) and isinstance(params.get("_meta"), dict), "a modern request needs _meta"
    validate("RequestMetaObject", params["_meta"], version=MODERN)
    assert is_modern(message), f"a modern request must name {MODERN} in _meta"
    method = message["method"]
    if method in MODERN_REQUEST_OF:
        validate(MODERN_REQUEST_OF[method], message, version=MODERN)
    elif method in TASK_EXTENSION_PARAMS:
        assert isinstance(params.get("taskId"), str), f"{method} needs a string taskId"
        for needed in TASK_EXTENSION_PARAMS[method]:
            assert needed in params, f"{method} needs {needed}"
    else:
        raise AssertionError(f"a modern client sent {method}, which the 2026-07-28 schema has no request for")
    if method == "subscriptions/listen":  # the tasks extension adds taskIds to the core filter
        task_ids = params["notifications"].get("taskIds", [])
        assert isinstance(task_ids, list) and all(isinstance(t, str) for t in task_ids), "taskIds: strings"
    if "inputResponses" in params:
        validate("InputResponses", params["inputResponses"], version=MODERN)
    if "requestState" in params:
        assert isinstance(params["requestState"], str)


def validate_modern_message(message: dict[str, Any]) -> None:
    """Validate any message a client sends on a 2026-07-28 connection, by that schema."""
    if "method" in message and "id" in message:
        validate_modern_request(message)
    elif "method" in message:
        validate("JSONRPCNotification", message, version=MODERN)
        validate("ClientNotification", message, version=MODERN)
    else:
        validate("JSONRPCMessage", message, version=MODERN)


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


def validate_message(message: dict[str, Any], *, era: str | None = None) -> None:
    """Validate any JSON-RPC message a client sends: by the 2026-07-28 schema on a connection
    whose ``era`` is ``"modern"`` or when the message names that version, else by 2025-11-25."""
    if era == "modern" or is_modern(message):
        validate_modern_message(message)
        return
    validate("JSONRPCMessage", message)
    if "method" in message and "id" not in message and message["method"] in NOTIFICATION_OF:
        validate(NOTIFICATION_OF[message["method"]], message)
