"""The backends: each turns the contract's calls into one API's HTTP requests, and their wire formats.

This room holds, all private (the public names are served by :mod:`providers`):

* the backends: ``_openai`` (any OpenAI-compatible API; its reply reader
  ``_openai_json``), ``_anthropic``, ``_gemini`` (each on its vendor's SDK,
  loaded only when a backend of its type is built) and ``_echo`` (offline);
* their wire formats, pure functions: ``_openai_wire``, ``_anthropic_wire``,
  ``_gemini_wire``, and ``_wire``, what they share (no wire module imports
  another backend's);
* what every SDK-based backend shares: ``_client`` (the base class
  ``SdkBackend``, its construction and model listing; the httpx client; one
  wording of failures), ``_calls`` (the call transport: size cap, read
  timeout, bodies closed), ``_httpx2`` (that transport for an SDK on
  ``httpx2``), ``_redact`` (secrets out of messages) and ``_settings`` (the
  vendors' URLs and the HTTP pool choice, which the configuration names too).

What it may import: the contract at the top of the package
(:mod:`providers._contract`, :mod:`providers._limits` and the like), its own
modules, and host-receiver's base. Never :mod:`providers.config`, the
registry, the CLI or :mod:`providers` itself: those build backends, not the
reverse. Importing this package loads no vendor SDK.
"""
