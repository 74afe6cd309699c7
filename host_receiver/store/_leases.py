"""How a process keeps its continuable calls in a store: the store, the lease period, its name.

Fixed caps (docs/limits.md): ``LEASE_PERIODS``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from host_receiver.store._store import Store

__all__ = ["DEFAULT_LEASE", "LEASE_PERIODS", "CallKeeping"]

#: Seconds between a host's renewals of its claims (``--lease``): its inbox items, its kept calls.
DEFAULT_LEASE = 10.0
#: How many renewal periods a lease lasts: a killed process's lease runs out after this many.
LEASE_PERIODS = 3


@dataclass(frozen=True, kw_only=True)
class CallKeeping:
    """Where and how a connection keeps its calls that wait for input (``ConnectionOptions.call_store``).

    ``store`` is an open shared store; ``lease`` how often (seconds) a call's lease is
    renewed (it lasts :data:`LEASE_PERIODS` times that); ``owner`` this process's name in the
    leases (a new random one by default).
    """

    store: Store
    lease: float = 10.0
    owner: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        if not self.lease > 0:
            raise ValueError("lease must be a positive number of seconds")
