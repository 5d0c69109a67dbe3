"""Where a campaign keeps the inputs it found, to replay them first next time, on any machine.

The stores are hypothesis's own example databases: a folder (`DirectoryBasedExampleDatabase`), one
Redis server shared by every worker on every machine (`RedisExampleDatabase`, `hypothesis[redis]`),
and a shared one read under a local one (read and never written, as hypothesis's
`MultiplexedDatabase(local, ReadOnlyDatabase(shared))` a team uses to read CI's database). A key names
a vocabulary by its sha256 and a mode, so an input found on one machine is replayed on every other,
by any implementation; a value is the minimal input itself. The `hypothesis` engine also keeps
hypothesis's own entries (choice sequences, which only hypothesis replays) under a key of their own
per vocabulary and mode (`hypothesis_key`), through `HypothesisView`.

A shared database is written by whoever can reach it, so what it holds is not trusted to be small:
replay reads an entry only up to `MAX_ENTRY` bytes (the file's first bytes; in Redis, its length is
measured on the server), and at most a share of the target's budget, counted in entries and in bytes.
What it leaves is counted, never silently dropped.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from ..core.errors import TokconfError
from ..core.outcome import Mode

if TYPE_CHECKING:
    import redis

KEY_PREFIX = b"tokconf-fuzz/1"
REDIS_TIMEOUT = 5.0  # seconds: a Redis that stops answering is an error, never a hang
# The largest input the generator makes is 12 pieces of up to 4 vocabulary words: 48 KiB with the
# 1,024-byte tokens of the largest shipped vocabularies, and a shrunk finding is never larger than
# the input it came from. An entry above this was not written by a campaign.
MAX_ENTRY = 64 << 10
# The bytes replayed per target, whatever the count: a legitimate entry is a minimal input, mostly a
# few bytes, so this holds thousands of them, and a database filled with entries just under
# MAX_ENTRY still costs a campaign seconds, not minutes and gigabytes.
MAX_REPLAY_BYTES = 8 << 20
REDIS_PREFIX = b"hypothesis-example:"  # RedisExampleDatabase's default, named so replay reads its keys
REDIS_EXPIRE = timedelta(days=8)  # RedisExampleDatabase's default: entries live 8 days after their last use
# Entries hypothesis is given per key (its primary entries are one shrunk example per bug; it samples
# a tenth of its budget from the others).
HYPOTHESIS_ENTRIES = 100


@dataclass
class Replay:
    """The entries one target replays, within its share (`max_count` entries, `max_bytes` bytes), and
    how many the database held that it does not replay."""

    max_count: int
    max_bytes: int = MAX_REPLAY_BYTES
    entries: set[bytes] = field(default_factory=set)
    too_large: int = 0  # over MAX_ENTRY (or no regular file): not read beyond that
    beyond_share: int = 0  # within MAX_ENTRY, but the share was spent
    size: int = 0  # bytes in `entries`

    def fits(self, size: int) -> bool:
        return len(self.entries) < self.max_count and self.size + size <= self.max_bytes

    def offer(self, data: bytes | None) -> None:
        """One entry the database holds; None: one larger than MAX_ENTRY. The same input held by two
        layers is replayed once and counted once."""
        if data is None:
            self.too_large += 1
        elif data in self.entries:
            return
        elif self.fits(len(data)):
            self.entries.add(data)
            self.size += len(data)
        else:
            self.beyond_share += 1


class _Source(Protocol):
    @property
    def database(self) -> ExampleDatabase:
        """What a finding is saved to, when this is the local layer."""

    def read(self, key: bytes, replay: Replay) -> None:
        """Offer `replay` what the database holds under `key`, reading at most MAX_ENTRY bytes of each."""


class _Folder:
    """hypothesis's folder database for writing (its layout: a folder per key, a file per value), read
    a file at a time, each only up to MAX_ENTRY bytes."""

    def __init__(self, path: Path) -> None:
        self.database = DirectoryBasedExampleDatabase(path)

    def read(self, key: bytes, replay: Replay) -> None:
        folder = self.database._key_path(key)  # hypothesis's own path for the key
        try:
            names = sorted(os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            return
        for name in names:
            if not replay.fits(0):  # the share is spent: counted, not read
                replay.beyond_share += 1
                continue
            try:
                replay.offer(_head(folder / name))
            except FileNotFoundError:  # removed by another process meanwhile
                continue


def _head(path: Path) -> bytes | None:
    """A file's bytes, or None when it holds more than MAX_ENTRY (or is no regular file: a FIFO would
    block); never more than MAX_ENTRY + 1 bytes are read."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        data = handle.read(MAX_ENTRY + 1)
    return data if len(data) <= MAX_ENTRY else None


# Runs on the Redis server, so an entry over the cap never crosses the network: the entries to replay
# within the share (ARGV: MAX_ENTRY, count, bytes), and the count of those too large and beyond the
# share; the key's expiry is renewed as RedisExampleDatabase.fetch renews it.
_REDIS_READ = """
local cap, count, room = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local kept, too_large, beyond = {}, 0, 0
for _, value in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if #value > cap then too_large = too_large + 1
  elseif #kept < count and #value <= room then kept[#kept + 1] = value; room = room - #value
  else beyond = beyond + 1 end
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {too_large, beyond, kept}
"""


class _Redis:
    """hypothesis's Redis database for writing (its layout: a set per key), read through `_REDIS_READ`."""

    def __init__(self, client: redis.Redis) -> None:
        from hypothesis.extra.redis import RedisExampleDatabase

        self.database = RedisExampleDatabase(client, expire_after=REDIS_EXPIRE, key_prefix=REDIS_PREFIX)
        self.script = client.register_script(_REDIS_READ)

    def read(self, key: bytes, replay: Replay) -> None:
        room = replay.max_bytes - replay.size
        count = replay.max_count - len(replay.entries)
        args = [MAX_ENTRY, count, room, int(REDIS_EXPIRE.total_seconds())]
        too_large, beyond, kept = self.script(keys=[REDIS_PREFIX + key], args=args)
        replay.too_large += int(too_large)
        replay.beyond_share += int(beyond)
        for data in kept:
            replay.offer(bytes(data))


def open_database(where: str, shared: str = "") -> ExampleStore:
    """`where`: a folder, `redis://HOST:PORT/N`, or "" for none kept; `shared`: the same kinds, read
    only, layered under it."""
    local = _one(where) if where else None
    layers: list[_Source] = [layer for layer in (local, _one(shared) if shared else None) if layer is not None]
    name = f"{where} over read-only {shared}" if where and shared else where or f"read-only {shared}"
    return ExampleStore(layers, local.database if local else None, name)


def _one(where: str) -> _Folder | _Redis:
    if not where.startswith("redis://"):
        return _Folder(Path(where))
    try:
        import redis
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
    return _Redis(client)


def key(vocab_sha256: str, mode: Mode) -> bytes:
    return b" ".join([KEY_PREFIX, vocab_sha256.encode(), mode.encode()])


def hypothesis_key(vocab_sha256: str, mode: Mode) -> bytes:
    """Where hypothesis keeps its entries for a vocabulary and mode (it adds `.secondary`, `.pareto`)."""
    return key(vocab_sha256, mode) + b" hypothesis"


class ExampleStore:
    """The layers replay reads (the local database first) and the one it writes, with their failures
    as errors that say what to do (a Redis killed mid-campaign raises `redis.ConnectionError` from deep
    inside hypothesis)."""

    def __init__(self, layers: list[_Source], writer: ExampleDatabase | None, name: str) -> None:
        self.layers = layers
        self.writer = writer
        self.name = name

    def replay(self, vocab_sha256: str, mode: Mode, max_count: int) -> Replay:
        """The inputs found before for this vocabulary and mode, at most `max_count` of them (and
        MAX_REPLAY_BYTES), with the count of those left."""
        return self.read(key(vocab_sha256, mode), max_count)

    def keep(self, vocab_sha256: str, mode: Mode, data: bytes) -> None:
        self.save(key(vocab_sha256, mode), data)

    def read(self, key: bytes, max_count: int) -> Replay:
        """What every layer holds under `key`, within the bounds of `Replay`."""
        replay = Replay(max_count)
        try:
            for layer in self.layers:
                layer.read(key, replay)
        except Exception as error:  # the store's own errors: redis, OSError, …
            self._failed("read", error)
        return replay

    def save(self, key: bytes, value: bytes) -> None:
        self._write(key, value, delete=False)

    def delete(self, key: bytes, value: bytes) -> None:
        self._write(key, value, delete=True)

    def _write(self, key: bytes, value: bytes, delete: bool) -> None:
        if self.writer is None:
            return
        try:
            (self.writer.delete if delete else self.writer.save)(key, value)
        except Exception as error:
            self._failed("write", error)

    def _failed(self, what: str, error: Exception) -> NoReturn:
        raise TokconfError(
            f"the example database {self.name} failed to {what}: {type(error).__name__}: {error}",
            "every finding so far is written to the found folder; bring the database back (or use another) and "
            "rerun: it replays what it holds",
        ) from None


class HypothesisView(ExampleDatabase):
    """The store as the `database` of hypothesis's settings (the `hypothesis` engine's own entries:
    choice sequences, under keys of their own): read through every layer as replay reads (the same
    bounds, so a poisoned shared database costs hypothesis no more than a replay), written to the
    local layer only (a shared layer stays read-only, as under `MultiplexedDatabase(local,
    ReadOnlyDatabase(shared))`), and failing with the store's errors. Without `prune`, hypothesis's
    deletions are ignored: replaying within a share of the budget, an entry it is not given to run
    looks to it as one that no longer fails."""

    def __init__(self, store: ExampleStore, prune: bool = True, max_count: int = HYPOTHESIS_ENTRIES) -> None:
        super().__init__()
        self.store = store
        self.prune = prune
        self.max_count = max_count

    def fetch(self, key: bytes) -> list[bytes]:
        return sorted(self.store.read(key, self.max_count).entries)

    def save(self, key: bytes, value: bytes) -> None:
        self.store.save(key, value)

    def delete(self, key: bytes, value: bytes) -> None:
        if self.prune:
            self.store.delete(key, value)
