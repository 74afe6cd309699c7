"""Which scopes to ask for (MCP "Scope Selection Strategy" and "Step-Up Authorization Flow").

Rules:

- First authorization: the ``scope`` of the 401's Bearer challenge; without
  one, every scope in the protected resource metadata's
  ``scopes_supported``; without that, no ``scope`` parameter at all.
- Step-up (a 403 ``insufficient_scope``): the union of the scopes asked for
  last time and the challenge's scopes, in that order, so that no earlier
  permission is lost.
- ``offline_access`` is added, for the authorization code grant only, when
  the authorization server's metadata lists it in ``scopes_supported`` and
  a scope is being asked for at all (adding it to an omitted scope would
  replace the server's default scope by ``offline_access`` alone). It is
  never added otherwise, whatever the resource says.
- Order is kept and duplicates dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from host_receiver.auth._challenge import BearerChallenge

__all__ = ["OFFLINE_ACCESS", "select_scopes"]

OFFLINE_ACCESS = "offline_access"


def _unique(scopes: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(s for s in scopes if s))


def select_scopes(
    challenge: BearerChallenge | None,
    *,
    resource_scopes: Sequence[str] | None,
    server_scopes: Sequence[str] | None,
    previous: Sequence[str] = (),
    step_up: bool = False,
    want_refresh: bool = False,
) -> tuple[str, ...]:
    """The scopes to request; ``()`` means: omit the ``scope`` parameter."""
    challenged = challenge.scope if challenge is not None else ()
    if step_up:
        chosen = _unique([*previous, *challenged])
    elif challenged:
        chosen = _unique(challenged)
    else:
        chosen = _unique(resource_scopes or ())
    if want_refresh and chosen and server_scopes is not None and OFFLINE_ACCESS in server_scopes:
        chosen = _unique([*chosen, OFFLINE_ACCESS])
    return chosen
