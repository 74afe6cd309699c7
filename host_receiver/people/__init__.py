"""People in the loop: the approval hooks a person (or a policy in their place) answers, and ready policies.

Holds :mod:`.approval` (the views a person is shown, the decisions they give,
the hook protocols ``SamplingApprover`` and ``ElicitationUI``, the automatic
hooks) and :mod:`.policies` (remembered decisions per server identity,
model allow-lists, rate limits, the cap on requests waiting for a person),
and :mod:`.shared` (remembered decisions kept in the shared store).
May import protocol, the server identity, the store and the base, and
``providers`` for token estimates; never the receiver, handlers or client.
"""
