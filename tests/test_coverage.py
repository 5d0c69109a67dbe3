"""`tokconf coverage`: what llama.cpp knows, read from its own source, against what the recordings
exercise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.core.files import BUNDLED_RECORDINGS
from tokconf.recording.coverage import coverage, known_tokenizers
from tokconf.recording.format import recording_files
from tokconf_reference.tokenizer import PRE_NAMES


def test_what_llama_cpp_knows_is_read_from_its_source(llama_build: Build) -> None:
    known = known_tokenizers(llama_build.build)
    issue = {"llama", "gpt2", "bert", "t5", "rwkv", "plamo2", "gemma4", "hybriddna", "whitespace", "test", "none"}
    assert set(known.models) == issue | {"no_vocab"}
    assert set(known.pre_types) == {name for name in PRE_NAMES if name is not None}  # the reference's 90
    assert known.pre_types["llama-bpe"] == known.pre_types["llama3"] == "LLAMA3"
    assert known.pre_types["qwen2"] == "QWEN2" and known.pre_types["default"] == "DEFAULT"


def test_the_shipped_recordings_cover_five_models_and_twelve_pre_names(llama_build: Build) -> None:
    shipped = [p for p in recording_files([BUNDLED_RECORDINGS]) if p.parent == BUNDLED_RECORDINGS]
    result = coverage(shipped, known_tokenizers(llama_build.build))
    assert {m for m, vocabs in result.models.items() if vocabs} == {"bert", "gemma4", "gpt2", "llama", "t5"}
    assert result.models["llama"] == ["baichuan", "llama-spm", "phi-3"]
    covered = {name for name, vocabs in result.pre_names.items() if vocabs}
    assert covered == {"command-r", "deepseek-coder", "deepseek-llm", "default", "falcon", "gpt-2", "llama-bpe",
                       "mpt", "qwen2", "qwen35", "refact", "starcoder"}  # fmt: skip
    assert result.pre_names["default"] == ["aquila", "gemma-4", "gpt-neox"]  # BPE without a pre name: default
    assert "bert-bge" not in result.pre_names["default"]  # not BPE: llama.cpp reads no pre-tokenizer
    assert result.unknown == {}


def test_with_the_synthetic_ones_every_model_and_pre_name_is_covered(llama_build: Build) -> None:
    """Every tokenizer model that can tokenize (`none` aborts on every input) and all 90 pre names."""
    result = coverage(recording_files([BUNDLED_RECORDINGS]), known_tokenizers(llama_build.build))
    assert [m for m, vocabs in result.models.items() if not vocabs] == ["no_vocab", "none"]
    assert result.models["hybriddna"] == ["model-hybriddna"]
    assert result.models["rwkv"] == ["model-rwkv", "variant-rwkv-nul-tails"]
    assert all(result.pre_names.values()) and len(result.pre_names) == 90
    assert "pre-kimi-k2" in result.pre_names["kimi-k2"]
    assert result.unknown == {}  # pre-glm5 and pre-mmbert: b11192 refuses them, so they exercise nothing


def test_a_name_the_build_does_not_know_is_reported(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "qwen2.yaml"
    shutil.copy(BUNDLED_RECORDINGS / "qwen2.yaml", copy)
    copy.write_text(copy.read_text(encoding="utf-8").replace("pre: qwen2}", "pre: brand-new}", 1), encoding="utf-8")
    assert main(["coverage", "--recordings", str(copy)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "recorded but unknown to b11192: pre brand-new (qwen2)" in out
    assert "tokenizer models known to b11192: 12; recorded: 1" in out
    assert "  not recorded (no recording gates a port of these): bert, gemma4, hybriddna, llama, no_vocab, none, " \
        "plamo2, rwkv, t5, test, whitespace" in out  # fmt: skip
