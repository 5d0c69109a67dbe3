"""Where a campaign keeps the inputs it found, to replay them first next time, on any machine.

The stores are hypothesis's own example databases: a folder (`DirectoryBasedExampleDatabase`), one
Redis server shared by every worker on every machine (`RedisExampleDatabase`, `hypothesis[redis]`),
and a shared one read under a local one (`MultiplexedDatabase(local, ReadOnlyDatabase(shared))`, as
hypothesis documents for a team reading CI's database). A key names a vocabulary by its sha256 and a
mode, so an input found on one machine is replayed on every other, by any implementation; a value is
the minimal input itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    ExampleDatabase,
    InMemoryExampleDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)

from harness.core.errors import TokconfError
from harness.core.outcome import Mode

KEY_PREFIX = b"tokconf-fuzz/1"
REDIS_TIMEOUT = 5.0  # seconds: a Redis that stops answering is an error, never a hang


def open_database(where: str, shared: str = "") -> ExampleStore:
    """`where`: a folder, `redis://HOST:PORT/N`, or "" for none kept; `shared`: the same kinds, read
    only, layered under it."""
    local = _one(where) if where else InMemoryExampleDatabase()
    if not shared:
        return ExampleStore(local, where)
    layered = MultiplexedDatabase(local, ReadOnlyDatabase(_one(shared)))
    return ExampleStore(layered, f"{where or 'memory'} over read-only {shared}")


def _one(where: str) -> ExampleDatabase:
    if not where.startswith("redis://"):
        return DirectoryBasedExampleDatabase(Path(where))
    try:
        import redis
        from hypothesis.extra.redis import RedisExampleDatabase
    except ImportError:
        raise TokconfError(
            f"--database {where} needs the redis client", "pip install 'tokconf[fuzz]' (it brings hypothesis[redis])"
        ) from None
    client = redis.Redis.from_url(where, socket_timeout=REDIS_TIMEOUT, socket_connect_timeout=REDIS_TIMEOUT)
    try:
        client.ping()
    except (redis.RedisError, OSError) as error:
        raise TokconfError(
            f"cannot reach the example database {where}: {error}", "start redis-server there, or give a folder"
        ) from None
    return RedisExampleDatabase(client)


def key(vocab_sha256: str, mode: Mode) -> bytes:
    return b" ".join([KEY_PREFIX, vocab_sha256.encode(), mode.encode()])


class ExampleStore:
    """The database, with its failures as errors that say what to do (a Redis killed mid-campaign
    raises `redis.ConnectionError` from deep inside hypothesis)."""

    def __init__(self, database: ExampleDatabase, name: str) -> None:
        self.database = database
        self.name = name

    def replay(self, vocab_sha256: str, mode: Mode) -> list[bytes]:
        """The inputs found before for this vocabulary and mode, oldest order not guaranteed."""
        try:
            return sorted(self.database.fetch(key(vocab_sha256, mode)))
        except Exception as error:  # the store's own errors: redis, OSError, …
            self._failed("read", error)

    def keep(self, vocab_sha256: str, mode: Mode, data: bytes) -> None:
        try:
            self.database.save(key(vocab_sha256, mode), data)
        except Exception as error:
            self._failed("write", error)

    def _failed(self, what: str, error: Exception) -> NoReturn:
        raise TokconfError(
            f"the example database {self.name} failed to {what}: {type(error).__name__}: {error}",
            "every finding so far is written to the found folder; bring the database back (or use another) and "
            "rerun: it replays what it holds",
        ) from None
