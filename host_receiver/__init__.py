"""host-receiver: receive server-initiated MCP sampling and elicitation requests as tasks.

The public API; everything else is an implementation detail that may change.
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
    SamplingApprover,
    SamplingRequestView,
    SamplingResultView,
    Send,
    UrlView,
)
from host_receiver.handlers import ElicitationService, ModelRouter, SamplingService
from host_receiver.host import Host, ServerConnection, tune_gc_for_serving
from host_receiver.protocol.errors import RpcError
from host_receiver.receiver import Receiver, ReceiverConfig, Requestor
from host_receiver.sampling import SamplingLimits
from host_receiver.tasks import MemoryTaskStore, TaskRecord, TaskStatus, TaskStore
from host_receiver.work import ElicitationHandler, SamplingHandler, WorkContext

__all__ = [
    "Approve",
    "AutoApprove",
    "DeclineAll",
    "DenyAll",
    "ElicitationHandler",
    "ElicitationService",
    "ElicitationUI",
    "FillDefaults",
    "FormView",
    "Host",
    "MemoryTaskStore",
    "ModelRouter",
    "Receiver",
    "ReceiverConfig",
    "Refuse",
    "Requestor",
    "RpcError",
    "SamplingApprover",
    "SamplingHandler",
    "SamplingLimits",
    "SamplingRequestView",
    "SamplingResultView",
    "SamplingService",
    "Send",
    "ServerConnection",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "UrlView",
    "WorkContext",
    "tune_gc_for_serving",
]
