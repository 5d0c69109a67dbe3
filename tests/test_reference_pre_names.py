"""Every `tokenizer.ggml.pre` name the reference accepts tokenizes as llama.cpp b11192 does.

No shipped test vocabulary uses most of these names, so each is compared on the shipped gpt-2
vocabulary (tokens, types, merges) under that pre name: the synthetic vocabulary `pre-NAME`
(tokconf.synth), whose recording holds llama.cpp's answers to every second corpus case up to 512
bytes and 500 fuzz strings in every mode. For each name, the reference matches that recording in
every case and fact (what tests/test_synth.py asks of the other synthetic recordings), and a sample
of the corpus and the fuzz set is compared in every mode with the live llama.cpp on that file
wherever the recording does not hold it already; one tokenizer and one load of the recording serve
both.
The regex table itself is compared with llama.cpp's source at the pinned build.
"""

from __future__ import annotations

import re
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from gguf import GGUFWriter
from tokconf.builds.build import Build
from tokconf.builds.fetch import source_dir
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import check_recording
from tokconf.core.facts import Fact
from tokconf.core.files import CORPUS
from tokconf.core.outcome import MODES, Refusal
from tokconf.corpus.files import load_corpus
from tokconf.corpus.generator import fuzz_strings
from tokconf.implementations.python import PythonImplementation
from tokconf.implementations.reference import ReferencePort
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf.recording.decoding import load_for
from tokconf.recording.format import load
from tokconf.synth.files import recorded_vocab
from tokconf.synth.recipes import BY_NAME
from tokconf_reference.bpe import PRE_REGEXES
from tokconf_reference.gguf_reader import read_tokenizer_fields
from tokconf_reference.tokenizer import PRE_NAMES, Tokenizer, UnsupportedVocab

THEMES = ("contractions", "digits", "numbers", "punctuation", "scripts", "emoji", "edge", "controls", "whitespace")
NOT_REPRODUCED = ("tekken-v2", "no-such-pre")  # not names llama.cpp b11192 knows
SYNTHETIC = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "synthetic"


@pytest.fixture(scope="module")
def gpt2_fields(llama_build: Build) -> dict[str, Any]:
    return read_tokenizer_fields(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")


@pytest.fixture(scope="module")
def texts() -> list[bytes]:
    files = {f.path.stem: f for f in load_corpus([CORPUS])}
    cases = [c.data for theme in THEMES for c in files[theme].cases]
    prose = [c.data for c in files["multilingual"].cases[::3]]  # Han, kana, Hangul, Thai, Arabic, Latin...
    return cases[::2] + prose + list(fuzz_strings())[:300]


def _write_vocab(path: Path, fields: dict[str, Any], pre: str) -> None:
    """The gpt-2 vocabulary with another pre name, `tokenizer.ggml.pre` written last."""
    writer = GGUFWriter(str(path), "gpt2")
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_array("tokenizer.ggml.tokens", fields["tokenizer.ggml.tokens"])
    writer.add_array("tokenizer.ggml.token_type", fields["tokenizer.ggml.token_type"])
    writer.add_array("tokenizer.ggml.merges", fields["tokenizer.ggml.merges"])
    writer.add_uint32("tokenizer.ggml.eos_token_id", fields["tokenizer.ggml.eos_token_id"])
    writer.add_string("tokenizer.ggml.pre", pre)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()


@pytest.fixture(scope="module")
def vocab_head(gpt2_fields: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Everything of such a file before the pre name's length: written once (GGUFWriter takes most
    of a second for 50,000 tokens), then each name is appended with its length."""
    path = tmp_path_factory.mktemp("vocab") / "head.gguf"
    _write_vocab(path, gpt2_fields, MARK)
    raw = path.read_bytes()
    at = raw.rindex(struct.pack("<Q", len(MARK)) + MARK.encode())
    return raw[:at]


MARK = "pre-name-goes-here"


def _with_pre(folder: Path, head: bytes, pre: str) -> Path:
    path = folder / f"gpt-2-{pre}.gguf"
    path.write_bytes(head + struct.pack("<Q", len(pre.encode())) + pre.encode())  # no tensors: no padding
    return path


def test_the_spliced_file_is_the_file_gguf_writes(
    vocab_head: bytes, gpt2_fields: dict[str, Any], tmp_path: Path
) -> None:
    written = tmp_path / "written.gguf"
    _write_vocab(written, gpt2_fields, "deepseek-llm")
    assert _with_pre(tmp_path, vocab_head, "deepseek-llm").read_bytes() == written.read_bytes()


@pytest.mark.conformance
@pytest.mark.parametrize("pre", sorted(name for name in PRE_NAMES if name is not None))
def test_the_pre_name_tokenizes_as_llama_cpp(pre: str, texts: list[bytes], llama_build: Build) -> None:
    recording = load(SYNTHETIC / f"pre-{pre}.yaml")
    synthetic = recording.provenance["vocab"]["synthetic"]  # the recipe: gpt-2's file under this pre name
    assert synthetic["recipe"] == f"pre-{pre}" and synthetic["base"]["file"] == "ggml-vocab-gpt-2.gguf"
    path = recorded_vocab(recording.provenance["vocab"], 11192, None)  # made again, checked by sha256
    tok = Tokenizer.from_gguf(path)
    decoding = load_for(SYNTHETIC / f"pre-{pre}.yaml")
    reference = PythonImplementation("reference", lambda _: ReferencePort(tok))  # resolve("reference"), this tokenizer
    results = list(check_recording(recording, reference, path, decoding=decoding))
    problems = [f"{r.section} {r.case}: {r.reason}" for r in results if r.verdict is not Verdict.PASSED][:5]
    assert not problems, problems
    checks = 3 * len(recording.cases) + len(Fact) + 4 * bool(decoding)
    assert Counter(r.verdict for r in results)[Verdict.PASSED] == checks
    recorded = {case.data for case in recording.cases if set(case.outcomes) == set(MODES)}
    live = [data for data in texts if data not in recorded]
    assert 0 < len(live) < 0.1 * len(texts)  # most of the sample is in the recording
    requests = [(data, *flags) for data in live for flags in MODES.values()]
    with LibllamaOracle(llama_build, path) as oracle:
        expected = oracle.tokenize_many(requests)
    facts = recording.facts  # llama.cpp's, recorded from this file (its sha256 checked above)
    assert (tok.add_bos, tok.add_eos, tok.bos_id, tok.eos_id) == (
        facts["add_bos"], facts["add_eos"], facts["special_ids"]["bos"], facts["special_ids"]["eos"],
    )  # fmt: skip
    wrong = []
    for (data, add_special, parse_special), want in zip(requests, expected, strict=True):
        try:
            got: list[int] | str = tok.encode(data, add_special, parse_special)
        except ValueError:
            got = "refused"
        if got != ("refused" if isinstance(want, Refusal) else want):
            wrong.append((data, add_special, parse_special, want, got))
    assert not wrong, wrong[:3]


def test_a_pre_name_vocabulary_is_gpt2s_under_that_name(gpt2_fields: dict[str, Any]) -> None:
    """The recipe every `pre-NAME` file comes from (one lambda for all), read back for one name."""
    recording = load(SYNTHETIC / "pre-deepseek-llm.yaml")
    fields = read_tokenizer_fields(recorded_vocab(recording.provenance["vocab"], 11192, None))
    assert fields == BY_NAME["pre-deepseek-llm"].make(gpt2_fields)
    assert fields["tokenizer.ggml.pre"] == "deepseek-llm"
    for key in ("tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"):
        assert fields[key] == gpt2_fields[key], key


def test_names_llama_cpp_does_not_know_are_refused_by_name(vocab_head: bytes, tmp_path: Path) -> None:
    for pre in NOT_REPRODUCED:
        with pytest.raises(UnsupportedVocab, match=f"pre-tokenizer '{pre}'"):
            Tokenizer.from_gguf(_with_pre(tmp_path, vocab_head, pre))


def test_the_regex_table_is_llama_cpps(llama_build: Build) -> None:
    """llm_tokenizer_bpe's constructor, read from the pinned source: each supported type's regex
    list is byte for byte the reference's."""
    source = (source_dir(llama_build.build) / "src" / "llama-vocab.cpp").read_text(encoding="utf-8")
    start = source.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    body = source[start : source.index("struct llm_tokenizer_bpe_session", start)]
    lists: dict[str, list[str]] = {}
    for block in re.split(r"\n\s*break;", body):
        found = re.search(r"regex_exprs = \{(.*?)\};", block, re.S)
        cases = re.findall(r"case LLAMA_VOCAB_PRE_TYPE_(\w+):", block) or (["DEFAULT"] if "default:" in block else [])
        if not found:
            continue
        literals = []
        for line in found.group(1).splitlines():
            code = line.strip()
            if code.startswith('"'):
                literal = re.match(r'"((?:[^"\\]|\\.)*)"', code)
                assert literal
                literals.append(literal.group(1).encode("utf-8").decode("unicode_escape").encode("latin-1").decode())
        for case in cases:
            lists[case] = literals
    by_type = {
        "DEFAULT": "default", "LLAMA3": "llama3", "JAIS2": "jais2", "DEEPSEEK_LLM": "deepseek-llm",
        "DEEPSEEK3_LLM": "deepseek3-llm", "SPARK2_5": "spark2_5", "YOUTU": "youtu", "DEEPSEEK_CODER": "deepseek-coder",
        "FALCON": "falcon", "STARCODER": "starcoder", "GPT2": "gpt2", "QWEN2": "qwen2", "QWEN35": "qwen35",
        "PORO": "poro", "VIKING": "viking", "TEKKEN": "tekken", "CHAMELEON": "chameleon", "GPT4O": "gpt4o",
        "GRANITE_EMB_MULTI": "granite-emb-multi", "BAILINGMOE": "bailingmoe", "SEED_CODER": "seed-coder",
        "UFAKZEKA": "ufakzeka", "LAGUNA": "laguna", "EXAONE_MOE": "exaone-moe", "GEMMA4": "gemma4",
        "MINICPM5": "minicpm5", "AFMOE": "afmoe", "TINY_AYA": "tiny_aya", "SUPERBPE": "superbpe",
        "SARVAM_MOE": "sarvam-moe", "WHITESPACE": "whitespace", "KIMI_K2": "kimi-k2",
    }  # fmt: skip
    assert set(by_type.values()) == set(PRE_REGEXES)
    for cpp_type, ours in by_type.items():
        assert lists[cpp_type] == PRE_REGEXES[ours], cpp_type


def test_every_name_llama_cpp_recognises_is_covered(llama_build: Build) -> None:
    source = (source_dir(llama_build.build) / "src" / "llama-vocab.cpp").read_text(encoding="utf-8")
    names = set(re.findall(r'tokenizer_pre == "([^"]*)"', source))
    assert len(names) == 90
    assert names == {name for name in PRE_NAMES if name is not None}
