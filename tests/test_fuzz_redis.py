"""Many machines, one example database: a real `redis-server` on 127.0.0.1 (Debian's package; setup.sh
installs it), shared by campaigns that know nothing else of each other. No mock: a missing server
fails these tests with the command that installs it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from tokconf.builds.build import Build
from tokconf.core.files import sha256_file
from tokconf.fuzz.database import REDIS_PREFIX, hypothesis_key, key
from tokconf.recording.format import load

BUG = "fake_impls:ideographic_space_is_space"
EVERYWHERE = "fake_impls:one_id_too_many"  # a bug every example reaches: see its docstring
SUPPORT = Path(__file__).parent / "support"  # fake_impls
HANG_GUARD = 600  # seconds: a campaign that has not ended by then hangs (each is bounded by its example count)


class RedisServer:
    def __init__(self, tmp: Path) -> None:
        server = shutil.which("redis-server")
        if server is None:
            pytest.fail("redis-server is missing: apt-get install redis-server (setup.sh does)", pytrace=False)
        with socket.socket() as probe:  # a free port
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        argv = [server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen([*argv, "--dir", str(tmp)], stdout=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not start", pytrace=False)
        self.client = client

    def stored(self) -> list[bytes]:
        return sorted(self.client.keys("*"))

    def kill(self) -> None:
        self.client.close()  # its socket, else an unclosed-socket warning at exit
        self.process.kill()
        self.process.wait()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    (tmp_path / "redis").mkdir()
    started = RedisServer(tmp_path / "redis")
    yield started
    started.kill()


def tokconf_fuzz(*args: str, cwd: Path, impl: str = BUG) -> subprocess.Popen[str]:
    argv = [str(Path(sys.executable).with_name("tokconf")), "fuzz", "--impl", impl, *args]
    env = {**os.environ, "PYTHONPATH": str(SUPPORT)}
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=HANG_GUARD)
    return process.returncode, out, err


def test_a_finding_of_worker_a_is_worker_bs_first_example(
    llama_build: Build, server: RedisServer, tmp_path: Path
) -> None:
    for machine in ("a", "b", "c"):
        (tmp_path / machine).mkdir()
    common = ["--vocab", "gpt-2", "--mode", "plain", "--max-examples", "300", "--found-dir", "found"]
    status, out, err = finish(tokconf_fuzz(*common, "--database", server.url, "--seed", "0", cwd=tmp_path / "a"))
    assert status == 1, err
    assert "gpt-2 [plain] different ids (example " in out
    assert server.stored()  # worker A saved its finding in the shared database
    status, out, err = finish(tokconf_fuzz(*common, "--database", server.url, "--seed", "7", cwd=tmp_path / "b"))
    assert status == 1, err
    assert "(replayed from the example database as example 1, seed 7)" in out
    assert [c.data for c in load(tmp_path / "b" / "found" / "found-gpt-2.yaml").cases] == ["\u3000".encode()]
    # read-only under a local folder: replayed from Redis, kept locally, Redis not written
    before = {key: server.client.smembers(key) for key in server.stored()}
    local = ["--database", "db", "--shared-database", server.url, "--seed", "8"]
    status, out, err = finish(tokconf_fuzz(*common, *local, cwd=tmp_path / "c"))
    assert status == 1, err
    assert "(replayed from the example database as example 1, seed 8)" in out
    assert {key: server.client.smembers(key) for key in server.stored()} == before
    assert any((tmp_path / "c" / "db").rglob("*"))


def test_killing_redis_mid_campaign_is_a_clear_error_and_loses_no_finding(
    llama_build: Build, server: RedisServer, tmp_path: Path
) -> None:
    found = tmp_path / "found" / "found-gpt-2.yaml"
    args = ["--vocab", "gpt-2", "--mode", "plain", "--mode", "special", "--max-examples", "30000"]
    process = tokconf_fuzz(*args, "--database", server.url, "--found-dir", "found", "--seed", "0", cwd=tmp_path)
    hang_guard = time.monotonic() + HANG_GUARD
    while not found.exists() and process.poll() is None:  # the campaign ends by itself: its budget is counted
        if time.monotonic() > hang_guard:
            process.kill()
            pytest.fail(f"tokconf fuzz hung: {process.communicate()}")
        time.sleep(0.05)
    assert found.exists(), process.communicate()
    server.kill()  # while the plain target still runs: the special target's replay meets a dead Redis
    status, out, err = finish(process)
    assert status == 2, (out, err)
    assert f"tokconf: error: the example database {server.url} failed to" in err
    assert "ConnectionError" in err and "every finding so far is written to the found folder" in err
    assert "gpt-2 [plain] different ids" in out  # reported as it was found
    assert [c.data for c in load(found).cases] == ["\u3000".encode()]


def test_an_unreachable_database_is_refused_before_any_work(llama_build: Build, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    status, _, err = finish(tokconf_fuzz("--vocab", "gpt-2", "--database", f"redis://127.0.0.1:{port}/0", cwd=tmp_path))
    assert status == 2
    assert f"cannot reach the example database redis://127.0.0.1:{port}/0" in err and "start redis-server" in err
    assert not (tmp_path / "found").exists()


def test_a_poisoned_shared_database_costs_a_campaign_neither_its_new_examples_nor_its_memory(
    llama_build: Build, server: RedisServer, tmp_path: Path
) -> None:
    """One 24 MB entry (it cost 21 s and 730 MB when replay read it whole) and more entries than the
    budget (they left a campaign generating nothing, and exiting 0)."""
    sha = sha256_file(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")
    server.client.sadd(REDIS_PREFIX + key(sha, "plain"), b"x" * (24 << 20), *(b"entry %03d" % n for n in range(300)))
    sent = server.client.info("stats")["total_net_output_bytes"]
    args = ["--vocab", "gpt-2", "--mode", "plain", "--max-examples", "200", "--seed", "3", "--found-dir", "found"]
    status, out, err = finish(tokconf_fuzz(*args, "--database", server.url, cwd=tmp_path, impl="reference"))
    assert status == 0, err
    assert "200 examples (100 replayed, 100 new)" in out  # at most half the budget replayed
    assert "201 database entries skipped (1 over 64 KiB, 200 beyond the replay share)" in out
    assert server.client.info("stats")["total_net_output_bytes"] - sent < 1 << 20  # the 24 MB never left Redis


def test_the_hypothesis_engine_keeps_its_entries_in_redis_and_replays_them_first(
    llama_build: Build, server: RedisServer, tmp_path: Path
) -> None:
    """Over a database hypothesis draws from its own randomness, so the planted bug is one every
    example reaches (`fake_impls.OneIdTooMany`): what is asserted is what the database keeps and
    replays, whatever the draw (a bug 200 random examples may miss failed CI once)."""
    common = ["--vocab", "gpt-2", "--mode", "plain", "--max-examples", "200", "--found-dir", "found"]
    common += ["--engine", "hypothesis", "--database", server.url]
    for machine in ("a", "b"):
        (tmp_path / machine).mkdir()
    status, out, err = finish(tokconf_fuzz(*common, cwd=tmp_path / "a", impl=EVERYWHERE))
    assert status == 1, err
    assert "gpt-2 [plain] different ids (example 1, " in out and "200 examples (0 replayed, 200 new)" in out
    assert "1 distinct failures" in out
    sha = sha256_file(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")
    stored = server.stored()  # the input, for either engine, and hypothesis's own entry
    assert REDIS_PREFIX + key(sha, "plain") in stored and REDIS_PREFIX + hypothesis_key(sha, "plain") in stored
    status, out, err = finish(tokconf_fuzz(*common, cwd=tmp_path / "b", impl=EVERYWHERE))
    assert status == 1, err
    assert "(replayed from the example database as example 1, seed " in out
    assert "200 examples (2 replayed, 198 new)" in out  # the input, then hypothesis's entry
    assert [c.data for c in load(tmp_path / "b" / "found" / "found-gpt-2.yaml").cases] == [b""]
