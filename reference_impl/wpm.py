"""WordPiece as llama.cpp's `llm_tokenizer_wpm_session` does it (src/llama-vocab.cpp).

`preprocess`: code points decoded leniently, mapped to their NFD base (`unicode_cpts_normalize_nfd`,
one code point for one) and lowercased (`unicode_tolower`) when the vocab lowercases; whitespace
ends a word; NUL, U+FFFD, controls and (when lowercasing) accent marks are dropped; punctuation,
ASCII symbols and CJK ideographs are words of their own. Each word, prefixed with U+2581, is then
matched greedily, longest token first; a word with an unmatched position becomes [UNK] whole.
"""

from __future__ import annotations

from bisect import bisect_right

from reference_impl import unicode_data_b11192 as data
from reference_impl.unicode import ACCENT_MARK, CONTROL, PUNCTUATION, SYMBOL, WHITESPACE, cpt_to_utf8, flags

_NFD_STARTS = [first for first, _, _ in data.NFD]


def nfd_base(cpt: int) -> int:
    """unicode_cpts_normalize_nfd for one code point: the base of the range it falls in, or itself."""
    at = bisect_right(_NFD_STARTS, cpt) - 1
    if at >= 0:
        first, last, base = data.NFD[at]
        if first <= cpt <= last:
            return base
    return cpt


def is_chinese_char(cpt: int) -> bool:
    """llm_tokenizer_wpm_session::is_chinese_char (with its 0x2B920 bound, as in HF's Rust code)."""
    return (
        0x4E00 <= cpt <= 0x9FFF or 0x3400 <= cpt <= 0x4DBF or 0x20000 <= cpt <= 0x2A6DF or 0x2A700 <= cpt <= 0x2B73F
        or 0x2B740 <= cpt <= 0x2B81F or 0x2B920 <= cpt <= 0x2CEAF or 0xF900 <= cpt <= 0xFAFF
        or 0x2F800 <= cpt <= 0x2FA1F
    )  # fmt: skip


class WordPieceEncoder:
    def __init__(self, tokens: list[bytes], unk_id: int, lowercase: bool) -> None:
        self.token_to_id = {text: i for i, text in enumerate(tokens)}
        self.max_len = max((len(t) for t in tokens), default=0)
        self.unk_id = unk_id
        self.lowercase = lowercase

    def preprocess(self, cpts: list[int]) -> list[bytes]:
        words: list[bytearray] = [bytearray()]
        strip_accents = self.lowercase  # llama.cpp: strip_accents = lowercase
        for cpt in cpts:
            if strip_accents:
                cpt = nfd_base(cpt)
            cat = flags(cpt)
            if cpt in WHITESPACE:
                if words[-1]:
                    words.append(bytearray())
                continue
            if cpt == 0 or cpt == 0xFFFD or cat & CONTROL:
                continue
            if strip_accents and cat & ACCENT_MARK:
                continue
            piece = cpt_to_utf8(data.LOWERCASE.get(cpt, cpt) if self.lowercase else cpt)
            if cat & PUNCTUATION or (cpt < 0x7F and cat & SYMBOL) or is_chinese_char(cpt):
                if words[-1]:
                    words.append(bytearray())
                words[-1] += piece
                words.append(bytearray())
            else:
                words[-1] += piece
        if not words[-1]:
            words.pop()
        return [bytes(w) for w in words]

    def encode(self, cpts: list[int]) -> list[int]:
        out: list[int] = []
        for word in self.preprocess(cpts):
            if not word:
                continue
            word1 = "\u2581".encode() + word
            n = len(word1)
            start = len(out)
            i = 0
            while i < n:
                for j in range(min(n, i + self.max_len + 1), i, -1):
                    token = self.token_to_id.get(word1[i:j])
                    if token is not None:
                        out.append(token)
                        i = j
                        break
                else:  # no token starts here: the whole word is unknown
                    del out[start:]
                    break
            if len(out) == start:
                out.append(self.unk_id)
        return out
