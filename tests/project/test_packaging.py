"""The wheel and the sdist build, the wheel carries the adapters and their extras, and works without extras.

This is what a host that embeds the library gets from ``pip install host-receiver``:
the library, the providers and the test helpers import, and the command line
runs its non-interactive modes, while the CLI extra's packages are absent.
"""

from __future__ import annotations

import email.parser
import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

from host_receiver.adapters import REQUIREMENTS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist", "-o", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        text=True,
    )
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return wheel, sdist


def test_the_wheel_holds_both_packages_the_example_server_and_no_tests(built: tuple[Path, Path]) -> None:
    wheel, sdist = built
    names = zipfile.ZipFile(wheel).namelist()
    assert "host_receiver/__init__.py" in names and "providers/__init__.py" in names
    assert "host_receiver/testing.py" in names and "host_receiver/py.typed" in names
    assert "host_receiver/_examples/demo_server.py" in names
    assert {f"host_receiver/web/static/{f}" for f in ("index.html", "inbox.js", "inbox.css")} <= set(names)
    assert not [n for n in names if n.startswith("tests/")]
    with tarfile.open(sdist) as archive:
        members = archive.getnames()
    assert any(m.endswith("/pyproject.toml") for m in members)
    assert any(m.endswith("/host_receiver/receiver/_runner.py") for m in members)


def test_the_wheel_holds_the_adapters_and_their_extras(built: tuple[Path, Path]) -> None:
    wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.Parser().parsestr(archive.read(metadata_name).decode())
    sources = {f"host_receiver/adapters/{p.name}" for p in (ROOT / "host_receiver" / "adapters").glob("*.py")}
    assert {"host_receiver/adapters/mcp1.py", "host_receiver/adapters/_fastmcp.py"} <= sources
    assert sources <= set(names)
    assert {"mcp1", "mcp2", "fastmcp"} <= set(metadata.get_all("Provides-Extra") or [])
    # Each extra requires exactly the ranges the adapter checks when it is used.
    required: dict[str, set[tuple[str, frozenset[str]]]] = {}
    for line in metadata.get_all("Requires-Dist") or []:
        found = re.fullmatch(r"([A-Za-z0-9_.-]+)([^;]*); extra == '([^']+)'", line)
        if found is not None:
            name, specifiers, extra = found.groups()
            required.setdefault(extra, set()).add((name, frozenset(specifiers.split(","))))
    for adapter, requirements in REQUIREMENTS.items():
        assert required[adapter] == {
            (r.distributions[0], frozenset({f">={r.low}", f"<{r.high}"})) for r in requirements
        }
    assert required["mcp1"] == {("mcp", frozenset({">=1.23", "<2"}))}


def test_the_wheel_works_in_a_fresh_venv_without_extras(built: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, _ = built
    venv.create(tmp_path / "env", with_pip=True)
    python = tmp_path / "env" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    probe = (
        "import importlib, importlib.util, host_receiver, providers, host_receiver.testing\n"
        "assert importlib.util.find_spec('prompt_toolkit') is None\n"
        "assert importlib.util.find_spec('tomli_w') is None\n"
        "assert importlib.util.find_spec('platformdirs') is None\n"
        "assert importlib.util.find_spec('httptools') is None\n"
        "from host_receiver._net import wire\n"
        "assert wire.new_wire is wire.H11Wire  # without [speed], h11 reads and writes\n"
        "assert providers.config_path().name == 'config.toml'\n"
        "for path in ('host_receiver.terminal', 'host_receiver.cli.terminal'):\n"
        "    try:\n"
        "        importlib.import_module(path)\n"
        "    except ImportError as error:\n"
        "        assert \"pip install 'host-receiver[cli]'\" in str(error), error\n"
        "    else:\n"
        "        raise AssertionError(path + ' imported without prompt_toolkit')\n"
        "try:\n"
        "    import host_receiver.web\n"
        "except ImportError as error:\n"
        "    assert \"pip install 'host-receiver[web]'\" in str(error), error\n"
        "else:\n"
        "    raise AssertionError('host_receiver.web imported without starlette')\n"
        "print(host_receiver.__file__)\n"
    )
    done = subprocess.run([str(python), "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert str(tmp_path / "env") in done.stdout  # the installed copy, not the source tree
    cli = tmp_path / "env" / "bin" / "host-receiver"
    helped = subprocess.run([str(cli), "run", "--help"], env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "--call TOOL" in helped.stdout
    asked = subprocess.run(
        [str(cli), "run", "--approve", "ask", "--", "true"], env=env, capture_output=True, text=True
    )
    assert asked.returncode == 2
    assert "pip install 'host-receiver[cli]'" in asked.stderr
    web = subprocess.run(
        [str(cli), "run", "--approve", "web", "--", "true"], env=env, capture_output=True, text=True
    )
    assert web.returncode == 2
    assert "pip install 'host-receiver[web]'" in web.stderr


#: Packages host_receiver.auth imports directly, so pyproject.toml must name each with a floor.
AUTH_PACKAGES = ("authlib", "joserfc", "cryptography")


def _floors() -> dict[str, str]:
    """The ``name>=version`` floors of pyproject.toml's dependencies."""
    import tomllib

    with (ROOT / "pyproject.toml").open("rb") as handle:
        dependencies = tomllib.load(handle)["project"]["dependencies"]
    floors = {}
    for requirement in dependencies:
        name, sep, version = requirement.partition(">=")
        if sep:
            floors[name.strip().lower()] = version.strip()
    return floors


def test_the_declared_floors_of_the_auth_dependencies_sign_private_key_jwts(tmp_path: Path) -> None:
    """The oldest authlib, joserfc and cryptography pyproject.toml allows run the private_key_jwt flow.

    Those three versions are installed on their own (no dependencies) in front of the
    venv's, and the flow tests for EC, Ed25519 and RSA keys run against them.
    """
    floors = _floors()
    assert set(AUTH_PACKAGES) <= floors.keys(), f"pyproject.toml names no floor for some of {AUTH_PACKAGES}"
    pins = [f"{name}=={floors[name]}" for name in AUTH_PACKAGES]
    target = tmp_path / "floors"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
    installed = subprocess.run(
        [*pip, "--target", str(target), *pins],
        capture_output=True,
        text=True,
    )
    assert installed.returncode == 0, installed.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    probe = f"import importlib.metadata as m; print(' '.join(m.version(n) for n in {AUTH_PACKAGES!r}))"
    versions = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert versions.stdout.split() == [floors[name] for name in AUTH_PACKAGES], versions.stderr
    tests = [str(ROOT / "tests" / "auth" / "test_flow.py"), "-k", "private_key_jwt"]
    flow = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", *tests],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert flow.returncode == 0, flow.stdout[-4000:] + flow.stderr[-2000:]
    assert "6 passed" in flow.stdout
