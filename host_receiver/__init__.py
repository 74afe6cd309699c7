"""host-receiver: receive server-initiated MCP sampling and elicitation requests as tasks.

The public API: every name a host needs, listed in ``__all__`` and in
docs/api.md. Everything else is an implementation detail that may change.
The command line (``host_receiver.cli``) and the test helpers
(``host_receiver.testing``) are separate modules; importing this package
loads neither. The LLM side (providers, model choice, limits) is the
``providers`` package.
"""

from host_receiver.approval import (
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
from host_receiver.auth import (
    AuthError,
    Browser,
    FileTokenStore,
    HeadlessBrowser,
    KeyringTokenStore,
    MemoryTokenStore,
    OAuth,
    SystemBrowser,
    TokenStore,
)
from host_receiver.connection import (
    ClientConnection,
    ProtocolError,
    UnsupportedProtocolVersion,
    default_client_info,
)
from host_receiver.elicitation import FormField, FormSchema, parse_form_schema
from host_receiver.errors import HostReceiverError
from host_receiver.handlers import (
    ElicitationService,
    Generation,
    GenerationObserver,
    ModelRouter,
    SamplingService,
)
from host_receiver.host import Host, ServerConnection, tune_gc_for_serving
from host_receiver.peer import Peer
from host_receiver.policies import DecisionStore, ModelAllowList, RateLimit, RateLimits, RememberDecisions
from host_receiver.protocol.errors import RpcError, invalid_params, user_rejected
from host_receiver.protocol.jsonrpc import InvalidMessage
from host_receiver.protocol.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    Implementation,
    SamplingMessage,
    TextContent,
)
from host_receiver.protocol.versions import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from host_receiver.receiver import Receiver, ReceiverConfig, Requestor
from host_receiver.sampling import SamplingLimits
from host_receiver.session import ConnectionClosed, Session
from host_receiver.tasks import MemoryTaskStore, TaskRecord, TaskStatus, TaskStore
from host_receiver.transports import (
    HttpTransport,
    MemoryStream,
    MemoryTransport,
    MessageStream,
    SessionExpired,
    StdioTransport,
    Transport,
    TransportError,
    create_memory_pair,
)
from host_receiver.work import (
    ElicitationFunction,
    ElicitationHandler,
    ElicitationWork,
    SamplingFunction,
    SamplingHandler,
    SamplingWork,
    WorkContext,
)
from providers import safe_text

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Approve",
    "AuthError",
    "AutoApprove",
    "Browser",
    "ClientConnection",
    "ConnectionClosed",
    "CreateMessageRequestParams",
    "CreateMessageResult",
    "DecisionStore",
    "DeclineAll",
    "DenyAll",
    "ElicitRequestFormParams",
    "ElicitRequestParams",
    "ElicitRequestURLParams",
    "ElicitResult",
    "ElicitationFunction",
    "ElicitationHandler",
    "ElicitationService",
    "ElicitationUI",
    "ElicitationWork",
    "FileTokenStore",
    "FillDefaults",
    "FormField",
    "FormSchema",
    "FormView",
    "Generation",
    "GenerationObserver",
    "HeadlessBrowser",
    "Host",
    "HostReceiverError",
    "HttpTransport",
    "Implementation",
    "InvalidMessage",
    "KeyringTokenStore",
    "MemoryStream",
    "MemoryTaskStore",
    "MemoryTokenStore",
    "MemoryTransport",
    "MessageStream",
    "ModelAllowList",
    "ModelRouter",
    "OAuth",
    "Peer",
    "ProtocolError",
    "RateLimit",
    "RateLimits",
    "Receiver",
    "ReceiverConfig",
    "Refuse",
    "RememberDecisions",
    "RequestDecision",
    "Requestor",
    "ResultDecision",
    "RpcError",
    "SamplingApprover",
    "SamplingFunction",
    "SamplingHandler",
    "SamplingLimits",
    "SamplingMessage",
    "SamplingRequestView",
    "SamplingResultView",
    "SamplingService",
    "SamplingWork",
    "Send",
    "ServerConnection",
    "Session",
    "SessionExpired",
    "StdioTransport",
    "SystemBrowser",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "TextContent",
    "TokenStore",
    "Transport",
    "TransportError",
    "UnsupportedProtocolVersion",
    "UrlAnswer",
    "UrlView",
    "WorkContext",
    "create_memory_pair",
    "default_client_info",
    "invalid_params",
    "parse_form_schema",
    "safe_text",
    "tune_gc_for_serving",
    "url_warnings",
    "user_rejected",
]
