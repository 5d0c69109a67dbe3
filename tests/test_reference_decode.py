"""The reference's decoding against the live llama.cpp: every token's piece, and detokenized cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cmake_build import Build
from harness.fuzz import SplitMix64
from harness.oracle import LibllamaOracle
from harness.recording import load
from reference_impl import Tokenizer
from reference_impl.tokenizer import StreamDecoder

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"
BPE = ["aquila", "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2", "gpt-neox", "llama-bpe", "mpt"]
BPE += ["qwen2", "qwen35", "refact", "starcoder"]
SPM = ["baichuan", "llama-spm", "phi-3"]
WPM = ["bert-bge"]
GEMMA4 = ["gemma-4"]
UGM = ["nomic-bert-moe"]


@pytest.mark.parametrize("name", BPE + SPM + WPM + GEMMA4 + UGM)
def test_pieces_and_detokenize_match_llama_cpp(name: str, llama_build: Build) -> None:
    vocab = llama_build.models_dir / f"ggml-vocab-{name}.gguf"
    tok = Tokenizer.from_gguf(vocab)
    recording = load(BUNDLED / f"{name}.yaml")
    rng = SplitMix64(7)
    sample = [recording.cases[rng.below(len(recording.cases))] for _ in range(150)]
    with LibllamaOracle(llama_build, vocab) as oracle:
        for special in (True, False):
            expected = oracle.pieces(special)
            pieces = [tok.token_to_piece(i, special) for i in range(tok.n_tokens)]
            wrong = [(i, expected[i], pieces[i]) for i in range(tok.n_tokens) if expected[i] != pieces[i]]
            assert not wrong, wrong[:5]
        for case in sample:
            ids = case.outcomes["bos"]
            if not isinstance(ids, list):
                continue
            for remove, unparse in ((False, False), (True, True), (False, True)):
                assert tok.decode(ids, remove, unparse) == oracle.detokenize(ids, remove, unparse), (case.id, remove)


def test_stream_decoder_holds_back_characters_split_across_tokens(llama_build: Build) -> None:
    tok = Tokenizer.from_gguf(llama_build.models_dir / "ggml-vocab-qwen2.gguf")
    text = "naïve 🤖 漢字 👨‍👩‍👧 ok"
    ids = tok.encode(text.encode())
    assert any(
        len(tok.token_to_piece(i).decode("utf-8", errors="replace")) != len(tok.token_to_piece(i))
        or "\ufffd" in tok.token_to_piece(i).decode("utf-8", errors="replace")
        for i in ids
    )  # some split
    stream = StreamDecoder(tok)
    parts = [stream.feed(i) for i in ids] + [stream.flush()]
    assert "".join(parts) == text
    assert not any("\ufffd" in part for part in parts)
