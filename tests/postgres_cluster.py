"""A private PostgreSQL cluster for the tests: started in a temporary directory, stopped at the end.

:func:`running_cluster` runs Debian's ``initdb`` and ``pg_ctl`` (``.ci/setup``
installs the ``postgresql`` package) on a free loopback port, with its unix
socket in the same directory and password authentication (SCRAM), so a test
can check that the password never shows; :meth:`PostgresCluster.stop` and
:meth:`PostgresCluster.start` take it down and bring it back on the same port
(a database restarted under its clients). Run as root, the server runs as
the unprivileged ``postgres`` user (``runuser``), which owns the directory.
:func:`postgres_binaries` is None where no ``initdb`` is found: the callers
skip with :data:`NO_POSTGRES`. The store's tests and the fleet's share it
(tests/conftest.py has the fixtures: ``postgres_cluster``, ``postgres_url``).

The cluster lives in RAM (``/dev/shm``) where that has room: each test's
database is a copy of the template's few hundred files, and writing them, then
removing them all at the session's end, took a loaded disk half a minute.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = ["NO_POSTGRES", "PostgresCluster", "postgres_binaries", "running_cluster"]

NO_POSTGRES = "PostgreSQL's initdb and pg_ctl not found (install Debian's postgresql: bash .ci/setup)"
_SEARCH = ("/usr/lib/postgresql/*/bin",)
#: A RAM file system for the cluster's files, used when it has this much room (a container's is 64 MB).
_RAM, _RAM_NEEDED = Path("/dev/shm"), 2 << 30


def postgres_binaries() -> Path | None:
    """The directory with ``initdb`` and ``pg_ctl`` (the newest Debian version, else on PATH)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass(frozen=True)
class PostgresCluster:
    """A running cluster: connect as ``user`` with ``password`` on 127.0.0.1:``port``."""

    port: int
    user: str
    password: str
    socket_dir: Path
    binaries: Path
    data: Path

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m MODE``: ``fast`` ends every session (clients see their connections
        lost, new ones refused) and shuts down cleanly; ``immediate`` as a crash would."""
        self._pg_ctl("-m", mode, "-w", "stop")

    def start(self) -> None:
        """``pg_ctl start`` on the same port, directory and settings (after :meth:`stop`)."""
        self._pg_ctl(
            "-l",
            str(self.socket_dir / "log"),
            "-w",
            "-t",
            "60",
            "-o",
            f"-p {self.port} -k {self.socket_dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off",
            "start",
        )

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*_as_owner(), str(self.binaries / "pg_ctl"), "-D", str(self.data), *args],
            check=True,
            capture_output=True,
            timeout=120,
        )

    def url(self, database: str = "postgres", *, password: bool = True) -> str:
        """A ``postgresql://`` URL of ``database`` (with the password in it unless told)."""
        secret = f":{self.password}" if password else ""
        return f"postgresql://{self.user}{secret}@127.0.0.1:{self.port}/{database}"

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement with psql over the socket (as a superuser); its output."""
        done = subprocess.run(
            [
                *_as_owner(),
                str(self.binaries / "psql"),
                "-h",
                str(self.socket_dir),
                "-p",
                str(self.port),
                "-U",
                self.user,
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                statement,
            ],
            env={**os.environ, "PGPASSWORD": self.password},
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        )
        return done.stdout

    def new_database(self) -> str:
        """A fresh, empty database; its name."""
        name = f"t_{secrets.token_hex(6)}"
        self.sql(f"CREATE DATABASE {name}")
        return name


def _as_owner() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ram_directory() -> Path | None:
    """``/dev/shm`` when it is there with room to spare; else None (the usual temporary directory)."""
    try:
        return _RAM if shutil.disk_usage(_RAM).free >= _RAM_NEEDED else None
    except OSError:
        return None


@contextmanager
def running_cluster(binaries: Path) -> Iterator[PostgresCluster]:
    """A cluster in a temporary directory for the block; stopped and removed after it."""
    root = Path(tempfile.mkdtemp(prefix="hr-postgres-", dir=_ram_directory()))
    if os.geteuid() == 0:  # postgres refuses to run as root: the unprivileged postgres user owns it all
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
    root.chmod(0o700)
    data, password = root / "data", secrets.token_urlsafe(16)
    pwfile = root / "pw"
    pwfile.write_text(password)
    if os.geteuid() == 0:
        os.chown(pwfile, owner.pw_uid, owner.pw_gid)
    port = _free_port()
    run = [*_as_owner()]
    try:
        subprocess.run(
            [
                *run,
                str(binaries / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=scram-sha-256",
                f"--pwfile={pwfile}",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        cluster = PostgresCluster(
            port=port, user="postgres", password=password, socket_dir=root, binaries=binaries, data=data
        )
        cluster.start()
        try:
            yield cluster
        finally:
            subprocess.run(
                [*run, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
