"""Everyday hostility, no attacker needed: two commands writing one file at once, a full disk, a cache
setting that names a file. Each ends in one whole file or one clear message, never a mix or a
traceback."""

from __future__ import annotations

import errno
import multiprocessing
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.files import atomic_output, atomic_write, cache_root

WRITERS = 4
CHUNK = 1 << 20


def _write_half_then_wait(path: Path, fill: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    """One writer: half its file, then the rest only once every writer has begun its own."""
    with atomic_output(path, "export", binary=True) as handle:
        handle.write(bytes([fill]) * CHUNK)
        barrier.wait(timeout=120)  # a hang guard: every writer reaches this at once
        handle.write(bytes([fill]) * CHUNK)


def test_concurrent_writers_of_one_path_leave_one_whole_file_and_no_temporary(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(WRITERS)
    target = tmp_path / "all.jsonl"
    writers = [context.Process(target=_write_half_then_wait, args=(target, fill, barrier)) for fill in range(WRITERS)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)  # a hang guard
    assert [writer.exitcode for writer in writers] == [0] * WRITERS  # each one wrote its whole file
    content = target.read_bytes()
    assert content in {bytes([fill]) * (2 * CHUNK) for fill in range(WRITERS)}  # one writer's, byte for byte
    assert os.listdir(tmp_path) == ["all.jsonl"]
    plain = tmp_path / "plain"
    plain.write_bytes(b"")  # the mode open() gives a new file under this umask, not mkstemp's 0600
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)


def test_a_full_disk_keeps_the_old_file_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "all.jsonl"
    target.write_text("the previous export\n", encoding="utf-8")

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(TokconfError) as refused:
        atomic_write(target, "a new export\n" * 1000, "export")
    assert refused.value.problem == (
        f"cannot write export {target}: No space left on device; the previous all.jsonl is left as it was"
    )
    assert refused.value.fix == "free disk space and run the same command again"
    assert target.read_text(encoding="utf-8") == "the previous export\n"
    assert os.listdir(tmp_path) == ["all.jsonl"]


@pytest.mark.parametrize("place", ["a-file", "a-folder-inside-a-file"])
def test_a_cache_setting_that_cannot_be_a_folder_is_one_clear_error(
    place: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("not a folder\n", encoding="utf-8")
    cache = tmp_path / "a-file" if place == "a-file" else tmp_path / "a-file" / "cache"
    monkeypatch.setenv("TOKCONF_CACHE", str(cache))
    for argv in (["llama", "build"], ["record", "--vocab", "gpt-2", "--out", str(tmp_path / "out")]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        reason = "it is a file, not a folder" if place == "a-file" else "Not a directory"
        assert f"tokconf: error: cannot use {cache} (TOKCONF_CACHE) as tokconf's cache folder: {reason}" in err
        assert "what to do: set TOKCONF_CACHE to a folder tokconf may create and write" in err
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "not a folder\n"


def test_a_device_fifo_or_symlink_output_is_written_in_place_never_replaced(tmp_path: Path) -> None:
    """`--junit /dev/null` as root once replaced the machine's null device with a regular file (the
    atomic rename landed on it): a device or FIFO is a stream to write, a symlink's target the file."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so opening the FIFO to write cannot block
    atomic_write(fifo, "through the pipe\n", "verdict file")
    assert os.read(reader, 100) == b"through the pipe\n"
    os.close(reader)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    target = tmp_path / "real.json"
    target.write_text("old\n", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    atomic_write(link, "new\n", "verdict file")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "new\n"
    if os.geteuid() == 0:  # a character device of our own, the shape of /dev/null (making one needs root)
        device = tmp_path / "null"
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        atomic_write(device, "discarded\n", "JUnit file")
        assert stat.S_ISCHR(device.lstat().st_mode)
    with pytest.raises(TokconfError) as refused:
        atomic_write(tmp_path, "x", "verdict file")
    assert refused.value.problem == f"cannot write verdict file {tmp_path}: Is a directory"
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["pipe", "real.json", "link.json"] + (["null"] if os.geteuid() == 0 else [])
    )


CACHE = cache_root()  # tokconf's own, read before a test moves TOKCONF_CACHE


def _read_only(cache: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python argv` with `cache` as tokconf's cache, mounted read-only (bubblewrap, as root too, where
    permission bits stop no write): every write below it fails as a CI image's cache does."""
    mount = ["bwrap", "--bind", "/", "/", "--ro-bind", str(cache), str(cache), "--dev", "/dev", "--proc", "/proc"]
    env = {**os.environ, "TOKCONF_CACHE": str(cache)}
    return subprocess.run([*mount, "--", sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)  # fmt: skip


@pytest.mark.oracle
@pytest.mark.usefixtures("llama_build")
def test_a_read_only_cache_serves_what_is_complete_in_it(tmp_path: Path) -> None:
    """A cache made by `tokconf llama build` in a container image, used by a CI user who cannot write it:
    it was refused whole ("cannot use ... as tokconf's cache folder"), complete builds and all. Now it
    serves what is complete (a shipped and a synthetic vocabulary checked against b11192, nothing written
    there: the kernel refuses every write, the `.last-used` stamp a check makes included) and a step
    that must write says so."""
    args = ("-m", "tokconf", "check", "--impl", "llama.cpp@11192", "--vocab", "gpt-2", "--vocab", "pre-hy_v4")
    done = _read_only(CACHE, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith("PASS: ")
    done = _read_only(CACHE, "-m", "tokconf", "llama", "fetch", "--force", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        f"tokconf: error: cannot fetch llama.cpp b11192: tokconf's cache folder {CACHE / 'llama.cpp'} is not "
        "writable (Read-only file system)" in done.stderr
    )
    assert "a read-only cache serves only what is complete in it" in done.stderr


@pytest.mark.oracle
def test_the_libllama_binding_is_made_outside_a_read_only_cache(llama_build: Build, tmp_path: Path) -> None:
    """The cffi module of a llama.h the cache has none for is made in a temporary folder for the process."""
    empty = tmp_path / "cache"
    empty.mkdir()
    script = (
        "import sys; from pathlib import Path; from tokconf.oracles.libllama import binding\n"
        "ffi = binding(Path(sys.argv[1]), tuple(Path(p) for p in sys.argv[2:]))\n"
        "print(ffi.sizeof('llama_token'))\n"
    )
    include = [str(p) for p in llama_build.include_dirs]
    done = _read_only(empty, "-c", script, str(llama_build.llama_h), *include, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "4\n", "")
    assert list(empty.iterdir()) == []
