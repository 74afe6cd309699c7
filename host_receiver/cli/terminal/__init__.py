"""The interactive terminal host: a person approves sampling and answers elicitations.

Plug :class:`TerminalApprover` and :class:`TerminalElicitationUI` into the
sampling and elicitation services, all sharing one :class:`Console`::

    async with Console() as console:
        approver = RememberDecisions(TerminalApprover(console))
        sampling = terminal_sampling(registry, approver, console.activity)
        receiver = Receiver(sampling=sampling, elicitation=ElicitationService(TerminalElicitationUI(console)))

Rules:

- One question on screen at a time. Requests that arrive meanwhile wait in
  arrival order (the toolbar counts them); every screen and prompt names its
  server and task.
- Cancelling a request's work (``tasks/cancel``, expiry, the server leaving)
  closes its prompt, or takes it out of the queue, and says so.
- Ctrl-C or Ctrl-D in a prompt refuses the sampling request or cancels the
  elicitation it belongs to; it never ends the host.
- While a model generates, a live line (the toolbar when a prompt is open)
  shows server, task, model, tokens so far and elapsed time.
- Prompts and screens go to stderr, so stdout stays clean for results.

Why prompt_toolkit: the prompts must be awaitable on the host's event loop,
which keeps serving ``tasks/get`` while a person thinks, and must close when
their task is cancelled. ``input()`` blocks the loop, and in a worker thread
it cannot be interrupted; prompt_toolkit reads the terminal asynchronously,
prints above an open prompt, pre-fills editable defaults, completes model
names and choices, draws a live bottom toolbar and handles Windows consoles.
It runs on asyncio (the CLI's backend); the terminal host does not run on trio.
Without prompt_toolkit (the library installed without its ``cli`` extra),
importing this package is an ``ImportError`` that says what to install.
"""

try:
    import prompt_toolkit  # noqa: F401  (the terminal's one extra dependency: say so if it is missing)
except ModuleNotFoundError as missing:
    raise ImportError(
        "host-receiver's interactive terminal needs prompt_toolkit, from the cli extra: "
        "pip install 'host-receiver[cli]'",
        name=missing.name,
    ) from missing

from host_receiver.cli.terminal._activity import Activity, terminal_sampling
from host_receiver.cli.terminal._console import Console, Turn
from host_receiver.cli.terminal._forms import TerminalElicitationUI, parse_answer
from host_receiver.cli.terminal._sampling import TerminalApprover
from host_receiver.errors import Interrupted as Interrupted  # its old path, until 0.4
from host_receiver.handlers import Generation

__all__ = [
    "Activity",
    "Console",
    "Generation",
    "TerminalApprover",
    "TerminalElicitationUI",
    "Turn",
    "parse_answer",
    "terminal_sampling",
]
