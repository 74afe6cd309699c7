"""README.md's code blocks, run as written.

Shell blocks run in the checkout with the project's venv first on ``PATH``;
Python blocks run as scripts, on the interpreter their first line names
(``# Run with PATH ...``), else on this one; JSON blocks must parse; the one
``text`` block is the CLI's synopsis. A block whose first line is ``# not run
by the README test: WHY`` is left out, and few are; the test command is one
of them, and CI (.ci/run) runs its steps. Offline: the provider config is
absent (the echo provider) and decisions go to a temporary file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
NOT_RUN = "# not run by the README test: "
RUN_WITH = re.compile(r"^# Run with (\S+)")
PEER_PYTHON = re.compile(r"\.peers/[\w-]+/bin/python")
#: At most this many blocks may be left out (today: the test command itself, and OAuth).
MOST_NOT_RUN = 2


def blocks() -> list[tuple[int, str, str]]:
    """``(line, language, code)`` of every fenced block, in order."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, m[1], m[2]) for m in BLOCK.finditer(text)]


def runnable() -> list[pytest.ParameterSet]:
    return [
        pytest.param(language, code, id=f"{language}-line-{line}")
        for line, language, code in blocks()
        if language in ("bash", "python", "json") and not code.startswith(NOT_RUN)
    ]


def test_every_block_says_its_language_and_few_are_left_out() -> None:
    found = blocks()
    assert found, "no code block found in README.md"
    assert {language for _, language, _ in found} <= {"bash", "python", "json", "text"}
    assert [line for line, language, _ in found if language == "text"][1:] == []  # the synopsis only
    left_out = [code.splitlines()[0] for _, _, code in found if code.startswith(NOT_RUN)]
    assert 0 < len(left_out) <= MOST_NOT_RUN, left_out
    assert all(len(line) > len(NOT_RUN) + 10 for line in left_out), "say why a block is not run"
    # The mark is a first line, never hidden further down.
    assert all(NOT_RUN not in code.partition("\n")[2] for _, _, code in found)


def test_the_first_command_installs_only_what_the_demo_needs_then_runs_it() -> None:
    first = blocks()[0]
    assert first[1:] == ("bash", "bash .ci/setup --demo && .venv/bin/host-receiver demo\n")


def test_the_text_after_the_first_command_says_how_to_run_the_command_it_installed() -> None:
    """``host-receiver`` is in ``.venv/bin``, not on ``PATH``: before the README uses it bare, it
    says to run it from there or to activate ``.venv``."""
    text = README.read_text(encoding="utf-8")
    found = list(BLOCK.finditer(text))
    bare = [m for m in found if re.search(r"^host-receiver ", m[2], re.MULTILINE)]
    assert bare, "no block runs host-receiver bare"
    before = text[found[0].end() : bare[0].start()]
    assert "`.venv/bin/host-receiver --version`" in before
    assert "`source .venv/bin/activate`" in before


def test_ci_runs_the_readme_test_command() -> None:
    """The one block left out for being the test suite is what .ci/run runs, step by step."""
    suite = [code for _, _, code in blocks() if code.startswith(NOT_RUN) and "pytest" in code]
    assert len(suite) == 1
    steps = [step.strip() for step in suite[0].splitlines()[1].split("&&")]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert steps == ["bash .ci/setup", ".venv/bin/python -m pytest"]
    assert all(step in ci for step in steps)
    assert ci.index(steps[0]) < ci.index(steps[1])


@pytest.mark.slow
@pytest.mark.parametrize(("language", "code"), runnable())
def test_the_block_runs_as_written(language: str, code: str, tmp_path: Path) -> None:
    if language == "json":
        json.loads(code)
        return
    for peer in PEER_PYTHON.findall(code):
        if not (ROOT / peer).exists():
            message = f"{peer} is missing: run bash .ci/setup"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOST_RECEIVER_CONFIG": str(tmp_path / "config.toml"),
        "HOST_RECEIVER_DECISIONS": str(tmp_path / "decisions.json"),
    }
    if language == "bash":
        command = ["bash", "-euo", "pipefail", "-c", code]
    else:
        script = tmp_path / "block.py"
        script.write_text(code, encoding="utf-8")
        named = RUN_WITH.match(code)
        command = [str(ROOT / named[1]) if named else sys.executable, str(script)]
    done = subprocess.run(
        command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if "host-receiver demo" in code:
        assert "\nNext steps:\n" in done.stdout  # the demo says where to go from here
