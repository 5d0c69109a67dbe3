"""Recording end to end on small inputs: modes, facts, stability, resume after an interruption, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokconf.builds import vocabs
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.outcome import Outcome, Refusal, Request
from tokconf.corpus.files import load_corpus_file
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.recording import recorder
from tokconf.recording.format import load
from tokconf.recording.recorder import Plan, record, record_vocab

CORPUS = """theme: t
description: a small corpus for tests
cases:
  - {id: hello, text: "Hello world", why: canonical}
  - {id: chat, text: "<|im_start|>user\\nHi<|im_end|>", why: special texts}
  - {id: crash, bytes_hex: "f4908080", why: aborts b11192}
"""


@pytest.fixture
def plan(llama_build: Build, tmp_path: Path) -> Plan:
    corpus_file = tmp_path / "t.yaml"
    corpus_file.write_text(CORPUS, encoding="utf-8")
    # No decodings: these tests are about the recording (qwen2's decoding of 151,936 pieces takes
    # three quarters of the time); decodings are recorded by the vocab-from-anywhere test below and
    # compared with the bundled ones in tests/test_decoding.py.
    return Plan(llama_build, (load_corpus_file(corpus_file),), 5, 40, tmp_path / "out", decoding=False)


def _qwen2(build: Build) -> Path:
    return build.models_dir / "ggml-vocab-qwen2.gguf"


def test_records_every_mode_with_facts_provenance_and_the_crash_as_an_error(plan: Plan, llama_build: Build) -> None:
    path = record(plan, [_qwen2(llama_build)], jobs=1)[0]
    rec = load(path)
    cases = {c.id: c for c in rec.cases}
    assert cases["t/hello"].outcomes == {"plain": [9707, 1879], "special": [9707, 1879], "bos": [9707, 1879]}
    assert cases["t/chat"].outcomes["plain"][:3] == [27, 91, 318]  # "<", "|", "im": not parsed
    assert cases["t/chat"].outcomes["special"] == [151644, 872, 198, 13048, 151645]
    assert cases["t/crash"].outcomes["plain"] == Refusal("abort: uncaught std::invalid_argument: invalid codepoint")
    assert sum(1 for c in rec.cases if c.id.startswith("fuzz/")) == 40
    assert any(c.id.startswith("llama.cpp/") for c in rec.cases)
    assert any(c.id == "vocab/chat-chatml" for c in rec.cases)
    assert rec.facts["model"] == "gpt2" and rec.facts["pre"] == "qwen2" and rec.facts["add_bos"] is False
    assert 151645 in rec.facts["eog_ids"]
    prov = rec.provenance
    assert prov["llama_cpp"]["build"] == 11192 and prov["llama_cpp"]["sha256"].startswith("4feee620")
    assert prov["vocab"]["file"] == "ggml-vocab-qwen2.gguf" and len(prov["vocab"]["sha256"]) == 64
    assert prov["fuzz"] == {"seed": 5, "generator": 1, "count": 40}
    assert list(prov["corpus"]) == ["t.yaml"]


def test_re_recording_is_byte_identical(plan: Plan, llama_build: Build) -> None:
    path = record_vocab(plan, _qwen2(llama_build))
    first = path.read_bytes()
    assert record_vocab(plan, _qwen2(llama_build)).read_bytes() == first


def test_an_interrupted_recording_resumes_and_loses_nothing(
    plan: Plan, llama_build: Build, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = record_vocab(plan, _qwen2(llama_build)).read_bytes()
    (plan.out_dir / "qwen2.yaml").unlink()
    monkeypatch.setattr(recorder, "JOURNAL_CHUNK", 16)
    real = LibllamaOracle.tokenize_many
    calls = {"n": 0}

    def interrupted(self: LibllamaOracle, requests: list[Request]) -> list[Outcome]:
        calls["n"] += len(requests) > 1  # the recorder's chunks, not the one-by-one retry after a crash
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return real(self, requests)

    monkeypatch.setattr(LibllamaOracle, "tokenize_many", interrupted)
    with pytest.raises(KeyboardInterrupt):
        record_vocab(plan, _qwen2(llama_build))
    journal = plan.out_dir / ".qwen2.journal"
    assert not (plan.out_dir / "qwen2.yaml").exists()
    assert len(journal.read_text().splitlines()) == 1 + 2 * 16  # the key line, two chunks of cases
    with journal.open("a") as handle:
        handle.write('[33,"1 2')  # the line being written when the process died
    monkeypatch.setattr(LibllamaOracle, "tokenize_many", real)
    capsys.readouterr()
    assert record_vocab(plan, _qwen2(llama_build)).read_bytes() == reference
    assert f"{2 * 16} cases resumed from the journal" in capsys.readouterr().err
    assert not journal.exists()


def test_a_journal_for_other_inputs_is_not_replayed(
    plan: Plan, llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = record_vocab(plan, _qwen2(llama_build)).read_bytes()
    journal = plan.out_dir / ".qwen2.journal"
    journal.write_text(json.dumps({"key": "other"}) + "\n" + json.dumps([0, "1", "=", "="]) + "\n")
    assert record_vocab(plan, _qwen2(llama_build)).read_bytes() == reference
    assert "journal not used (it was made for other inputs or cannot be read)" in capsys.readouterr().err


def test_missing_vocab_and_unwritable_output_are_clear_errors(plan: Plan, tmp_path: Path) -> None:
    with pytest.raises(TokconfError, match="does not exist"):
        record_vocab(plan, tmp_path / "nope.gguf")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    bad = Plan(plan.build, plan.corpus, 5, 1, blocker / "sub")
    with pytest.raises(TokconfError, match="is not writable"):
        record(bad, [tmp_path / "nope.gguf"], jobs=1)


def test_cli_record_unknown_vocab_and_bad_corpus(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["record", "--vocab", "no-such-vocab", "--out", str(tmp_path)]) == 2
    assert "unknown vocab 'no-such-vocab'" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases:\n  - {id: a, text: x, why: w}\n  - {id: a, text: y, why: w}\n")
    assert main(["record", "--corpus", str(bad), "--vocab", "qwen2", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: case 'a': duplicate id" in err
    assert not (tmp_path / "o").exists()


def test_vocab_names_are_file_stems() -> None:
    assert vocabs.vocab_name(Path("models/ggml-vocab-gemma-4.gguf")) == "gemma-4"


def test_a_vocab_file_from_anywhere_is_recorded_with_its_decoding(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tokconf record --vocab PATH` on a file outside the build's models/ (a port's own model file),
    run from another folder: the recording and its decoding, written where asked."""
    elsewhere = tmp_path / "models" / "my-model.gguf"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes((llama_build.models_dir / "ggml-vocab-bert-bge.gguf").read_bytes())
    corpus = tmp_path / "t.yaml"
    corpus.write_text(CORPUS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["record", "--vocab", str(elsewhere), "--corpus", str(corpus), "--fuzz-count", "5"]) == 0
    out = tmp_path / "recordings" / "b11192"  # the default output is in the current folder
    assert sorted(p.name for p in out.iterdir()) == ["my-model.decoding.yaml", "my-model.yaml"]
    assert load(out / "my-model.yaml").provenance["vocab"]["file"] == "my-model.gguf"


def test_record_refuses_an_empty_corpus(llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "corpus").mkdir()
    assert main(["record", "--vocab", "qwen2", "--corpus", str(tmp_path / "corpus"), "--out", str(tmp_path)]) == 2
    assert "no corpus cases under" in capsys.readouterr().err
