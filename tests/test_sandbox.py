"""A port cannot touch the judge (docs/threat-model.md): each way around the process boundary that a
hostile round took (issue 46), taken again as a port or a CI setup would, and each ending in the verdict
the port's answers earn. Every test here passed the port, or left something behind, on tokconf 0.2.0.

The ports are tests/support/sandbox_ports.py; the recordings two small synthetic ones, copied where a port can
reach them (a port that rewrites a recording must find it writable but for the sandbox)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import tokconf
from tokconf.core.files import cache_root
from tokconf.core.sandbox import bwrap_missing
from tokconf.recording.format import load

ROOT = Path(__file__).resolve().parent.parent
SUPPORT = ROOT / "tests" / "support"  # the ports and programs the tests run
SYNTHETIC = ROOT / "recordings" / "b11192" / "synthetic"
FIRST, SECOND = "pre-gemma4", "pre-sarvam-moe"  # checked in this order
TOKCONF = str(Path(sys.executable).with_name("tokconf"))  # the console script, as CI runs it
LOOKS = 100  # times /proc is scanned for a survivor, 50 ms apart


@pytest.fixture(autouse=True)
def _bubblewrap() -> None:
    """These tests prove the sandbox: a machine without it fails them with what to install (setup.sh
    installs bubblewrap), never skips them."""
    if (missing := bwrap_missing()) is not None:
        pytest.fail(missing, pytrace=False)


@pytest.fixture
def recordings(tmp_path: Path) -> Path:
    """The two recordings (which have no decoding beside them), in a folder of the test's own."""
    folder = tmp_path / "recordings"
    folder.mkdir()
    for name in (FIRST, SECOND):
        shutil.copy(SYNTHETIC / f"{name}.yaml", folder / f"{name}.yaml")
    return folder


@pytest.fixture
def marker() -> Iterator[str]:
    """A word no other process's command line holds; every process holding it is killed afterwards."""
    word = f"tokconf-sandbox-{uuid.uuid4().hex}"
    yield word
    for pid in _with(word):
        os.kill(pid, signal.SIGKILL)


def _with(word: str) -> list[int]:
    """The live processes whose command line or environment holds `word` (a zombie's are empty)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if any(word.encode() in (entry / part).read_bytes() for part in ("cmdline", "environ")):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _serving(word: str) -> list[int]:
    """The processes of `_with(word)` that serve a Python port (its worker, or the keeper holding it)."""
    found = []
    for pid in _with(word):
        try:
            if b"tokconf.implementations.command_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def _survivors(word: str) -> list[int]:
    for _ in range(LOOKS):
        if not (alive := _with(word)):
            return []
        time.sleep(0.05)
    return alive


def _env(**extra: str) -> dict[str, str]:
    """The environment a CI job gives `tokconf check`: no PYTHONPATH (the port's worker finds the port in
    the folder the command runs in), and the test's variables for the port."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {**env, "TOKCONF_CACHE": str(cache_root()), **extra}


def _check(impl: str, recordings: Path, json_file: Path, *more: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`tokconf check` as docs/ci.md runs it, in the ports' folder."""
    argv = [TOKCONF, "check", "--impl", impl, "--recordings", str(recordings), "--json", str(json_file), *more]
    return subprocess.run(argv, cwd=SUPPORT, env=_env(**env), capture_output=True, text=True, timeout=600, check=False)


def _verdict(json_file: Path) -> dict[str, object]:
    document: dict[str, object] = json.loads(json_file.read_text(encoding="utf-8"))
    return document


def test_a_port_cannot_write_the_verdict_a_recording_the_cache_or_its_folder(
    recordings: Path, tmp_path: Path, sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A right port that overwrites, on every load, the verdict file, the recording being checked, a
    file in tokconf's cache and one in the folder it runs in, through `tokconf check`, `tokconf.check()`
    and pytest -n 2: it passes (its answers are right), and every file is as it was."""
    verdict = tmp_path / "verdict.json"
    cached = cache_root() / f".sandbox-test-{uuid.uuid4().hex}"
    here = SUPPORT / f".sandbox-test-{uuid.uuid4().hex}"
    recording = recordings / f"{SECOND}.yaml"
    before = recording.read_bytes()
    for made in (cached, here):
        made.write_text("kept\n", encoding="utf-8")
    targets = os.pathsep.join(map(str, (verdict, recording, cached, here)))
    try:
        done = _check("sandbox_ports:writes_everywhere", recordings, verdict, TOKCONF_TEST_TARGETS=targets)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        document = _verdict(verdict)
        assert document["passed"] is True and document["sandbox"] == {"kind": "bwrap", "about": "bubblewrap"}
        monkeypatch.setenv("TOKCONF_TEST_TARGETS", targets)
        run = tokconf.check("sandbox_ports:writes_everywhere", recordings)
        assert run.decision.passed and run.decision.confiner.sandboxed
        sandbox.chdir()
        result = sandbox.runpytest_subprocess(
            "--tokconf-impl", "sandbox_ports:writes_everywhere", "--tokconf-recordings", str(recordings),
            "--tokconf-json", str(verdict), "-n", "2", "-q",
        )  # fmt: skip
        assert result.ret == 0, result.stdout.str()[-2000:]
        assert _verdict(verdict)["passed"] is True
        assert recording.read_bytes() == before
        assert (cached.read_text(encoding="utf-8"), here.read_text(encoding="utf-8")) == ("kept\n", "kept\n")
    finally:
        cached.unlink(missing_ok=True)
        here.unlink(missing_ok=True)


def test_a_port_run_by_root_reaches_neither_the_kernel_settings_nor_a_host_socket(
    recordings: Path, tmp_path: Path
) -> None:
    """Sandboxed, a port that tokconf's user runs as root was root in a fresh /proc: it could open
    `/proc/sys/kernel/core_pattern` for writing (a core-dump program the kernel runs as root on the
    host), connect to any Unix socket on the read-only file system (Docker's, a root tmux's), send to a
    datagram one from a socket pair, and make a user namespace whose capabilities mounted the host's
    cgroups read-write. The port answers wrong where it reaches any: PASS, and the sockets saw no one."""
    path = tmp_path / "host.sock"
    with socket.socket(socket.AF_UNIX) as listener, socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as datagrams:
        listener.bind(str(path))
        listener.listen(8)
        listener.setblocking(False)
        datagrams.bind(f"{path}.dgram")
        datagrams.setblocking(False)
        done = _check("sandbox_ports:reaches_the_host", recordings, tmp_path / "v.json", TOKCONF_TEST_SOCKET=str(path))
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        with pytest.raises(BlockingIOError):
            listener.accept()
        with pytest.raises(BlockingIOError):
            datagrams.recv(16)
    assert _verdict(tmp_path / "v.json")["sandbox"] == {"kind": "bwrap", "about": "bubblewrap"}


def test_a_kept_port_cannot_trace_the_judge(recordings: Path, tmp_path: Path) -> None:
    """Kept (`--sandbox off`), a port of the judge's user (root here) could attach to the judge with
    ptrace, or write its `/proc/PID/mem`, and run code in it that passed a port wrong everywhere. The
    judge is not dumpable, and a root port has no `CAP_SYS_PTRACE`: the port answers wrong where it can
    open the judge's memory, and passes."""
    done = _check("sandbox_ports:traces_the_judge", recordings, tmp_path / "v.json", "--sandbox", "off")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "NOT SANDBOXED (--sandbox off)" in done.stdout.splitlines()[-1]


def test_a_port_rewriting_the_next_recording_does_not_pass(recordings: Path, tmp_path: Path) -> None:
    """A port right on the first vocabulary and wrong on the second rewrote and re-sealed the second's
    recording while the first was checked, and passed. Sandboxed, it cannot write it: FAIL, the file
    untouched. Kept (`--sandbox off`), it can: the file no longer has the bytes hashed when the run
    began, and the run ends in an error saying so, never a verdict on the rewritten file."""
    second = recordings / f"{SECOND}.yaml"
    before = second.read_bytes()
    verdict = tmp_path / "verdict.json"
    impl = "sandbox_ports:rewrites_the_next_recording"
    done = _check(impl, recordings, verdict, TOKCONF_TEST_RECORDING=str(second))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert _verdict(verdict)["passed"] is False
    assert done.stdout.splitlines()[-1].startswith("FAIL: ") and f"{SECOND} plain" in done.stdout
    assert second.read_bytes() == before
    done = _check(impl, recordings, verdict, "--sandbox", "off", TOKCONF_TEST_RECORDING=str(second))
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{second} changed during the run" in done.stderr
    assert _verdict(verdict)["passed"] is False
    assert second.read_bytes() != before  # it did rewrite it: the run refused to judge it
    assert len(load(second).cases) == len(load(SYNTHETIC / f"{SECOND}.yaml").cases)


def test_a_port_pointing_the_next_recordings_link_at_a_forged_file_does_not_pass(
    recordings: Path, tmp_path: Path
) -> None:
    """Kept, the same port where the recording is a link (a checkout's recordings often are): it leaves
    the pinned file alone and points the link at a forged one. The link's path is pinned as well as its
    file: the run ends in an error, never a verdict on the forged file."""
    second = recordings / f"{SECOND}.yaml"
    real = tmp_path / "real" / second.name
    real.parent.mkdir()
    second.rename(real)
    second.symlink_to(real)
    verdict = tmp_path / "verdict.json"
    done = _check("sandbox_ports:rewrites_the_next_recording", recordings, verdict, "--sandbox", "off",
                  TOKCONF_TEST_RECORDING=str(second))  # fmt: skip
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{second} changed during the run" in done.stderr
    assert second.resolve() != real  # it did swap the link: the run refused to judge what it leads to


@pytest.mark.conformance
def test_a_port_rewriting_the_next_recording_fails_the_api_and_pytest_too(
    recordings: Path, tmp_path: Path, sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same port through `tokconf.check()` and pytest -n 2: sandboxed, it cannot write the recording,
    and fails."""
    second = recordings / f"{SECOND}.yaml"
    before = second.read_bytes()
    monkeypatch.setenv("TOKCONF_TEST_RECORDING", str(second))
    run = tokconf.check("sandbox_ports:rewrites_the_next_recording", recordings)
    assert not run.decision.passed and {r.vocab for r in run.results if r.verdict.is_problem} == {SECOND}
    sandbox.chdir()
    result = sandbox.runpytest_subprocess(
        "--tokconf-impl", "sandbox_ports:rewrites_the_next_recording", "--tokconf-recordings", str(recordings),
        "-n", "2", "-q",
    )  # fmt: skip
    assert result.ret == 1
    assert second.read_bytes() == before


def test_a_kept_port_forging_what_the_interleaving_check_reads_fails_under_xdist(
    recordings: Path, sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port with a module-global "current vocabulary", right on each vocabulary alone, rewrote the
    first recording while the second was checked (kept, `--tokconf-sandbox off`) to hold what the
    shared process answers. pytest -n 2's controller read it unpinned for the interleaving check, and
    the run passed. The controller pins what the run judges before its workers start: FAIL, saying
    the file changed."""
    first = recordings / f"{FIRST}.yaml"
    before = first.read_bytes()
    monkeypatch.setenv("TOKCONF_TEST_RECORDING", str(first))
    sandbox.chdir()
    result = sandbox.runpytest_subprocess(
        "--tokconf-impl", "sandbox_ports:forges_what_the_interleaving_check_reads", "--tokconf-recordings",
        str(recordings), "--tokconf-sandbox", "off", "-n", "2", "-q",
    )  # fmt: skip
    assert result.ret == 1
    assert first.read_bytes() != before  # it did rewrite it
    result.stdout.fnmatch_lines([f"fail: the interleaving check could not run: {first} changed during the run*"])
    assert result.parseoutcomes().get("failed", 0) == 0  # right on each vocabulary alone


@pytest.mark.parametrize("mode", ["auto", "off"])
def test_a_daemon_the_port_starts_does_not_outlive_the_run(
    mode: str, recordings: Path, tmp_path: Path, marker: str
) -> None:
    """A wrong port whose daemon (`setsid`) rewrote `--json` to `"passed": true` three seconds after
    tokconf exited 1. In the sandbox the daemon dies with its PID namespace; kept, its keeper kills it:
    either way nothing of it is left when tokconf exits, and the verdict file stays as tokconf wrote it."""
    verdict = tmp_path / "verdict.json"
    done = _check("sandbox_ports:starts_a_daemon", recordings, verdict, "--sandbox", mode,
                  TOKCONF_TEST_DAEMON=f"{marker}:{verdict}")  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert _with(marker) == []  # gone the moment tokconf exits
    time.sleep(4)
    assert _verdict(verdict)["passed"] is False
    kind = "bwrap" if mode == "auto" else "kept"
    assert _verdict(verdict)["sandbox"]["kind"] == kind  # type: ignore[index]
    if mode == "off":
        assert "NOT SANDBOXED (--sandbox off)" in done.stdout.splitlines()[-1]


def test_a_daemon_whose_port_killed_its_keeper_does_not_outlive_the_run(
    recordings: Path, tmp_path: Path, marker: str
) -> None:
    """Kept (`--sandbox off`), a port that SIGKILLs its keeper once its daemon runs: the daemon was
    adopted by init and rewrote the verdict file after tokconf exited. The judge adopts it instead and
    ends it before any output is written."""
    verdict = tmp_path / "verdict.json"
    done = _check("sandbox_ports:starts_a_daemon_and_kills_its_keeper", recordings, verdict, "--sandbox", "off",
                  TOKCONF_TEST_DAEMON=f"{marker}:{verdict}")  # fmt: skip
    assert done.returncode in (1, 2), done.stdout[-2000:] + done.stderr[-2000:]
    assert _with(marker) == []
    time.sleep(4)
    assert not verdict.exists() or _verdict(verdict)["passed"] is False


def test_a_grant_over_what_the_judge_reads_or_writes_is_refused(recordings: Path, tmp_path: Path) -> None:
    """`--sandbox-write` over the folder of `--json` let a port put a FIFO or a link where the verdict
    goes; over the recordings or tokconf's cache, rewrite what it is judged by; one grant inside another
    let a port rename the inner's mount point and link its path to the outputs' folder, bound read-write
    for the next vocabulary's port. Each is refused before any port starts, saying what to grant
    instead; a folder of the port's own is granted."""
    own = tmp_path / "own"
    own.mkdir()
    verdict = tmp_path / "out" / "verdict.json"
    verdict.parent.mkdir()
    for folder in (verdict.parent, recordings, cache_root()):
        done = _check("sandbox_ports:wrong", recordings, verdict, "--sandbox-write", str(folder))
        assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
        assert f"tokconf: error: --sandbox-write {folder}: the port could write" in done.stderr
        assert "grant a folder of the port's own" in done.stderr and _verdict(verdict)["passed"] is False
    with pytest.raises(tokconf.TokconfError, match="the port could write"):
        tokconf.check("sandbox_ports:wrong", recordings, sandbox_write=[recordings])
    (own / "inner").mkdir()  # the outer grant could move the inner's mount point, and link its path anywhere
    done = _check("sandbox_ports:wrong", recordings, verdict, "--sandbox-write", str(own), "--sandbox-write",
                  str(own / "inner"))  # fmt: skip
    assert done.returncode == 2 and f"--sandbox-write {own} and {own / 'inner'}: one holds the other" in done.stderr
    done = _check("sandbox_ports:wrong", recordings, verdict, "--sandbox-write", str(own))
    assert done.returncode == 1 and _verdict(verdict)["sandbox"]["about"] == f"bubblewrap (granted: writes {own})"  # type: ignore[index]


@pytest.mark.conformance
def test_a_daemon_started_under_the_api_or_pytest_does_not_outlive_the_run(
    recordings: Path, tmp_path: Path, marker: str, sandbox: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same daemon, from a port checked by `tokconf.check()` and by pytest -n 2."""
    verdict = tmp_path / "verdict.json"
    monkeypatch.setenv("TOKCONF_TEST_DAEMON", f"{marker}:{verdict}")
    run = tokconf.check("sandbox_ports:starts_a_daemon", recordings)
    assert not run.decision.passed
    assert _survivors(marker) == []
    sandbox.chdir()
    result = sandbox.runpytest_subprocess(
        "--tokconf-impl", "sandbox_ports:starts_a_daemon", "--tokconf-recordings", str(recordings),
        "--tokconf-json", str(verdict), "-n", "2", "-q",
    )  # fmt: skip
    assert result.ret == 1
    assert _with(marker) == []
    time.sleep(4)
    assert _verdict(verdict)["passed"] is False


@pytest.mark.parametrize("mode", ["auto", "off"])
@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_ending_tokconf_ends_every_port_process(
    ending: signal.Signals, mode: str, recordings: Path, tmp_path: Path, marker: str
) -> None:
    """After SIGTERM to tokconf (a CI job cancelled), the port's worker was still running. Now tokconf
    ends it, exits 143, and the verdict file says the run did not finish; after SIGKILL, which tokconf
    cannot act on, the port dies with its parent all the same (bubblewrap's `--die-with-parent`, the
    keeper's `PR_SET_PDEATHSIG`). (Every process of the run holds `marker` in its environment.)"""
    verdict = tmp_path / "verdict.json"
    argv = [TOKCONF, "check", "--impl", "sandbox_ports:hangs", "--recordings", str(recordings)]
    argv += ["--json", str(verdict), "--timeout", "600", "--sandbox", mode]
    env = _env(TOKCONF_TEST_MARKER=marker)
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with subprocess.Popen(argv, cwd=SUPPORT, env=env, **pipes) as process:  # its pipes closed, even on a failure
        try:  # the port's worker is up (it hangs on its first input): at once when idle, 10 minutes at most
            for _ in range(12000):  # (not any process: the judge's first bubblewrap, a probe, comes and goes)
                if _serving(marker):
                    break
                time.sleep(0.05)
            assert _serving(marker), "the port never started"
            os.kill(process.pid, ending)
            _, err = process.communicate(timeout=60)
        finally:
            process.kill()
    if ending == signal.SIGTERM:
        assert process.returncode == 128 + signal.SIGTERM, err[-2000:]
        assert "tokconf: terminated (SIGTERM): no verdict" in err
    else:
        assert process.returncode == -signal.SIGKILL
    assert _survivors(marker) == []
    assert _verdict(verdict)["passed"] is False


def _wrong_port_folder(folder: Path) -> Path:
    """A port's repository: the wrong port as `badport:load`, beside start-up files a port can ship
    there: a `sitecustomize.py` and a `tokconf.py`, each of which, run in tokconf's process, would pass
    it (the one patches the contract, the other prints a PASS and exits 0)."""
    folder.mkdir()
    (folder / "badport.py").write_text(BADPORT, encoding="utf-8")
    (folder / "sitecustomize.py").write_text(PATCH, encoding="utf-8")
    (folder / "tokconf.py").write_text('print("PASS: forged by tokconf.py"); raise SystemExit(0)\n', encoding="utf-8")
    return folder


BADPORT = """
from tokconf.implementations.reference import ReferencePort, from_gguf

class Wrong(ReferencePort):
    def encode(self, data, add_special, parse_special):
        ids = super().encode(data, add_special, parse_special)
        return ids[:-1] if len(data) >= 4 else ids

def load(path):
    return Wrong(from_gguf(path).tokenizer)
"""

# What a `.pth` line or a `sitecustomize` runs, in whatever process Python starts: the verdict contract
# patched to pass every run (as a coverage tool's start-up hook could, by accident, patch anything).
PATCH = """
import dataclasses, sys
try:
    import tokconf.checking.contract as contract
    real = contract.decide
    contract.decide = lambda *a, **k: dataclasses.replace(real(*a, **k), passed=True, reasons=())
except Exception as error:
    print("start-up patch failed:", error, file=sys.stderr)
"""


def test_start_up_files_a_port_ships_cannot_reach_the_judge(recordings: Path, tmp_path: Path) -> None:
    """In the port's folder, `tokconf check` with docs/ci.md's old `PYTHONPATH=.` ran the port's
    `sitecustomize.py` in tokconf's process: PASS for a port wrong everywhere. The judge now starts
    isolated, and the port's worker finds the port in the current folder without `PYTHONPATH`: FAIL,
    exit 1, and the `tokconf.py` there is never run. (With `PYTHONPATH=.`, Python itself would import
    that `tokconf.py` as the command's first step, before any of tokconf's code: docs/threat-model.md.)"""
    port = _wrong_port_folder(tmp_path / "port")
    argv = [TOKCONF, "check", "--impl", "badport:load", "--recordings", str(recordings)]
    done = subprocess.run(argv, cwd=port, env=_env(), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("FAIL: ") and "forged" not in done.stdout
    (port / "tokconf.py").unlink()
    env = _env(PYTHONPATH=".")
    done = subprocess.run(argv, cwd=port, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("FAIL: ")


def test_a_pth_file_in_the_environment_cannot_reach_the_judge(recordings: Path, tmp_path: Path) -> None:
    """The CI job's `pip install .` let a port's wheel drop a `.pth` file that runs in every process of
    the venv: it patched the judge, PASS. Here a venv holding tokconf's packages (linked from this one)
    and such a file: the launcher runs it, the judge (`python -I -S`) never does. FAIL, exit 1."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    [site] = list(venv.glob("lib/python*/site-packages"))
    [ours] = [Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()][:1]
    for entry in ours.iterdir():
        if not (site / entry.name).exists():
            (site / entry.name).symlink_to(entry)
    (site / "zz_port.pth").write_text("import sys; exec(" + repr(PATCH) + ")\n", encoding="utf-8")
    python = venv / "bin" / "python"
    shown = subprocess.run(
        [str(python), "-c", "import tokconf.checking.contract as c; print(c.decide.__name__)"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert shown.stdout.strip() == "<lambda>"  # the .pth file runs in this venv's interpreters
    argv = [str(python), "-m", "tokconf", "check", "--impl", "sandbox_ports:wrong", "--recordings", str(recordings)]
    done = subprocess.run(argv, cwd=SUPPORT, env=_env(), capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert done.stdout.splitlines()[-1].startswith("FAIL: ")


def test_json_to_standard_output_redirected_to_a_log_is_written_into_the_log(recordings: Path, tmp_path: Path) -> None:
    """`--json /dev/stdout` with the output redirected to a log replaced the log with the verdict: the
    table and every line before were lost. Now the verdict is written where the redirect writes, between
    the table and the verdict line, and the log keeps all of it."""
    log = tmp_path / "check.log"
    argv = [TOKCONF, "check", "--impl", "reference", "--recordings", str(recordings), "--json", "/dev/stdout"]
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(argv, cwd=tmp_path, env=_env(), stdout=out, stderr=subprocess.PIPE, text=True,
                              timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    text = log.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[-1].startswith("PASS: ")
    start, end = lines.index("{"), len(lines) - 1 - lines[::-1].index("}")
    assert json.loads("\n".join(lines[start : end + 1]))["verdict_line"] == lines[-1]
    assert "tokconf check: reference against" in "\n".join(lines[:start])  # the table, before it
    assert text.count('"verdict_line"') == 1  # no "unfinished" placeholder written into the stream first


def test_a_hanging_port_behind_a_wrapper_leaves_no_process_run_after_run(tmp_path: Path, marker: str) -> None:
    """`cmd:bash run.sh` whose program hangs left its grandchild running after the run in 4 of 8 tries:
    now none, eight times over, sandboxed and kept."""
    script = tmp_path / "run.sh"
    program = SUPPORT / "cmd_programs.py"
    script.write_text(f'"{sys.executable}" "{program}" hang {marker}\nexit $?\n', encoding="utf-8")
    recording = ROOT / "recordings" / "b11192" / "qwen2.yaml"
    for attempt in range(8):
        mode = "auto" if attempt % 2 else "off"
        argv = [TOKCONF, "check", "--impl", f"cmd:bash {script}", "--recordings", str(recording)]
        argv += ["--case", "edge/hello-world", "--mode", "plain", "--timeout", "1", "--sandbox", mode]
        done = subprocess.run(argv, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        assert _with(marker) == [], (attempt, mode)


def test_without_a_sandbox_the_run_is_kept_and_says_so_or_refuses_when_asked_for_one(
    recordings: Path, tmp_path: Path
) -> None:
    """A machine where bubblewrap is missing, and one where it cannot make a namespace (a kernel with
    unprivileged user namespaces off: here a `bwrap` saying so): `--sandbox auto` runs the port kept,
    and the verdict line and `--json` say NOT SANDBOXED with bwrap's own reason; `--sandbox bwrap`
    refuses to run (exit 2) with what to install."""
    missing = tmp_path / "no-bwrap"
    refusing = tmp_path / "refusing-bwrap"
    for folder in (missing, refusing):
        folder.mkdir()
        for tool in ("sh", "true", "setsid", "sleep"):
            (folder / tool).symlink_to(shutil.which(tool) or tool)
    said = "bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged "
    said += "user namespaces"
    (refusing / "bwrap").write_text(f"#!/bin/sh\necho '{said}' >&2\nexit 1\n", encoding="utf-8")
    (refusing / "bwrap").chmod(0o755)
    verdict = tmp_path / "verdict.json"
    for folder, reason in (
        (missing, "bubblewrap is not installed"),
        (refusing, f"bubblewrap cannot make a sandbox here: {said}"),
    ):
        done = _check("sandbox_ports:wrong", recordings, verdict, PATH=str(folder))
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        last = done.stdout.splitlines()[-1]
        assert last.startswith("FAIL: ") and f"; NOT SANDBOXED ({reason}" in last
        assert _verdict(verdict)["sandbox"]["kind"] == "kept"  # type: ignore[index]
        assert reason in _verdict(verdict)["sandbox"]["about"]  # type: ignore[index]
        done = _check("sandbox_ports:wrong", recordings, verdict, "--sandbox", "bwrap", PATH=str(folder))
        assert done.returncode == 2
        assert f"tokconf: error: --sandbox bwrap: {reason}" in done.stderr and "install bubblewrap" in done.stderr
