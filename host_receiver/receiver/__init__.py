"""The receiver: routes server-initiated requests, and runs them as tasks.

Its parts, one concept a module, each opening with its rules:

- :mod:`._receiver`: :class:`Receiver`, the requestor scopes over one store;
- :mod:`._offer`: :class:`Offer`, what a host serves and the capabilities
  derived from it;
- :mod:`._config`: :class:`ReceiverConfig`, the limits and defaults;
- :mod:`._requestor`: :class:`Requestor`, one server's scope: routing and
  plain requests;
- :mod:`._runner`: the tasks of one requestor, from creation to their end;
- :mod:`._methods`: ``tasks/get``, ``tasks/result``, ``tasks/list``,
  ``tasks/cancel``;
- :mod:`._expiry`: deleting tasks when their ttl runs out;
- :mod:`.tasks`: the tasks the host runs for a server (the lifecycle table,
  the stored record, stores, list cursors; a door of its own);
- :mod:`.work`: the work a task does (sampling, elicitation) and its context;
- :mod:`._audit`: the audit trail of what a person or policy decided.

(The tasks a server runs for the host are :mod:`host_receiver.client.remote_tasks`.)
May import the session, protocol, the request checks (:mod:`host_receiver.protocol.sampling_rules`,
:mod:`host_receiver.protocol.elicitation_rules`) and the base; never the handlers, people,
client or ``providers`` above it.
"""

from host_receiver.receiver._config import (
    ReceiverConfig as ReceiverConfig,  # public as host_receiver.ReceiverConfig
)
from host_receiver.receiver._methods import CANCELLED_ERROR, CANCELLED_MESSAGE
from host_receiver.receiver._offer import ElicitationMode, Offer
from host_receiver.receiver._receiver import Receiver as Receiver  # public as host_receiver.Receiver
from host_receiver.receiver._requestor import Answer, Requestor

__all__ = [
    "CANCELLED_ERROR",
    "CANCELLED_MESSAGE",
    "Answer",
    "ElicitationMode",
    "Offer",
    "Requestor",
]
