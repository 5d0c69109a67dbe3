"""The synthetic vocabularies (tokconf.synth): made byte for byte as recorded, recorded for b11192 and
b11434 by llama.cpp, and matched by the reference in every case, fact and decoding."""

from __future__ import annotations

import struct
from collections import Counter
from pathlib import Path

import pytest
import tokconf.synth.files
import tokconf_reference.hybriddna
from gguf import GGUFReader
from tokconf.builds.build import Build
from tokconf.checking.contract import Standing, Verdict
from tokconf.checking.engine import check_recording
from tokconf.checking.summary import Summary
from tokconf.cli.main import main
from tokconf.core.errors import TokconfError
from tokconf.core.facts import Fact
from tokconf.core.files import sha256_file
from tokconf.core.outcome import MODES, Refusal
from tokconf.corpus.generator import SplitMix64
from tokconf.implementations.resolve import resolve
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.recording.coverage import known_tokenizers
from tokconf.recording.decoding import load_for
from tokconf.recording.decoding import path_for as decoding_path
from tokconf.recording.format import Recording, VocabGroup, load, read_provenance
from tokconf.reporting.report import table_rows
from tokconf.synth.files import recorded_vocab, synthesize
from tokconf.synth.gguf_write import gguf_bytes
from tokconf.synth.recipes import BASES, BY_NAME, NEW_IN_B11434, PRE_NAMES, RECIPES, SYNTH_VERSION, Family
from tokconf_reference.gguf_reader import read_tokenizer_fields
from tokconf_reference.tokenizer import PRE_NAMES as REFERENCE_PRE_NAMES

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = {build: ROOT / "recordings" / f"b{build}" / "synthetic" for build in (11192, 11434)}


def _path(build: int, name: str) -> Path:
    return SYNTHETIC[build] / f"{name}.yaml"


def test_the_pre_names_are_b11192s_and_the_two_b11434_adds(llama_build: Build) -> None:
    assert set(known_tokenizers(11192).pre_types) == set(PRE_NAMES) - set(NEW_IN_B11434)
    assert len(PRE_NAMES) == 92
    for name in NEW_IN_B11434:  # llama.cpp b11192 refuses the file; b11434 tokenizes it
        before, after = load(_path(11192, f"pre-{name}")), load(_path(11434, f"pre-{name}"))
        assert before.facts.get("load_error") == f"unknown pre-tokenizer type: '{name}'"
        refusal = Refusal(f"load: {before.facts['load_error']}")
        assert {o for c in before.cases for o in c.outcomes.values()} == {refusal}
        assert "load_error" not in after.facts and after.facts["vocab_type"] == "bpe"


def test_every_recipe_is_recorded_in_both_builds_with_its_recipe() -> None:
    for build, folder in SYNTHETIC.items():
        assert sorted(p.stem for p in folder.glob("*.yaml") if not p.name.endswith(".decoding.yaml")) == sorted(
            r.name for r in RECIPES
        )
        for recipe in RECIPES:
            provenance = read_provenance(_path(build, recipe.name))
            synthetic = provenance["vocab"]["synthetic"]
            assert synthetic["recipe"] == recipe.name and synthetic["version"] == SYNTH_VERSION
            assert synthetic["base"] == {"build": 11192, "file": f"ggml-vocab-{recipe.base}.gguf",
                                         "sha256": BASES[recipe.base]}  # fmt: skip
            assert provenance["llama_cpp"]["build"] == build
            assert provenance["fuzz"]["count"] == 500 and provenance["corpus_sample"] == {"every": 2, "max_bytes": 512}
            if build == 11192:  # decodings where the token table or its decoding is the recipe's own
                assert decoding_path(_path(build, recipe.name)).is_file() == recipe.decoding
    assert {r.family for r in RECIPES} == set(Family)


def test_the_files_made_here_are_the_ones_recorded(llama_build: Build, tmp_path: Path) -> None:
    for recipe in RECIPES:
        made = synthesize(recipe, tmp_path)
        recorded = {read_provenance(_path(b, recipe.name))["vocab"]["sha256"] for b in SYNTHETIC}
        assert recorded == {sha256_file(made)}, recipe.name
    assert main(["vocab", "synth", "--name", "model-test", "--out", str(tmp_path / "cli")]) == 0
    assert sha256_file(tmp_path / "cli" / "synth-model-test.gguf") == sha256_file(tmp_path / "synth-model-test.gguf")


def test_gguf_write_is_read_back_by_gguf_py_and_the_reference(tmp_path: Path) -> None:
    fields = {
        "general.architecture": "llama", "tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": ["<s>", "a", "é"],
        "tokenizer.ggml.scores": [0.0, -1.5, -2.25], "tokenizer.ggml.token_type": [3, 1, 1],
        "tokenizer.ggml.bos_token_id": 0, "tokenizer.ggml.add_bos_token": False,
        "tokenizer.ggml.precompiled_charsmap": [1, 2, 255],
    }  # fmt: skip
    path = tmp_path / "v.gguf"
    path.write_bytes(gguf_bytes(fields))
    assert read_tokenizer_fields(path) == fields
    reader = GGUFReader(path)
    assert [k for k in reader.fields if not k.startswith("GGUF.")] == list(fields)
    assert reader.fields["tokenizer.ggml.bos_token_id"].types[0].name == "UINT32"
    assert path.read_bytes()[:24] == b"GGUF" + struct.pack("<IQQ", 3, 0, len(fields))


# The pre-NAME recordings of the names the reference knows: in tests/test_reference_pre_names.py, with
# each name's live comparison (one tokenizer and one load of the recording for both).
CHECKED_WITH_THEIR_PRE_NAME = {f"pre-{name}" for name in REFERENCE_PRE_NAMES if name is not None}


def test_every_synthetic_recording_is_matched_by_the_reference_here_or_with_its_pre_name() -> None:
    assert set(BY_NAME) > CHECKED_WITH_THEIR_PRE_NAME and len(CHECKED_WITH_THEIR_PRE_NAME) == 90


@pytest.mark.parametrize("name", [r.name for r in RECIPES if r.name not in CHECKED_WITH_THEIR_PRE_NAME])
def test_the_reference_matches_every_synthetic_recording(name: str, llama_build: Build) -> None:
    recording = load(_path(11192, name))
    vocab = recorded_vocab(recording.provenance["vocab"], 11192, None)
    decoding = load_for(_path(11192, name))
    results = list(check_recording(recording, resolve("reference", None), vocab, decoding=decoding))
    problems = [f"{r.section} {r.case}: {r.reason}" for r in results if r.verdict is not Verdict.PASSED][:5]
    assert not problems, problems
    facts = 0 if "load_error" in recording.facts else len(Fact)
    assert Counter(r.verdict for r in results)[Verdict.PASSED] == 3 * len(recording.cases) + facts + 4 * bool(decoding)


@pytest.mark.parametrize("name", [r.name for r in RECIPES if r.family is not Family.PRE] + ["pre-kimi-k2", "pre-glm4"])
def test_a_sample_re_recorded_live_is_identical(name: str, llama_build: Build) -> None:
    recording = load(_path(11192, name))
    rng = SplitMix64(int(recording.vocab_sha256[:8], 16))
    sample = [recording.cases[rng.below(len(recording.cases))] for _ in range(40)]
    sample += [c for c in recording.cases if c.id.startswith("vocab/dna-")]
    with LibllamaOracle(llama_build, recorded_vocab(recording.provenance["vocab"], 11192, None)) as oracle:
        assert oracle.facts() == recording.facts
        assert oracle.tokenize_many([(c.data, *MODES[m]) for c in sample for m in MODES]) == [
            c.outcomes[m] for c in sample for m in MODES
        ]


def test_a_refused_vocab_passes_only_an_implementation_that_refuses_it_too(llama_build: Build) -> None:
    recording = load(_path(11192, "pre-glm5"))
    vocab = recorded_vocab(recording.provenance["vocab"], 11192, None)
    agreeing = list(check_recording(recording, resolve("reference", None), vocab))
    assert {r.verdict for r in agreeing} == {Verdict.PASSED} and len(agreeing) == 3 * len(recording.cases)
    assert "refuses to load it too (unknown pre-tokenizer type: 'glm5')" in agreeing[0].reason
    loading = list(check_recording(recording, resolve("fake_impls:loads_anything", None), vocab))
    assert {r.verdict for r in loading} == {Verdict.FAILED} and len(loading) == 3 * len(recording.cases)
    assert {r.standing for r in loading} == {r.standing for r in agreeing} == {Standing.LLAMA_REFUSES}
    assert loading[0].reason == (
        "llama.cpp refuses to load this vocabulary (unknown pre-tokenizer type: 'glm5'), the implementation loaded it"
    )


def test_a_recording_names_a_file_this_tokconf_must_make_exactly(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tokconf.synth.files, "synth_dir", lambda: tmp_path)  # not the cache other tests read
    vocab = read_provenance(_path(11192, "model-test"))["vocab"]
    assert recorded_vocab(vocab, 11192, None).name == "synth-model-test.gguf"
    with pytest.raises(TokconfError, match="was made from 0000"):
        recorded_vocab(vocab | {"sha256": "0000"}, 11192, None)
    made = recorded_vocab(vocab, 11192, None)
    made.write_bytes(made.read_bytes()[:-1])  # a damaged file in the cache is made again
    assert sha256_file(recorded_vocab(vocab, 11192, None)) == vocab["sha256"]
    older = vocab | {"synthetic": vocab["synthetic"] | {"version": SYNTH_VERSION + 1}}
    with pytest.raises(TokconfError, match=f"which this tokconf cannot make \\(it makes version {SYNTH_VERSION}\\)"):
        recorded_vocab(older, 11192, None)  # type: ignore[arg-type]
    assert main(["vocab", "synth", "--name", "no-such-recipe", "--list"]) == 2


def test_a_hybriddna_k_mer_bug_fails_the_reference(llama_build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    recording = load(_path(11192, "model-hybriddna"))
    recording.cases = [c for c in recording.cases if c.id.startswith("vocab/dna-")]
    vocab = recorded_vocab(recording.provenance["vocab"], 11192, None)
    monkeypatch.setattr(tokconf_reference.hybriddna, "K", 5)
    results = check_recording(recording, resolve("reference", None), vocab)
    failed = [r.case for r in results if r.verdict is Verdict.FAILED]
    assert "vocab/dna-0" in failed and len(set(failed)) >= 8


def test_the_table_groups_vocabularies_and_folds_passing_synthetic_ones() -> None:
    summary = Summary()
    summary.count("qwen2", "plain", Verdict.PASSED, VocabGroup.SHIPPED)
    for name in ("pre-a", "pre-b"):
        summary.count(name, "plain", Verdict.PASSED, VocabGroup.SYNTHETIC)
    summary.count("pre-b", "bos", Verdict.FAILED, VocabGroup.SYNTHETIC)
    summary.count("mine", "plain", Verdict.PASSED, VocabGroup.USER)
    rows = [(row[0], row[1], row[2], row[3]) for row in table_rows(summary)]
    assert rows == [
        ("qwen2", "plain", "1", "0"), ("shipped: 1 vocabs", "", "1", "0"),
        ("pre-b", "bos", "0", "1"), ("pre-b", "plain", "1", "0"), ("synthetic: 2 vocabs, 1 passed", "", "2", "1"),
        ("mine", "plain", "1", "0"), ("user: 1 vocabs", "", "1", "0"), ("all", "", "4", "1"),
    ]  # fmt: skip


def test_recordings_know_their_group() -> None:
    shipped = load(ROOT / "recordings" / "b11192" / "qwen2.yaml")
    assert shipped.group is VocabGroup.SHIPPED
    assert load(_path(11192, "model-rwkv")).group is VocabGroup.SYNTHETIC
    user = Recording(shipped.provenance | {"vocab": shipped.provenance["vocab"] | {"file": "mine.gguf"}}, shipped.facts)
    assert user.group is VocabGroup.USER
    assert BY_NAME["pre-glm5"].family is Family.PRE
