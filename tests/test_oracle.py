"""The live oracle: crash isolation, timeouts, load errors, and agreement of the two backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import TokconfError
from harness.core.outcome import MODES, Refusal
from harness.corpus.files import load_corpus
from harness.corpus.generator import SplitMix64
from harness.llama.build import Build
from harness.llama.vocabs import shipped_vocabs, vocab_name
from harness.oracle.client import LibllamaOracle
from harness.oracle.libllama import binding
from harness.oracle.llama_tokenize import CliOracle
from harness.record.crosscheck import crosscheck_vocab
from harness.record.recorder import Plan
from harness.recordings.format import load

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
        oracle.timeout = 1e-4  # far below the time to tokenize 2 MB
        outcome = oracle.tokenize(b"word " * 400_000, False, False)
        assert isinstance(outcome, Refusal) and outcome.reason.startswith("hang: no answer within")
        oracle.timeout = 60
        assert oracle.tokenize(b"hello", False, False) == [7592]


def test_a_truncated_vocab_is_a_clear_error(llama_build: Build, tmp_path: Path) -> None:
    broken = tmp_path / "truncated.gguf"
    broken.write_bytes(_vocab(llama_build, "qwen2").read_bytes()[:5000])
    with pytest.raises(TokconfError, match=r"could not load .*truncated.gguf"):
        LibllamaOracle(llama_build, broken)


def test_the_cli_refuses_the_aborting_input_too(llama_build: Build) -> None:
    cli = CliOracle(llama_build, _vocab(llama_build, "qwen2"), add_bos=False)
    assert cli.tokenize(CRASH, False, False) == Refusal("abort: uncaught std::invalid_argument: invalid codepoint")
    assert cli.tokenize(b"<|im_start|>x", False, True) == [151644, 87]


def test_cli_cannot_express_add_special_without_bos() -> None:
    cli = CliOracle.__new__(CliOracle)
    cli.add_bos = False
    assert not cli.expresses(True, True)
    assert cli.expresses(False, True)


SHIPPED = sorted(p.stem for p in (ROOT / "recordings" / "b11192").glob("*.yaml") if ".decoding" not in p.name)


def test_the_backends_are_compared_on_every_shipped_vocab(llama_build: Build) -> None:
    assert [vocab_name(v) for v in shipped_vocabs(llama_build)] == SHIPPED and len(SHIPPED) == 19


SAMPLE = 60  # recorded cases per vocab re-asked of the live oracle


@pytest.mark.parametrize("name", SHIPPED)  # one item each, so xdist spreads the llama-tokenize processes
def test_a_sample_re_recorded_live_is_identical_and_both_backends_agree(
    name: str, llama_build: Build, tmp_path: Path
) -> None:
    """One libllama worker per vocab (gemma-4's takes a second to load) answers both: the recording
    re-asked (its aborting input and a random sample, facts included), and the backend cross-check."""
    recording = load(ROOT / "recordings" / "b11192" / f"{name}.yaml")
    vocab = llama_build.models_dir / recording.provenance["vocab"]["file"]
    rng = SplitMix64(int(recording.vocab_sha256[:8], 16))
    crash = [c for c in recording.cases if c.id == "invalid-utf8/above-max-f4-90"]
    sample = crash + [recording.cases[rng.below(len(recording.cases))] for _ in range(SAMPLE)]
    plan = Plan(llama_build, tuple(load_corpus([ROOT / "corpora"])), 11192, 2000, tmp_path)
    with LibllamaOracle(llama_build, vocab) as oracle:
        facts = oracle.facts()
        live = oracle.tokenize_many([(c.data, *MODES[m]) for c in sample for m in MODES])
        compared, disagreements = crosscheck_vocab(plan, llama_build, vocab, 4, oracle)
    assert facts == recording.facts
    assert live == [c.outcomes[m] for c in sample for m in MODES]
    assert compared >= 8 and disagreements == []


def test_a_batch_with_an_aborting_input_is_answered_one_by_one(llama_build: Build) -> None:
    with LibllamaOracle(llama_build, _vocab(llama_build, "gpt-2")) as oracle:
        single = [oracle.tokenize(data, False, False) for data in (b"a", b"b c", b"")]
        batch = oracle.tokenize_many([(b"a", False, False), (CRASH, False, False), (b"b c", True, True), (b"", 0, 0)])
        assert batch[0] == single[0] and batch[2] == single[1] and batch[3] == single[2] == []
        assert isinstance(batch[1], Refusal) and "invalid codepoint" in batch[1].reason
        assert oracle.crashes == 1


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
