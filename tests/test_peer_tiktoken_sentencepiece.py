"""The tiktoken and sentencepiece peer plug-ins, built from a GGUF's own tables: they load the
vocabularies they claim and decline the others with a reason, and their conformance to llama.cpp
b11192 is asserted as measured (exact counts from the bundled recordings, so a new library release
that tokenizes differently shows up here), with the named divergences it comes from."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import CaseResult, Selection, check_file
from tokconf.checking.xfail import ExpectedFailures
from tokconf.core.outcome import is_utf8
from tokconf.implementations.base import Unsupported
from tokconf.implementations.peers import sentencepiece_gguf, tiktoken_gguf
from tokconf.implementations.resolve import resolve
from tokconf.recording.format import load

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
PLAIN = Selection(sections=frozenset({"plain"}))
PLAIN_SPECIAL = Selection(sections=frozenset({"plain", "special"}))
P, F, U = Verdict.PASSED, Verdict.FAILED, Verdict.UNSUPPORTED


def _results(build: Build, impl: str, name: str, selection: Selection) -> list[CaseResult]:
    checked = check_file(BUNDLED / f"{name}.yaml", resolve(impl, None), selection, ExpectedFailures(), build.models_dir)
    return checked.results


def _counts(results: list[CaseResult]) -> dict[tuple[str, Verdict], int]:
    return dict(Counter((r.section, r.verdict) for r in results))


def _invalid_utf8(name: str) -> set[str]:
    return {case.id for case in load(BUNDLED / f"{name}.yaml").cases if not is_utf8(case.data)}


def _one(results: list[CaseResult], section: str, case: str) -> CaseResult:
    (found,) = [r for r in results if (r.section, r.case) == (section, case)]
    return found


# tiktoken-gguf


@pytest.mark.parametrize(("name", "passed"), [("gpt-2", 2349), ("llama-bpe", 3828)])
def test_tiktoken_agrees_on_every_utf8_input_of_gpt2_and_llama_bpe(llama_build: Build, name: str, passed: int) -> None:
    results = _results(llama_build, "tiktoken-gguf", name, PLAIN)
    assert _counts(results) == {("plain", P): passed, ("plain", U): 397, ("facts", P): 4, ("facts", U): 2}
    unsupported = {r.case for r in results if r.verdict is U and r.section == "plain"}
    assert unsupported == _invalid_utf8(name)  # never passed or failed: a str API cannot be given them
    assert {r.reason for r in results if r.verdict is U and r.section == "plain"} == {
        "invalid-utf8 (the port said: tiktoken encodes str: not valid UTF-8)"
    }
    assert [r.case for r in results if r.verdict is U and r.section == "facts"] == ["add_sep", "eog_ids"]


def test_tiktoken_qwen2_user_defined_tokens_and_eog_text_are_measured_divergences(llama_build: Build) -> None:
    results = _results(llama_build, "tiktoken-gguf", "qwen2", PLAIN_SPECIAL)
    assert _counts(results) == {
        ("plain", P): 2519,  # 65.16%
        ("plain", F): 1347,
        ("plain", U): 397,
        ("special", P): 3796,
        ("special", F): 70,
        ("special", U): 397,
        ("facts", P): 4,
        ("facts", U): 2,
    }
    # llama.cpp matches user-defined tokens even with parse_special=false; `disallowed_special=()` does not.
    pad = _one(results, "plain", "vocab/151646-alone")
    assert (pad.verdict, pad.expected, pad.actual) == (F, [151646], [42347, 1808, 16, 20, 16, 21, 19, 21, 60])
    assert _one(results, "special", "vocab/151646-alone").verdict is P
    # `</s>` is normal in the file; llama.cpp makes it a control token as an end-of-generation text.
    eos_text = _one(results, "special", "vocab/128247-alone")
    assert (eos_text.verdict, eos_text.expected, eos_text.actual) == (F, [128247], [522, 82, 29])
    failed_plain = {r.case for r in results if r.section == "plain" and r.verdict is F}
    assert all(case.startswith(("vocab/", "fuzz/")) for case in failed_plain)


def test_tiktoken_decoding_of_gpt2(llama_build: Build) -> None:
    results = _results(llama_build, "tiktoken-gguf", "gpt-2", Selection(sections=frozenset({"decode"})))
    decoding = {r.case: (r.verdict, r.reason.split(" — ")[0]) for r in results if r.section == "decode"}
    assert decoding == {
        "pieces-special": (P, ""),
        "pieces-plain": (P, ""),
        # llama.cpp cleans up spaces before punctuation (`, '` → `,'`); tiktoken returns the bytes.
        "remove-special": (F, "22 of 2742 differ"),
        "unparse-special": (F, "22 of 2742 differ"),
    }


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("llama-spm", "tiktoken does byte-level BPE only: tokenizer.ggml.model is 'llama', not 'gpt2'"),
        ("starcoder", "no published regex for pre-tokenizer 'starcoder'"),
        ("gpt-neox", "the GGUF names no pre-tokenizer (tokenizer.ggml.pre): no published regex to split with"),
    ],
)
def test_tiktoken_declines_what_it_has_no_tables_for(llama_build: Build, name: str, reason: str) -> None:
    results = _results(llama_build, "tiktoken-gguf", name, Selection(sections=frozenset({"plain"})))
    assert {r.verdict for r in results} == {U}
    assert {r.reason for r in results if r.section == "plain"} == {reason}


def test_tiktoken_declines_tables_it_cannot_hold() -> None:
    with pytest.raises(Unsupported, match="same bytes"):
        tiktoken_gguf._ranks(["a", "a"], [1, 1])
    with pytest.raises(Unsupported, match="255 single bytes have no token"):
        tiktoken_gguf._ranks(["a"], [1])
    with pytest.raises(Unsupported, match="byte-to-unicode alphabet"):
        tiktoken_gguf._ranks([" "], [1])  # a plain space is written `Ġ` in a byte-level vocabulary


# sentencepiece-gguf


def test_sentencepiece_llama_spm_agrees_on_every_utf8_input_in_plain_mode(llama_build: Build) -> None:
    results = _results(llama_build, "sentencepiece-gguf", "llama-spm", PLAIN_SPECIAL)
    assert _counts(results) == {
        ("plain", P): 2377,
        ("plain", F): 397,
        ("special", P): 2218,
        ("special", F): 556,
        ("facts", P): 4,
        ("facts", U): 2,
    }
    # sentencepiece 0.2.3's encode takes bytes, so invalid UTF-8 is judged, not unsupported: it reads
    # a malformed byte as U+FFFD (`�`, 30140), llama.cpp falls back to the byte's own token.
    failed_plain = {r.case for r in results if r.section == "plain" and r.verdict is F}
    assert failed_plain == _invalid_utf8("llama-spm")
    lone = _one(results, "plain", "invalid-utf8/lone-continuation")
    assert (lone.expected, lone.actual) == ([29871, 131], [29871, 30140])
    # No parse_special switch: a control token's text is always ordinary text to sentencepiece.
    bos_text = _one(results, "special", "vocab/1-alone")
    assert (bos_text.verdict, bos_text.expected, bos_text.actual) == (F, [1], [529, 29879, 29958])


def test_sentencepiece_phi3_user_defined_and_control_pieces_diverge(llama_build: Build) -> None:
    results = _results(llama_build, "sentencepiece-gguf", "phi-3", PLAIN_SPECIAL)
    assert _counts(results) == {
        ("plain", P): 2632,
        ("plain", F): 467,
        ("special", P): 2110,
        ("special", F): 989,
        ("facts", P): 4,
        ("facts", U): 2,
    }
    # `</s>` is user-defined in phi-3's file: sentencepiece matches it after the dummy prefix.
    eos_text = _one(results, "plain", "vocab/2-alone")
    assert (eos_text.expected, eos_text.actual) == ([1533, 29879, 29958], [29871, 2])
    failed_valid = {r.case for r in results if r.section == "plain" and r.verdict is F} - _invalid_utf8("phi-3")
    assert len(failed_valid) == 70
    assert all("</s>" in r.data.decode() for r in results if r.section == "plain" and r.case in failed_valid)


def test_sentencepiece_unigram_nomic_bert_moe(llama_build: Build) -> None:
    results = _results(llama_build, "sentencepiece-gguf", "nomic-bert-moe", PLAIN)
    assert _counts(results) == {("plain", P): 2775, ("plain", F): 7, ("facts", P): 4, ("facts", U): 2}


@pytest.mark.parametrize(("name", "model"), [("gpt-2", "gpt2"), ("bert-bge", "bert"), ("gemma-4", "gemma4")])
def test_sentencepiece_declines_other_tokenizer_models(llama_build: Build, name: str, model: str) -> None:
    results = _results(llama_build, "sentencepiece-gguf", name, PLAIN)
    assert {r.verdict for r in results} == {U}
    assert {r.reason for r in results if r.section == "plain"} == {
        f"sentencepiece has BPE ('llama') and Unigram ('t5') models: tokenizer.ggml.model is {model!r}"
    }


def test_sentencepiece_model_holds_the_gguf_pieces(llama_build: Build) -> None:
    peer = sentencepiece_gguf.from_gguf(llama_build.models_dir / "ggml-vocab-phi-3.gguf")
    processor = peer.processor
    assert processor.get_piece_size() == 32064
    assert (processor.id_to_piece(13), processor.id_to_piece(29871)) == ("<0x0A>", "▁")
    assert processor.is_unknown(0)  # the GGUF's unknown_token_id, although the file types it control
    assert processor.is_control(1) and processor.is_control(32000) and not processor.is_control(2)
    assert processor.is_unused(32011)  # a second piece typed unknown: sentencepiece allows one
    assert (peer.bos_id, peer.eos_id, peer.add_bos, peer.add_eos) == (1, 32000, True, False)
    assert peer.encode(b"Hello world", add_special=True, parse_special=False) == [1, 15043, 3186]
    assert sentencepiece_gguf._varint(-1) == b"\xff" * 9 + b"\x01"  # an int32 below zero: ten bytes
