"""The live oracle: crash isolation, timeouts, load errors, and agreement of the two backends."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.builds.vocabs import shipped_vocabs, vocab_name
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.outcome import MODES, Refusal, RefusalKind
from tokconf.core.timeouts import Wait
from tokconf.corpus.files import load_corpus
from tokconf.corpus.generator import SplitMix64
from tokconf.oracles.libllama import binding
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.oracles.llama_tokenize import CliOracle
from tokconf.recording.crosscheck import Answer, Evidence, compare, crosscheck_vocab, load_evidence
from tokconf.recording.crosscheck import sample as crosscheck_sample
from tokconf.recording.format import load
from tokconf.recording.recorder import Plan, all_cases

ROOT = Path(__file__).resolve().parent.parent
CRASH = bytes.fromhex("f4908080")  # U+110000: b11192 throws std::invalid_argument and aborts


def _vocab(build: Build, name: str) -> Path:
    return build.models_dir / f"ggml-vocab-{name}.gguf"


def test_an_aborting_input_is_a_refusal_and_the_next_input_still_works(llama_build: Build) -> None:
    with LibllamaOracle(llama_build, _vocab(llama_build, "qwen2")) as oracle:
        assert oracle.tokenize(b"Hello world", False, False) == [9707, 1879]
        assert oracle.tokenize(CRASH, False, False) == Refusal(
            "abort: uncaught std::invalid_argument: invalid codepoint"
        )
        assert oracle.tokenize(b"Hello world", False, False) == [9707, 1879]
        assert (oracle.crashes, oracle.restarts) == (1, 0)  # the fork server absorbed it


def test_a_hanging_worker_is_killed_and_reported(llama_build: Build) -> None:
    with LibllamaOracle(llama_build, _vocab(llama_build, "bert-bge"), timeout=60) as oracle:
        oracle.answer_wait = Wait(1e-4, None)  # far below the time to tokenize 2 MB
        outcome = oracle.tokenize(b"word " * 400_000, False, False)
        assert isinstance(outcome, Refusal) and outcome.reason == "hang: no answer within 0.0001 s"
        assert outcome.kind is RefusalKind.BROKEN  # never llama.cpp's answer
        oracle.answer_wait = Wait(60, None)
        assert oracle.tokenize(b"hello", False, False) == [7592]


def test_a_truncated_vocab_is_a_clear_error(llama_build: Build, tmp_path: Path) -> None:
    broken = tmp_path / "truncated.gguf"
    broken.write_bytes(_vocab(llama_build, "qwen2").read_bytes()[:5000])
    with pytest.raises(TokconfError, match=r"could not load .*truncated.gguf"):
        LibllamaOracle(llama_build, broken)


def test_the_cli_refuses_the_aborting_input_too(llama_full_build: Build) -> None:
    cli = CliOracle(llama_full_build, _vocab(llama_full_build, "qwen2"), add_bos=False)
    assert cli.tokenize(CRASH, False, False) == Refusal("abort: uncaught std::invalid_argument: invalid codepoint")
    assert cli.tokenize(b"<|im_start|>x", False, True) == [151644, 87]


def test_cli_cannot_express_add_special_without_bos() -> None:
    cli = CliOracle.__new__(CliOracle)
    cli.add_bos = False
    assert not cli.expresses(True, True)
    assert cli.expresses(False, True)


SHIPPED = sorted(p.stem for p in (ROOT / "recordings" / "b11192").glob("*.yaml") if ".decoding" not in p.name)


EVIDENCE = ROOT / "recordings" / "b11192" / "llama-tokenize.crosscheck.json"
LIVE_CLI = ("gpt-2", "llama-spm")  # llama-tokenize run live: a vocab without BOS and one with (both flag paths)


@pytest.fixture(scope="module")
def evidence() -> Evidence:
    return load_evidence(EVIDENCE)


def test_the_backends_are_compared_on_every_shipped_vocab(llama_build: Build, evidence: Evidence) -> None:
    assert [vocab_name(v) for v in shipped_vocabs(llama_build)] == SHIPPED and len(SHIPPED) == 19
    assert sorted(evidence.vocabs) == SHIPPED
    assert (evidence.build, evidence.build_sha256) == (11192, llama_build.source.sha256)
    assert (evidence.sample, evidence.seed) == (4, 11192)


SAMPLE = 60  # recorded cases per vocab re-asked of the live oracle


@pytest.mark.conformance
@pytest.mark.parametrize("name", SHIPPED)  # one item each, so xdist spreads the vocab loads
def test_a_sample_re_recorded_live_is_identical_and_both_backends_agree(
    name: str, llama_full_build: Build, tmp_path: Path, evidence: Evidence
) -> None:
    """One libllama worker per vocab (gemma-4's takes a second to load) answers both: the recording
    re-asked (its aborting input and a random sample, facts included), and the backend cross-check:
    llama-tokenize's answers at this build for the sample `crosscheck.sample` picks, kept in
    EVIDENCE and produced again live for LIVE_CLI (llama-tokenize reloads the vocab for every
    input: gemma-4's 12 take 15 s)."""
    recording = load(ROOT / "recordings" / "b11192" / f"{name}.yaml")
    vocab = llama_full_build.models_dir / recording.provenance["vocab"]["file"]
    rng = SplitMix64(int(recording.vocab_sha256[:8], 16))
    crash = [c for c in recording.cases if c.id == "invalid-utf8/above-max-f4-90"]
    sample = crash + [recording.cases[rng.below(len(recording.cases))] for _ in range(SAMPLE)]
    kept = evidence.vocabs[name]
    plan = Plan(llama_full_build, tuple(load_corpus([ROOT / "corpora"])), evidence.seed, 2000, tmp_path)
    recorded = {c.id: c for c in recording.cases}
    with LibllamaOracle(llama_full_build, vocab) as oracle:
        facts = oracle.facts()
        live = oracle.tokenize_many([(c.data, *MODES[m]) for c in sample for m in MODES])
        picked = [c.id for c in crosscheck_sample(all_cases(plan, vocab, facts), evidence.sample, plan.seed)]
        worker = oracle.tokenize_many([(recorded[a.case].data, *MODES[a.mode]) for a in kept.answers])
        again = crosscheck_vocab(plan, llama_full_build, vocab, evidence.sample, oracle) if name in LIVE_CLI else None
    assert facts == recording.facts
    assert live == [c.outcomes[m] for c in sample for m in MODES]
    assert kept.sha256 == recording.vocab_sha256 and kept.file == vocab.name
    expressed = ["plain", "special", "bos"] if facts["add_bos"] else ["plain", "special"]
    assert [(a.case, a.mode) for a in kept.answers] == [(c, m) for c in picked for m in expressed]
    assert len(kept.answers) >= 8 and compare(name, kept.answers, worker) == []
    assert compare(name, kept.answers, [recorded[a.case].outcomes[a.mode] for a in kept.answers]) == []
    if again is not None:  # llama-tokenize, live, answers as it did when the evidence was written
        assert again.answers == kept.answers and again.disagreements == []


def test_a_cross_check_sample_holds_k_distinct_cases_the_first_among_them() -> None:
    """A draw that repeats a case is drawn again (falcon's sample of 4 once held 3 after the corpus grew)."""
    cases = list(range(10))
    for seed in range(300):
        picked = crosscheck_sample(cases, 4, seed)  # type: ignore[arg-type]
        assert len(set(picked)) == 4 and picked[0] == 0 and picked == sorted(picked)
    assert crosscheck_sample(cases[:2], 4, 1) == [0, 1]  # type: ignore[arg-type]


def test_record_backend_cli_save_writes_the_bundled_evidence(
    llama_full_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], evidence: Evidence
) -> None:
    """The command that wrote EVIDENCE writes the same answers again (llama-spm: cheap to load)."""
    saved = tmp_path / "answers.json"
    assert main(["record", "--backend", "cli", "--sample", "4", "--vocab", "llama-spm", "--save", str(saved)]) == 0
    assert "llama-spm: 12/12 answers agree" in capsys.readouterr().out
    again, bundled = load_evidence(saved), evidence
    assert again.vocabs == {"llama-spm": bundled.vocabs["llama-spm"]}
    assert (again.build, again.build_sha256, again.sample, again.seed) == (
        bundled.build, bundled.build_sha256, bundled.sample, bundled.seed,
    )  # fmt: skip
    assert main(["record", "--vocab", "llama-spm", "--save", str(saved)]) == 2  # answers need --backend cli
    assert "--save keeps llama-tokenize's answers: it needs --backend cli" in capsys.readouterr().err


@pytest.mark.parametrize(
    "damage",
    [lambda text: text[: len(text) // 2], lambda text: text.replace('"ids": [', '"ids": [true, ', 1),
     lambda text: text.replace('"mode": "plain"', '"mode": "loud"', 1),
     lambda text: text.replace("crosscheck/1", "x/9")],
    ids=["truncated", "an-id-not-an-int", "unknown-mode", "other-schema"],
)  # fmt: skip
def test_damaged_evidence_is_refused_with_its_path(damage: Callable[[str], str], tmp_path: Path) -> None:
    damaged = tmp_path / "answers.json"
    damaged.write_text(damage(EVIDENCE.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(TokconfError, match=f"{damaged}: not a tokconf cross-check file"):
        load_evidence(damaged)
    with pytest.raises(TokconfError, match=f"{tmp_path / 'gone.json'}: cannot read: No such file"):
        load_evidence(tmp_path / "gone.json")


def test_a_batch_with_an_aborting_input_is_answered_one_by_one(llama_build: Build) -> None:
    with LibllamaOracle(llama_build, _vocab(llama_build, "gpt-2")) as oracle:
        single = [oracle.tokenize(data, False, False) for data in (b"a", b"b c", b"")]
        batch = oracle.tokenize_many([(b"a", False, False), (CRASH, False, False), (b"b c", True, True), (b"", 0, 0)])
        assert batch[0] == single[0] and batch[2] == single[1] and batch[3] == single[2] == []
        assert isinstance(batch[1], Refusal) and "invalid codepoint" in batch[1].reason
        assert oracle.crashes == 1


def test_pieces_llama_cpp_could_not_list_are_an_error_naming_why(
    llama_build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker answers `P` with every piece (lengths first), or with why it could not: that is an
    error saying so, never a list of pieces read out of the reason's bytes."""
    with LibllamaOracle(llama_build, _vocab(llama_build, "gpt-2")) as oracle:
        pieces = oracle.pieces(special=True)
        assert len(pieces) == 50257 and pieces[50256] == b"<|endoftext|>" and pieces[64] == b"a"
        monkeypatch.setattr(
            oracle, "_request", lambda payload: b"Xabort: uncaught std::out_of_range: unordered_map::at"
        )
        with pytest.raises(TokconfError, match=r"failed listing the pieces of .*: abort: uncaught std::out_of_range"):
            oracle.pieces(special=True)


def test_a_signal_during_a_large_request_does_not_cut_it_short(llama_build: Build) -> None:
    """A signal with a handler (a timer, a profiler's, pytest-timeout's) that arrives while a request
    larger than the pipe is being written makes write() return early, having written part of it. The
    oracle writes the rest: the worker would otherwise wait for the rest of the frame and the oracle for
    its answer until the timeout, then kill it and ask again input by input (seen under py-spy, where
    a 600 s timeout stalled a test for ten minutes)."""
    texts = [b"Hello world, " * 4_000 + bytes([65 + i % 26]) for i in range(64)]  # 3.3 MB in all
    with LibllamaOracle(llama_build, _vocab(llama_build, "gpt-2"), timeout=20) as oracle:
        alone = oracle.tokenize_many([(text, False, False) for text in texts])
        assert all(isinstance(ids, list) for ids in alone)
        previous = signal.signal(signal.SIGALRM, lambda *_: None)
        timer = signal.setitimer(signal.ITIMER_REAL, 1e-4, 1e-4)
        try:
            interrupted = oracle.tokenize_many([(text, False, False) for text in texts])
        finally:
            signal.setitimer(signal.ITIMER_REAL, *timer)  # whatever timer ran before (pytest-timeout's)
            signal.signal(signal.SIGALRM, previous)
        assert interrupted == alone
        assert (oracle.restarts, oracle.crashes) == (0, 0)  # not answered by retrying after a hang


def test_a_request_the_pipe_takes_in_pieces_is_written_whole(
    llama_build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every write takes at most 1,000 bytes, as a write() a signal ends early does: the deterministic
    form of the test above (whether a timer lands mid-write depends on the machine)."""
    texts = [b"Hello world, " * 400 + bytes([65 + i % 26]) for i in range(16)]
    with LibllamaOracle(llama_build, _vocab(llama_build, "gpt-2"), timeout=20) as oracle:
        alone = oracle.tokenize_many([(text, False, False) for text in texts])
        assert oracle._program is not None
        stdin = oracle._program.proc.stdin
        assert stdin is not None
        pieces: list[int] = []
        write = os.write

        def trickle(fd: int, data: bytes) -> int:
            if fd != stdin.fileno():
                return write(fd, data)
            pieces.append(write(fd, bytes(data[:1000])))
            return pieces[-1]

        monkeypatch.setattr(os, "write", trickle)
        assert oracle.tokenize_many([(text, False, False) for text in texts]) == alone
        assert oracle.pieces(special=True)[50256] == b"<|endoftext|>"  # the next request still lines up
        assert (oracle.restarts, oracle.crashes) == (0, 0)
        assert len(pieces) > 80 and max(pieces) == 1000  # the 83 kB request went in pieces


def test_the_parsed_binding_is_kept_and_reused(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path))
    ffi = binding(llama_build.llama_h, llama_build.include_dirs)
    (kept,) = (tmp_path / "cffi").glob("_tokconf_llama_*.py")
    written = kept.stat().st_mtime_ns
    again = binding(llama_build.llama_h, llama_build.include_dirs)
    assert kept.stat().st_mtime_ns == written and list((tmp_path / "cffi").glob("*.py")) == [kept]
    assert ffi.sizeof("llama_token") == again.sizeof("llama_token") == 4


def test_a_hang_or_an_answer_over_the_bound_never_agrees_with_a_refusal() -> None:
    """The backends' cross-check: two refusals agree whatever their words, but a BROKEN answer
    (llama-tokenize past its deadline, the worker's answer over the bound) is no answer of llama.cpp's."""
    refused, hung = Refusal("abort: one"), Refusal("hang: no answer within 1 s", RefusalKind.BROKEN)
    answers = [Answer("a", "plain", Refusal("abort: two")), Answer("b", "plain", hung), Answer("c", "plain", [1])]
    disagreements = compare("v", answers, [refused, refused, [1]])
    assert [d.case for d in disagreements] == ["b"]
