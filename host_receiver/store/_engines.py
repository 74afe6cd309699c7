"""The three engines under the store: one SQLite database in memory, a SQLite file, PostgreSQL.

Every database call is synchronous (the standard library's ``sqlite3``,
psycopg 3's ``ConnectionPool``) and runs in a worker thread through
``anyio.to_thread.run_sync``: that serves asyncio and trio alike, and the
event loop never waits on a disk or a socket. PostgreSQL's LISTEN connection
is the one exception: the loop waits for its socket to be readable
(``anyio.wait_readable``) and then reads what arrived without blocking.

Fixed caps (docs/limits.md): ``BUSY_TIMEOUT``, ``CONNECT_TIMEOUT``, ``DOWN_POOL_WAIT``, ``POOL_SIZE``,
``RECONNECT_FIRST``, ``RECONNECT_MOST``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
import anyio.to_thread

from host_receiver.errors import StoreError, StoreUnreachable, UnsafeFile
from host_receiver.paths import private_file_problem
from host_receiver.sanitize import safe_logger, safe_text
from host_receiver.store._schema import CHANNEL, POSTGRES, SQLITE, Dialect
from host_receiver.store._url import StoreUrl

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["BUSY_TIMEOUT", "CONNECT_TIMEOUT", "Engine", "Tx", "open_engine"]

T = TypeVar("T")
logger = safe_logger(__name__)

#: How long a SQLite writer waits for another process's write lock (seconds).
BUSY_TIMEOUT = 10.0
#: How long connecting to PostgreSQL may take before the store is unreachable (seconds).
CONNECT_TIMEOUT = 10.0
#: The most PostgreSQL connections one process's pool holds.
POOL_SIZE = 8
#: How long a statement waits for the pool to lend a connection once the database was found
#: unreachable, before it connects on its own (seconds; otherwise the pool's ``CONNECT_TIMEOUT``).
DOWN_POOL_WAIT = 0.5
#: The first wait before the LISTEN connection is opened again (seconds); it doubles each time.
RECONNECT_FIRST = 0.1
#: The longest wait before the LISTEN connection is opened again (seconds).
RECONNECT_MOST = 5.0


class Tx:
    """One transaction: parameterised statements in ``?`` style, translated by the dialect."""

    def __init__(self, cursor: Any, dialect: Dialect) -> None:
        self._cursor = cursor
        self.dialect = dialect

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; the rows it changed."""
        self._cursor.execute(self.dialect.sql(sql), tuple(params))
        return int(self._cursor.rowcount)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one query; its rows."""
        self._cursor.execute(self.dialect.sql(sql), tuple(params))
        return [tuple(row) for row in self._cursor.fetchall()]


class Engine(Protocol):
    """Runs one transaction at a time in a worker thread."""

    dialect: Dialect

    async def run(self, work: Callable[[Tx], T], *, write: bool = True) -> T:
        """``work`` in one transaction: committed when it returns, rolled back when it raises;
        ``write=False`` for one that only reads (SQLite takes no write lock for it)."""
        ...

    async def listen(self, wake: Callable[[str | None], None]) -> None:
        """Call ``wake(item_id)`` for each announced change, ``wake(None)`` after (re)connecting;
        returns at once where the engine announces nothing (then waiters poll)."""
        ...

    async def aclose(self) -> None:
        """Release the connections."""
        ...


def _sqlite_tx(connection: sqlite3.Connection, work: Callable[[Tx], T], write: bool) -> T:
    cursor = connection.cursor()
    cursor.execute((SQLITE.begin or "BEGIN") if write else "BEGIN")
    try:
        result = work(Tx(cursor, SQLITE))
    except BaseException:
        connection.rollback()
        raise
    connection.commit()
    return result


class _MemoryEngine:
    """A SQLite database in this process's memory: one connection, one transaction at a time."""

    dialect = SQLITE

    def __init__(self) -> None:
        self._connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()

    async def run(self, work: Callable[[Tx], T], *, write: bool = True) -> T:
        def step() -> T:
            with self._lock:
                try:
                    return _sqlite_tx(self._connection, work, write)
                except sqlite3.Error as exc:
                    raise StoreError(f"the memory store failed: {safe_text(str(exc))}") from None

        return await anyio.to_thread.run_sync(step)

    async def listen(self, wake: Callable[[str | None], None]) -> None:
        return None

    async def aclose(self) -> None:
        self._connection.close()


class _SqliteEngine:
    """A SQLite file (WAL, busy timeout): a short-lived connection per transaction, any local process.

    When the store is opened, the file must be the user's own with no access for group or others
    (:func:`~host_receiver.paths.private_file_problem`, as the task store and the decisions file);
    otherwise opening it is refused with :class:`~host_receiver.errors.UnsafeFile`."""

    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self, *, check: bool = False) -> sqlite3.Connection:
        if not self.path.exists():  # the file holds token hashes and answers: the owner's only
            try:
                os.close(os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600))
            except OSError as exc:
                raise StoreError(
                    f"cannot create the store {safe_text(str(self.path))}: {exc.strerror}"
                ) from None
        problem = private_file_problem(self.path, "the store") if check else None
        if problem is not None:  # its rows choose what resumers run (docs/security.md)
            raise UnsafeFile(problem)
        connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None)
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT * 1000)}")
        return connection

    async def run(self, work: Callable[[Tx], T], *, write: bool = True) -> T:
        def step() -> T:
            try:
                connection = self._connect()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot open the store {safe_text(str(self.path))}: {exc}") from None
            try:
                return _sqlite_tx(connection, work, write)
            except sqlite3.Error as exc:
                raise StoreError(
                    f"the store {safe_text(str(self.path))} failed: {safe_text(str(exc))}"
                ) from None
            finally:
                connection.close()

        return await anyio.to_thread.run_sync(step)

    async def wal(self) -> None:
        """Check the file is private (:class:`~host_receiver.errors.UnsafeFile`) and switch it to
        write-ahead logging (kept in the file: readers never block the writer)."""

        def step() -> None:
            connection = self._connect(check=True)
            try:
                connection.execute("PRAGMA journal_mode=WAL")
            finally:
                connection.close()

        try:
            await anyio.to_thread.run_sync(step)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the store {safe_text(str(self.path))}: {exc}") from None

    async def listen(self, wake: Callable[[str | None], None]) -> None:
        return None

    async def aclose(self) -> None:
        return None


class _PostgresEngine:
    """PostgreSQL through psycopg 3's synchronous pool; LISTEN on one more connection of its own."""

    dialect = POSTGRES

    def __init__(self, url: StoreUrl) -> None:
        import psycopg_pool  # the [postgres] extra: loaded only for a PostgreSQL store

        self._url = url
        self._pool: psycopg_pool.ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            url.target,
            min_size=1,
            max_size=POOL_SIZE,
            open=False,
            timeout=CONNECT_TIMEOUT,
            kwargs={"connect_timeout": int(CONNECT_TIMEOUT)},
            # A connection broken meanwhile (the server restarted) is replaced before it is lent.
            check=psycopg_pool.ConnectionPool.check_connection,
            name="host-receiver-store",
        )
        # The database was found unreachable (a connection refused, the LISTEN connection lost):
        # statements wait DOWN_POOL_WAIT for the pool, then connect on their own (refused at once
        # while it is down), until the pool lends a connection again.
        self._down = False

    def _said(self, exc: BaseException) -> str:
        """The first line of a driver error, escaped, the password taken out should libpq quote it."""
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        for secret in self._url.secrets:
            first = first.replace(secret, "***")
        return safe_text(first, 300)

    def _unreachable(self, exc: BaseException) -> StoreError:
        """A lost or refused connection as :class:`StoreUnreachable`; a URL libpq cannot use as
        :class:`StoreError` (the URL is shown without its password)."""
        import psycopg
        import psycopg_pool

        if isinstance(exc, psycopg.OperationalError | psycopg_pool.PoolTimeout):
            return StoreUnreachable(f"the store {self._url.shown} is unreachable: {self._said(exc)}")
        return StoreError(f"cannot use the store {self._url.shown}: {self._said(exc)}")

    async def open(self) -> None:
        import psycopg
        import psycopg_pool

        def probe() -> None:  # one connection first: its error says why (the pool would only time out)
            psycopg.connect(self._url.target, connect_timeout=int(CONNECT_TIMEOUT)).close()

        try:
            await anyio.to_thread.run_sync(probe)
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None
        try:
            await anyio.to_thread.run_sync(lambda: self._pool.open(wait=True, timeout=CONNECT_TIMEOUT))
        except psycopg_pool.PoolTimeout as exc:
            await anyio.to_thread.run_sync(self._pool.close)
            raise self._unreachable(exc) from None

    async def run(self, work: Callable[[Tx], T], *, write: bool = True) -> T:
        import psycopg
        import psycopg_pool

        def step() -> T:
            try:
                with (
                    self._pool.connection(timeout=DOWN_POOL_WAIT if self._down else None) as connection,
                    connection.cursor() as cursor,
                ):
                    self._down = False  # the pool lends again
                    return work(Tx(cursor, POSTGRES))  # the pool commits on return, rolls back on raise
            except psycopg_pool.PoolTimeout:
                pass
            # After an outage the pool waits out its reconnect backoff (doubling, for minutes), and
            # during one it waits its whole timeout: one connection of this step's own, so that a
            # store that is back serves at once and one that is down is told at once.
            try:
                own = psycopg.connect(self._url.target, connect_timeout=int(CONNECT_TIMEOUT))
            except psycopg.OperationalError:
                self._down = True
                raise
            with own as connection, connection.cursor() as cursor:
                return work(Tx(cursor, POSTGRES))  # commits on return, rolls back on raise

        try:
            return await anyio.to_thread.run_sync(step)
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            raise self._unreachable(exc) from None
        except psycopg.Error as exc:
            raise StoreError(f"the store {self._url.shown} failed: {self._said(exc)}") from None

    async def listen(self, wake: Callable[[str | None], None]) -> None:
        import psycopg

        delay = RECONNECT_FIRST
        while True:
            try:
                connection = await anyio.to_thread.run_sync(self._listening)
            except psycopg.Error as exc:
                self._down = True
                logger.warning(
                    "store: cannot listen for answers (%s); again in %.1f s", self._unreachable(exc), delay
                )
                await anyio.sleep(delay)
                delay = min(delay * 2, RECONNECT_MOST)
                continue
            delay = RECONNECT_FIRST
            wake(None)  # whatever was announced while not listening: the waiters read again
            try:
                await self._relay(connection, wake)
            except psycopg.Error as exc:
                self._down = True
                logger.warning(
                    "store: lost the LISTEN connection (%s); listening again", self._unreachable(exc)
                )
            finally:
                with anyio.CancelScope(shield=True):  # closed even when the store closes meanwhile
                    await anyio.to_thread.run_sync(connection.close)

    def _listening(self) -> psycopg.Connection[Any]:
        import psycopg

        connection = psycopg.connect(self._url.target, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT))
        connection.execute(f"LISTEN {CHANNEL}")
        return connection

    @staticmethod
    async def _relay(connection: psycopg.Connection[Any], wake: Callable[[str | None], None]) -> None:
        while True:
            await anyio.wait_readable(connection.fileno())
            for notify in connection.notifies(timeout=0):  # only what has arrived: no blocking read
                wake(notify.payload)
            if connection.closed:
                return

    async def aclose(self) -> None:
        await anyio.to_thread.run_sync(self._pool.close)


async def open_engine(url: StoreUrl) -> Engine:
    """The engine ``url`` names, connected (PostgreSQL) or its file created (SQLite)."""
    if url.kind == "memory":
        return _MemoryEngine()
    if url.kind == "sqlite":
        sqlite_engine = _SqliteEngine(Path(url.target))
        await sqlite_engine.wal()
        return sqlite_engine
    try:
        postgres_engine = _PostgresEngine(url)
    except ImportError:
        raise StoreError(
            "a PostgreSQL store needs psycopg and psycopg_pool: pip install 'host-receiver[postgres]'"
        ) from None
    await postgres_engine.open()
    return postgres_engine
