"""Fuzz campaigns: a deliberately wrong implementation is found and shrunk; a right one is not flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.main import main
from harness.corpus.files import load_corpus_file
from harness.llama.build import Build


def fuzz(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    status = main(["fuzz", *args])
    captured = capsys.readouterr()
    return status, captured.out


def test_a_wrong_whitespace_class_is_found_shrunk_and_kept_as_a_corpus_case(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    status, out = fuzz(
        capsys, "--impl", "fake_impls:ideographic_space_is_space", "--vocab", "qwen2", "--mode", "plain",
        "--profile", "ci", "--no-db", "--found-dir", str(tmp_path), "--seed", "0",
    )  # fmt: skip
    assert status == 1
    assert "qwen2 [plain] different ids" in out and "(U+3000)" in out
    assert "  llama.cpp: >220 '·'" not in out and "'<U+3000>'" in out  # pieces, whitespace visible
    assert (
        "reproduce: tokconf fuzz --impl fake_impls:ideographic_space_is_space --vocab qwen2 --mode plain --seed 0"
        in out
    )
    assert "1 distinct failures" in out
    found = load_corpus_file(tmp_path / "found-qwen2.yaml")
    assert [case.data for case in found.cases] == ["\u3000".encode()]  # shrunk to the one character
    assert 'text: "\\u3000"' in (tmp_path / "found-qwen2.yaml").read_text(encoding="utf-8")  # visible, escaped
    assert "mode plain, seed 0, implementation fake_impls:ideographic_space_is_space" in (found.cases[0].why or "")
    assert list((tmp_path / "cwd").iterdir()) == []  # no stray .hypothesis/ where the campaign ran


def test_the_example_database_replays_a_failure_first(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--impl", "fake_impls:ideographic_space_is_space", "--vocab", "gpt-2", "--mode", "special"]
    args += ["--db", str(tmp_path / "db"), "--found-dir", str(tmp_path / "found")]
    assert fuzz(capsys, *args)[0] == 1
    assert any((tmp_path / "db").rglob("*"))
    status, out = fuzz(capsys, *args)
    assert status == 1 and "1 distinct failures" in out
    assert len(load_corpus_file(tmp_path / "found" / "found-gpt-2.yaml").cases) == 1  # not written twice


def test_llama_cpp_against_itself_finds_nothing(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for vocab in ("llama-spm", "bert-bge"):
        status, out = fuzz(
            capsys, "--impl", "llama.cpp@11192", "--vocab", vocab, "--profile", "dev", "--no-db", "--seed", "1",
            "--found-dir", str(tmp_path),
        )  # fmt: skip
        assert status == 0, out
        assert "600 examples" in out and "0 distinct failures" in out
    assert not list(tmp_path.iterdir())


def test_an_unsupported_vocab_is_reported(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = fuzz(
        capsys, "--impl", "fake_impls:bpe_only", "--vocab", "llama-spm", "--no-db", "--found-dir", str(tmp_path)
    )
    assert status == 0
    assert "unsupported: llama-spm: only BPE vocabularies" in out and "1 unsupported vocabs" in out


def test_a_short_campaign_finds_no_divergence_in_the_reference(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI's campaign: the bundled reference against the live llama.cpp, one vocab of each type it supports."""
    args = ["--impl", "reference", "--profile", "dev", "--seed", "3", "--no-db", "--found-dir", str(tmp_path)]
    for vocab in ("qwen2", "gemma-4", "llama-spm", "bert-bge"):
        args += ["--vocab", vocab]
    status, out = fuzz(capsys, *args)
    assert status == 0, out
    assert "2400 examples" in out and "0 distinct failures" in out
    assert not list(tmp_path.iterdir())
