"""PLaMo-2 (`tokenizer.ggml.model = plamo2`): the best-scoring segmentation by dynamic programming over
a suffix table, with UTF-8 byte tokens for what no piece covers.

A port of llama.cpp b11192's `llm_tokenizer_plamo2` (built from the vocab in `build`, run by
`encode`), kept table for table: the suffixes of every non-byte token ordered by their reversed
bytes, a row per prefix of each suffix that is itself a piece, a sentinel row closing each suffix,
and the right-to-left search that carries the suffix id from one code point to the next. The ties of
its strict comparisons, and so the answer where two segmentations score the same, follow from that
order, which is why the table is rebuilt as it is rather than replaced by a simpler search.
"""

from __future__ import annotations

import math

from tokconf_reference.errors import LlamaAborts
from tokconf_reference.unicode import codepoints

INVALID_SCORE = -20_000_000
UNKNOWN_SCORE = -10_000_000
INFINITY = 1 << 60


def _round(value: float) -> int:
    """std::round: halves away from zero."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


class MissingByteToken(LlamaAborts, ValueError):
    """A PLaMo-2 vocabulary without all 256 `<0xXX>` tokens: llama.cpp refuses to load it."""


HEX = set("0123456789abcdefABCDEF")


def byte_token(text: str) -> int | None:
    """The byte a BYTE token spelled `<0xXX>` stands for (build and token_to_piece both parse it so)."""
    if len(text) == 6 and text.startswith("<0x") and text.endswith(">") and set(text[3:5]) <= HEX:
        return int(text[3:5], 16)
    return None


class Plamo2Encoder:
    def __init__(self, texts: list[str], scores: list[float], byte_tokens: set[int]) -> None:
        """`byte_tokens`: the ids with the BYTE attribute; those spelled `<0xXX>` are the fallback."""
        self.bytes = [0] * 256
        token_to_id: dict[str, int] = {}
        suffix_to_score: dict[str, float] = {}
        for token, text in enumerate(texts):
            token_to_id[text] = token
            if token in byte_tokens:
                byte = byte_token(text)
                if byte is not None:
                    self.bytes[byte] = token
                continue
            suffix_to_score[text] = scores[token]
            for i in range(1, len(text)):
                suffix_to_score.setdefault(text[i:], math.nan)
        if 0 in self.bytes:  # `bytes_[i] == 0` is "not set" (a byte token with id 0 counts as unset)
            raise MissingByteToken(f"byte token <0x{self.bytes.index(0):02X}> is not set")
        suffixes = sorted([*suffix_to_score, ""], key=lambda s: s.encode("utf-8", "surrogateescape")[::-1])
        # First every suffix's row (llama.cpp's first pass), then the rows, which name pieces by it.
        suffix_to_id: dict[str, int] = {}
        self.to_suffix_id: dict[tuple[int, int], int] = {}
        rows = 0
        for suffix in suffixes:
            suffix_to_id[suffix] = rows
            if suffix:
                self.to_suffix_id[(ord(suffix[0]), suffix_to_id[suffix[1:]])] = rows
            rows += 1 + sum(suffix[:n] in suffix_to_score for n in range(1, len(suffix) + 1))
        self.table: list[tuple[int, int, int, int]] = []  # piece length, token id, score, piece id
        for suffix in suffixes:
            for length in range(len(suffix), 0, -1):
                piece = suffix[:length]
                if piece not in suffix_to_score:
                    continue
                score = suffix_to_score[piece]
                fixed = _round(score * 1e4) if math.isfinite(score) else INVALID_SCORE
                self.table.append((length, token_to_id.get(piece, -1), fixed, suffix_to_id[piece]))
            self.table.append((1, -1, UNKNOWN_SCORE, 0))

    def encode(self, text: bytes) -> list[int]:
        cpts = codepoints(text)
        if cpts[:1] == [0xFEFF]:
            cpts = cpts[1:]
        n = len(cpts)
        scores = [INFINITY] * (n + 1)
        scores[n] = 0
        path = [(0, 0)] * (n + 1)  # token length, token id
        suffix_id = 0
        table = self.table
        for i in range(n - 1, -1, -1):
            c = cpts[i]
            for p in range(suffix_id, len(table)):
                suffix_id = self.to_suffix_id.get((c, table[p][3]), 0)
                if suffix_id > 0 or table[p][2] == UNKNOWN_SCORE:
                    break
            for p in range(suffix_id, len(table)):
                length, token, score, _ = table[p]
                if score > INVALID_SCORE:
                    total = scores[i + length] - score
                    if total < scores[i]:
                        scores[i] = total
                        path[i] = (length, token)
                if score == UNKNOWN_SCORE:
                    break
        out: list[int] = []
        pos = 0
        while pos < n:
            length, token = path[pos]
            if token >= 0:
                out.append(token)
            else:  # byte tokens for the code point's UTF-8 bytes, computed as llama.cpp computes them
                c = cpts[pos]
                size = 1 + (c >= 0x80) + (c >= 0x800) + (c >= 0x10000)
                for k in range(size):
                    lead = c if size == 1 else (0xF00 >> size) & 0xFF if k == 0 else 0x80
                    out.append(self.bytes[(lead | ((c >> ((size - k - 1) * 6)) & 0x3F)) & 0xFF])
            pos += length
        return out
