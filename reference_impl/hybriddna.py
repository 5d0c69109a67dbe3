"""The `hybriddna` tokenizer model: BPE, except that the text inside `<dna>…</dna>` is cut into 6-mers.

A port of `llm_tokenizer_hybriddna_session` (llama-vocab.cpp b11192). Each k-mer token's text ends in
the reserved marker U+E000, which keeps it apart from a BPE token of the same letters in
`token_to_id`; at load llama.cpp erases the marker from the texts of the tokens after `<oov>`, so they
detokenize to the bare sequence (`unmarked`).
"""

from __future__ import annotations

MARKER = "\ue000"  # dna_kmer_marker
OPEN, CLOSE = b"<dna>", b"</dna>"
K = 6


def unmarked(tokens: list[str], oov: int) -> list[str]:
    """`id_to_token` after load: the marker erased from every token after `<oov>` that ends in it."""
    return tokens[: oov + 1] + [t[: -len(MARKER)] if len(t) > len(MARKER) and t.endswith(MARKER) else t
                                for t in tokens[oov + 1 :]]  # fmt: skip


class DnaSpans:
    """The DNA spans of a text; built only when `<dna>`, `</dna>` and `<oov>` are all in the vocab
    (otherwise llama.cpp falls back to plain BPE)."""

    def __init__(self, token_to_id: dict[str, int]) -> None:
        self.token_to_id = token_to_id
        self.begin, self.end, self.oov = token_to_id["<dna>"], token_to_id["</dna>"], token_to_id["<oov>"]

    def split(self, text: bytes) -> list[bytes | list[int]]:
        """The text as BPE fragments (bytes) and the ids of the tags and k-mers between them."""
        out: list[bytes | list[int]] = []
        pos = 0
        while pos < len(text):
            start = text.find(OPEN, pos)
            if start < 0:
                out.append(text[pos:])
                break
            if start > pos:
                out.append(text[pos:start])
            content = start + len(OPEN)
            close = text.find(CLOSE, content)
            ids = [self.begin, *self._kmers(text[content : len(text) if close < 0 else close])]
            if close < 0:  # an unclosed span runs to the end
                out.append(ids)
                break
            out.append([*ids, self.end])
            pos = close + len(CLOSE)
        return out

    def _kmers(self, raw: bytes) -> list[int]:
        """emit_dna_kmers: ASCII a-z upper-cased, 6 at a time, the last padded with A; a k-mer not in
        the vocab (anything but ACGT) is `<oov>`."""
        seq = bytes(c - 32 if 0x61 <= c <= 0x7A else c for c in raw)
        chunks = [seq[i : i + K] for i in range(0, len(seq), K)]
        if chunks and len(chunks[-1]) < K:
            chunks[-1] += b"A" * (K - len(chunks[-1]))
        text = [c.decode("utf-8", "surrogateescape") + MARKER for c in chunks]
        return [self.token_to_id.get(t, self.oov) for t in text]
