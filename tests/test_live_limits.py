"""A live llama.cpp under test (`llama.cpp@N`, `llama.cpp:PATH`) takes `--timeout` and `--load-timeout`
as a port does, a timeout is never llama.cpp's answer, and every timeout message names the option that
sets it where the run was started (`tokconf check`'s flags, `tokconf.check`'s arguments).

- a load past `--load-timeout` makes every case of the vocabulary an error (it was "llama.cpp refuses
  to load it", a failure against the recording, and the options were ignored: the worker's 60 s);
- an answer past `--timeout` is an error, also where the recording holds llama.cpp's abort (a hang
  there was a refusal, and a refusal agrees with an abort: a hanging build passed);
- `tokconf.check(timeout=...)` names its own argument, not `--timeout`."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import checked
import pytest
import tokconf
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict, judge
from tokconf.core.files import recordings_arg as resolve_recordings
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.core.sandbox import INSTALL, SandboxPolicy
from tokconf.core.timeouts import Wait
from tokconf.oracles.libllama_client import LibllamaOracle, LoadHung
from tokconf.recording.format import load
from tokconf.synth.files import recorded_vocab

ABORTS_HERE = "controls/noncharacters"  # b11192 aborts on it with this vocabulary (its recording says so)
IDS_HERE = "controls/c0-all"
SPM = "bundled/synthetic/variant-spm-no-byte-fallback.yaml"


def test_a_load_past_the_load_timeout_is_an_error_naming_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ["--impl", "llama.cpp@11192", "--vocab", "gpt-2", "--case", "edge/hello-world"]
    done = checked.check(capsys, *args, "--load-timeout", "0.001")
    assert done.status == 1
    assert done.cases and {c.verdict for c in done.cases} == {Verdict.ERROR}
    assert all("llama.cpp did not load" in c.reason for c in done.cases), done.cases[0].reason
    assert all("no answer within 0.001 s (the --load-timeout option)" in c.reason for c in done.cases)
    assert checked.check(capsys, *args).status == 0  # the same check with the default: every case passes


def test_an_answer_past_the_timeout_is_an_error_even_where_llama_cpp_aborts(
    capsys: pytest.CaptureFixture[str], llama_build: Build
) -> None:
    """The worker's first request (the facts) past `--timeout`: the vocabulary's cases are errors, the
    run goes on. A tokenization past it is an error too, where the recording holds llama.cpp's abort."""
    args = ["--impl", "llama.cpp@11192", "--recordings", SPM, "--mode", "plain"]
    args += ["--case", ABORTS_HERE, "--case", IDS_HERE]
    done = checked.check(capsys, *args, "--timeout", "0.000001")
    assert done.status == 1
    verdicts = done.section("plain")
    assert verdicts.keys() == {ABORTS_HERE, IDS_HERE}
    assert {c.verdict for c in verdicts.values()} == {Verdict.ERROR}  # the recorded abort too
    assert all("no answer within 1e-06 s (the --timeout option)" in c.reason for c in verdicts.values())
    assert checked.check(capsys, *args).status == 0  # with time to answer, the abort agrees and the ids pass
    recording = load(resolve_recordings(SPM))
    case = next(c for c in recording.cases if c.id == ABORTS_HERE)
    assert isinstance(case.outcomes["plain"], Refusal)  # llama.cpp's abort, recorded
    with LibllamaOracle(llama_build, recorded_vocab(recording.provenance["vocab"], 11192, None)) as oracle:
        oracle.facts()
        # The worker stopped: its fork server never says that the child serving the request aborted. (A
        # 1 µs timeout alone raced the abort's answer: a client scheduled late found it already there.)
        assert oracle._program is not None
        os.kill(oracle._program.proc.pid, signal.SIGSTOP)
        oracle.answer_wait = Wait(0.5, "--timeout")
        hung = oracle.tokenize(case.data, False, False)
    assert isinstance(hung, Refusal) and hung.kind is RefusalKind.BROKEN, hung
    assert hung.reason == "hang: no answer within 0.5 s (the --timeout option)"
    assert judge(case.outcomes["plain"], hung)[0] is Verdict.ERROR


class _Slow:
    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        time.sleep(30)
        return []


def _slow(path: Path) -> _Slow:
    return _Slow()


def test_the_python_api_names_its_own_arguments() -> None:
    slow = tokconf.check(_slow, vocabs=["gpt-2"], cases=["edge/hello-world"], modes=["plain"], timeout=0.5)
    assert not slow.decision.passed
    assert [r.verdict for r in slow.results if r.section == "plain"] == [Verdict.ERROR]
    assert "no answer within 0.5 s (the tokconf.check timeout= option)" in slow.results[0].reason
    late = tokconf.check("llama.cpp@11192", vocabs=["gpt-2"], cases=["edge/hello-world"], load_timeout=0.001)
    assert not late.decision.passed and {r.verdict for r in late.results} == {Verdict.ERROR}
    assert "(the tokconf.check load_timeout= option)" in late.results[0].reason


def _holding(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_a_sandboxed_llama_cpp_killed_while_it_starts_leaves_no_process(llama_build: Build, tmp_path: Path) -> None:
    """bubblewrap's child waits on an eventfd until its parent has set it up; killed with its parent in
    that window it waited for ever, adopted by init (2 of 25 runs left one; on the old code this fails).
    The worker's whole group is killed now."""
    confiner = SandboxPolicy().confiner()
    if not confiner.sandboxed:
        pytest.fail(f"bubblewrap is needed here ({confiner.reason}): {INSTALL}")
    vocab = tmp_path / "leak-probe-vocab.gguf"
    vocab.write_bytes(b"GGUF")  # never read: the load deadline passes first
    for _ in range(40):
        with pytest.raises(LoadHung):
            LibllamaOracle(llama_build, vocab, load_timeout=1e-9, confiner=confiner)
    deadline = time.monotonic() + 30
    while _holding(str(vocab)) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _holding(str(vocab))
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left
