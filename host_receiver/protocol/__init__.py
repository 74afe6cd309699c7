"""MCP on the wire, for both eras: the models, the JSON-RPC framing, and the rules checked before any work.

Holds the wire models (:mod:`.types`, :mod:`._wire`, :mod:`._sampling`: the
sampling vocabulary the provider contract speaks), the framing
(:mod:`.jsonrpc`), the era rules (:mod:`.versions`), params parsing
(:mod:`.params`), the 2026-07-28 envelope (:mod:`.modern`), typed results
(:mod:`.results`), and the rules of a sampling or elicitation request
checked before a task exists (:mod:`.sampling_rules`, :mod:`.elicitation_rules`).
In the base: may import only errors, sanitize and the other base modules;
``providers`` builds on it. Importing the package loads none of its modules.
"""
