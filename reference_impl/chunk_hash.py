"""The `test` tokenizer model (`tokenizer.ggml.model = test`): llama.cpp b11192's LLAMA_VOCAB_TYPE_TEST,
a stand-in vocabulary for tests of the rest of llama.cpp. Each raw fragment is cut into 5-byte
chunks, and a chunk's id is its polynomial hash (`hash * 31 + byte`, modulo 2^64) modulo the vocab
size; a token's piece is its id in lowercase hex (`format("%x", token)`)."""

from __future__ import annotations

CHUNK = 5
MASK64 = (1 << 64) - 1


class ChunkHashEncoder:
    def __init__(self, n_tokens: int) -> None:
        self.n_tokens = n_tokens

    def encode(self, text: bytes) -> list[int]:
        out = []
        for start in range(0, len(text), CHUNK):
            value = 0
            for byte in text[start : start + CHUNK]:
                value = (value * 31 + byte) & MASK64
            out.append(value % self.n_tokens)
        return out
