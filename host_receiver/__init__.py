"""host-receiver: receive server-initiated MCP sampling and elicitation requests as tasks.

The names a host needs most are here, in ``__all__`` (docs/api.md lists them
and the namespaces behind them): the host and its connections, the receiver
and its services, the hooks a person answers through, the policies, the
handler contract. Everything else public lives in one namespace each:
``host_receiver.errors`` (every exception and error code),
``.protocol.types`` and ``.protocol.versions`` (the wire), ``.transports``,
``.session``, ``.receiver``, ``.tasks``, ``.auth``, ``.sanitize``,
``.paths``, ``.testing``, ``.adapters``; the LLM side is the ``providers``
package.

Importing this package loads nothing but itself: each name is imported
when it is first used, so ``providers`` can build on the base modules
(``errors``, ``sanitize``, ``paths``, ``protocol.types``) without loading
the MCP side, and ``import host_receiver`` stays cheap. Names that moved
to a namespace are still served here, with a ``DeprecationWarning``, until
0.4.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from host_receiver._moved import moved_names, serve_moved_modules

if TYPE_CHECKING:
    from host_receiver.client.connection import ClientConnection, TaskHandle, default_client_info
    from host_receiver.client.host import Host, ServerConnection, tune_gc_for_serving
    from host_receiver.client.options import ConnectionOptions
    from host_receiver.handlers import (
        ElicitationService,
        Generation,
        GenerationObserver,
        ModelRouter,
        SamplingService,
        open_receiver,
    )
    from host_receiver.peer import Peer
    from host_receiver.people.approval import (
        Approve,
        AutoApprove,
        DeclineAll,
        DenyAll,
        ElicitationUI,
        FillDefaults,
        FormView,
        Refuse,
        RequestDecision,
        ResultDecision,
        SamplingApprover,
        SamplingRequestView,
        SamplingResultView,
        Send,
        UrlAnswer,
        UrlView,
        url_warnings,
    )
    from host_receiver.people.policies import (
        DecisionStore,
        ModelAllowList,
        RateLimit,
        RateLimits,
        RememberDecisions,
    )
    from host_receiver.protocol.elicitation_rules import FormField, FormSchema, parse_form_schema
    from host_receiver.protocol.modern import RemoteTask
    from host_receiver.receiver import Receiver, ReceiverConfig
    from host_receiver.receiver.work import (
        ElicitationFunction,
        ElicitationHandler,
        ElicitationWork,
        SamplingFunction,
        SamplingHandler,
        SamplingWork,
        WorkContext,
    )

__all__ = [
    "Approve",
    "AutoApprove",
    "ClientConnection",
    "ConnectionOptions",
    "DecisionStore",
    "DeclineAll",
    "DenyAll",
    "ElicitationFunction",
    "ElicitationHandler",
    "ElicitationService",
    "ElicitationUI",
    "ElicitationWork",
    "FillDefaults",
    "FormField",
    "FormSchema",
    "FormView",
    "Generation",
    "GenerationObserver",
    "Host",
    "ModelAllowList",
    "ModelRouter",
    "Peer",
    "RateLimit",
    "RateLimits",
    "Receiver",
    "ReceiverConfig",
    "Refuse",
    "RememberDecisions",
    "RemoteTask",
    "RequestDecision",
    "ResultDecision",
    "SamplingApprover",
    "SamplingFunction",
    "SamplingHandler",
    "SamplingRequestView",
    "SamplingResultView",
    "SamplingService",
    "SamplingWork",
    "Send",
    "ServerConnection",
    "TaskHandle",
    "UrlAnswer",
    "UrlView",
    "WorkContext",
    "default_client_info",
    "open_receiver",
    "parse_form_schema",
    "tune_gc_for_serving",
    "url_warnings",
]

#: Where each name of ``__all__`` is defined.
_HOMES = {
    "Host": "host_receiver.client.host",
    "ServerConnection": "host_receiver.client.host",
    "tune_gc_for_serving": "host_receiver.client.host",
    "ClientConnection": "host_receiver.client.connection",
    "ConnectionOptions": "host_receiver.client.options",
    "TaskHandle": "host_receiver.client.connection",
    "default_client_info": "host_receiver.client.connection",
    "RemoteTask": "host_receiver.protocol.modern",
    "Receiver": "host_receiver.receiver",
    "ReceiverConfig": "host_receiver.receiver",
    "Peer": "host_receiver.peer",
    "ElicitationService": "host_receiver.handlers",
    "Generation": "host_receiver.handlers",
    "GenerationObserver": "host_receiver.handlers",
    "ModelRouter": "host_receiver.handlers",
    "SamplingService": "host_receiver.handlers",
    "open_receiver": "host_receiver.handlers",
    "Approve": "host_receiver.people.approval",
    "AutoApprove": "host_receiver.people.approval",
    "DeclineAll": "host_receiver.people.approval",
    "DenyAll": "host_receiver.people.approval",
    "ElicitationUI": "host_receiver.people.approval",
    "FillDefaults": "host_receiver.people.approval",
    "FormView": "host_receiver.people.approval",
    "Refuse": "host_receiver.people.approval",
    "RequestDecision": "host_receiver.people.approval",
    "ResultDecision": "host_receiver.people.approval",
    "SamplingApprover": "host_receiver.people.approval",
    "SamplingRequestView": "host_receiver.people.approval",
    "SamplingResultView": "host_receiver.people.approval",
    "Send": "host_receiver.people.approval",
    "UrlAnswer": "host_receiver.people.approval",
    "UrlView": "host_receiver.people.approval",
    "url_warnings": "host_receiver.people.approval",
    "FormField": "host_receiver.protocol.elicitation_rules",
    "FormSchema": "host_receiver.protocol.elicitation_rules",
    "parse_form_schema": "host_receiver.protocol.elicitation_rules",
    "DecisionStore": "host_receiver.people.policies",
    "ModelAllowList": "host_receiver.people.policies",
    "RateLimit": "host_receiver.people.policies",
    "RateLimits": "host_receiver.people.policies",
    "RememberDecisions": "host_receiver.people.policies",
    "ElicitationFunction": "host_receiver.receiver.work",
    "ElicitationHandler": "host_receiver.receiver.work",
    "ElicitationWork": "host_receiver.receiver.work",
    "SamplingFunction": "host_receiver.receiver.work",
    "SamplingHandler": "host_receiver.receiver.work",
    "SamplingWork": "host_receiver.receiver.work",
    "WorkContext": "host_receiver.receiver.work",
}

#: Names that were here in 0.2, and their one door now.
_MOVED = {
    "AuthError": "host_receiver.errors",
    "BadResult": "host_receiver.errors",
    "ConnectionClosed": "host_receiver.errors",
    "HostReceiverError": "host_receiver.errors",
    "INTERNAL_ERROR": "host_receiver.errors",
    "INVALID_PARAMS": "host_receiver.errors",
    "INVALID_REQUEST": "host_receiver.errors",
    "InputRequestFailed": "host_receiver.errors",
    "InputRoundsExceeded": "host_receiver.errors",
    "InvalidMessage": "host_receiver.errors",
    "METHOD_NOT_FOUND": "host_receiver.errors",
    "MissingCapability": "host_receiver.errors",
    "PARSE_ERROR": "host_receiver.errors",
    "ProtocolError": "host_receiver.errors",
    "RemoteTaskCancelled": "host_receiver.errors",
    "RemoteTaskLost": "host_receiver.errors",
    "RpcError": "host_receiver.errors",
    "SessionExpired": "host_receiver.errors",
    "TransportError": "host_receiver.errors",
    "URL_ELICITATION_REQUIRED": "host_receiver.errors",
    "USER_REJECTED": "host_receiver.errors",
    "UnsupportedProtocolVersion": "host_receiver.errors",
    "invalid_params": "host_receiver.errors",
    "user_rejected": "host_receiver.errors",
    "CreateMessageRequestParams": "host_receiver.protocol.types",
    "CreateMessageResult": "host_receiver.protocol.types",
    "ElicitRequestFormParams": "host_receiver.protocol.types",
    "ElicitRequestParams": "host_receiver.protocol.types",
    "ElicitRequestURLParams": "host_receiver.protocol.types",
    "ElicitResult": "host_receiver.protocol.types",
    "Implementation": "host_receiver.protocol.types",
    "Root": "host_receiver.protocol.types",
    "SamplingMessage": "host_receiver.protocol.types",
    "TextContent": "host_receiver.protocol.types",
    "Era": "host_receiver.protocol.versions",
    "LATEST_PROTOCOL_VERSION": "host_receiver.protocol.versions",
    "SUPPORTED_PROTOCOL_VERSIONS": "host_receiver.protocol.versions",
    "Browser": "host_receiver.auth",
    "FileTokenStore": "host_receiver.auth",
    "HeadlessBrowser": "host_receiver.auth",
    "KeyringTokenStore": "host_receiver.auth",
    "MemoryTokenStore": "host_receiver.auth",
    "OAuth": "host_receiver.auth",
    "SystemBrowser": "host_receiver.auth",
    "TokenStore": "host_receiver.auth",
    "HttpTransport": "host_receiver.transports",
    "MemoryStream": "host_receiver.transports",
    "MemoryTransport": "host_receiver.transports",
    "MessageStream": "host_receiver.transports",
    "StdioTransport": "host_receiver.transports",
    "Transport": "host_receiver.transports",
    "create_memory_pair": "host_receiver.transports",
    "safe_environment": "host_receiver.transports",
    "Session": "host_receiver.session",
    "Requestor": "host_receiver.receiver",
    "MemoryTaskStore": "host_receiver.receiver.tasks",
    "TaskRecord": "host_receiver.receiver.tasks",
    "TaskStatus": "host_receiver.receiver.tasks",
    "TaskStore": "host_receiver.receiver.tasks",
    "safe_text": "host_receiver.sanitize",
    "SamplingLimits": "providers",
}
_moved = moved_names(__name__, _MOVED)

#: Modules that moved into the rooms of docs/architecture.md: ``import`` of the old path gives the
#: module at the new one, with a DeprecationWarning, until 0.4.
MOVED_MODULES = {
    "host_receiver.connection": "host_receiver.client.connection",
    "host_receiver.host": "host_receiver.client.host",
    "host_receiver.options": "host_receiver.client.options",
    "host_receiver.demo": "host_receiver.cli.demo",
    "host_receiver.terminal": "host_receiver.cli.terminal",
    "host_receiver.work": "host_receiver.receiver.work",
    "host_receiver.sampling": "host_receiver.protocol.sampling_rules",
    "host_receiver.elicitation": "host_receiver.protocol.elicitation_rules",
    "host_receiver.approval": "host_receiver.people.approval",
    "host_receiver.policies": "host_receiver.people.policies",
    "host_receiver.remote_task_store": "host_receiver.client.remote_tasks.store",
    "host_receiver.tasks": "host_receiver.receiver.tasks",
    "host_receiver.tasks.cursor": "host_receiver.receiver.tasks.cursor",
    "host_receiver.tasks.record": "host_receiver.receiver.tasks.record",
    "host_receiver.tasks.state": "host_receiver.receiver.tasks.state",
    "host_receiver.tasks.store": "host_receiver.receiver.tasks.store",
}
serve_moved_modules(MOVED_MODULES)

if not TYPE_CHECKING:  # a type checker sees the imports above, and flags a moved name

    def __getattr__(name: str) -> object:
        home = _HOMES.get(name)
        if home is None:
            return _moved(name)
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value  # later look-ups do not come here
        return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
