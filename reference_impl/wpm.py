"""WordPiece as llama.cpp's `llm_tokenizer_wpm_session` does it (src/llama-vocab.cpp).

`preprocess`: code points decoded leniently, mapped to their NFD base (`unicode_cpts_normalize_nfd`,
one code point for one) and lowercased (`unicode_tolower`) when the vocab lowercases; whitespace
ends a word; NUL, U+FFFD, controls and (when lowercasing) accent marks are dropped; punctuation,
ASCII symbols and CJK ideographs are words of their own. Each word, prefixed with U+2581, is then
matched greedily, longest token first; a word with an unmatched position becomes [UNK] whole.

`Cleaning` holds BERT's text cleaning as switches, llama.cpp's values by default; the others are what a
port may do instead (ollama's WordPiece: no accent stripping, controls kept, ASCII symbols inside words,
a multi-byte punctuation mark cut off by its first byte, CJK Extension E's ideographs split off from
the Unicode block's start), replayed by `tokconf check --explain`.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from tokconf_reference import unicode_data_b11192 as data
from tokconf_reference.unicode import ACCENT_MARK, CONTROL, PUNCTUATION, SYMBOL, WHITESPACE, flags
from tokconf_reference.word_cache import encode_words

_NFD_STARTS = [first for first, _, _ in data.NFD]


def nfd_base(cpt: int) -> int:
    """unicode_cpts_normalize_nfd for one code point: the base of the range it falls in, or itself."""
    at = bisect_right(_NFD_STARTS, cpt) - 1
    if at >= 0:
        first, last, base = data.NFD[at]
        if first <= cpt <= last:
            return base
    return cpt


def is_chinese_char(cpt: int, hf_bound: bool = True) -> bool:
    """llm_tokenizer_wpm_session::is_chinese_char, with its 0x2B920 bound for CJK Extension E ("this should
    be 0x2B820 but in hf rust code it is 0x2B920"); `hf_bound` off: the Unicode block's 0x2B820."""
    return (
        0x4E00 <= cpt <= 0x9FFF or 0x3400 <= cpt <= 0x4DBF or 0x20000 <= cpt <= 0x2A6DF or 0x2A700 <= cpt <= 0x2B73F
        or 0x2B740 <= cpt <= 0x2B81F or (0x2B920 if hf_bound else 0x2B820) <= cpt <= 0x2CEAF
        or 0xF900 <= cpt <= 0xFAFF or 0x2F800 <= cpt <= 0x2FA1F
    )  # fmt: skip


@dataclass(frozen=True)
class Cleaning:
    """BERT's text cleaning in llm_tokenizer_wpm_session::preprocess, one switch per step a port
    may leave out: accents stripped (NFD base, marks dropped; llama.cpp: when lowercasing), NUL,
    U+FFFD and controls dropped, ASCII symbols (`$+<=>^`|~`) words of their own as punctuation is,
    a punctuation mark cut out whole (off: cut by bytes, its first byte a word and the rest
    starting the next: Go's `strings.IndexFunc(w, unicode.IsPunct)` with a one-byte step), and the
    ideographs split off as words with llama.cpp's (HF's) bound for CJK Extension E, U+2B920 (off:
    the Unicode block's U+2B820, as ollama's wordpiece.go has it, so U+2B820-U+2B91F stand alone)."""

    strip_accents: bool | None = None  # None: as llama.cpp, when lowercasing
    drop_controls: bool = True
    ascii_symbols: bool = True
    whole_punctuation: bool = True
    hf_cjk_bound: bool = True


LLAMA_CLEANING = Cleaning()
# Stand-ins (noncharacters) for a lone lead byte and a word starting with continuation bytes; read as such
# only where `whole_punctuation` is off
BYTE_WORD, BYTES_ON = "\ufdd0", "\ufdd1"


class _WordMap(dict[int, str]):
    """preprocess as a `str.translate` table, each code point worked out on first sight: a space
    separates words, "" drops the code point, a character standing alone is put between spaces."""

    def __init__(self, lowercase: bool, cleaning: Cleaning = LLAMA_CLEANING) -> None:
        super().__init__()
        self.lowercase = lowercase
        self.cleaning = cleaning

    def __missing__(self, cpt: int) -> str:
        value = self[cpt] = self._map(cpt)
        return value

    def _map(self, cpt: int) -> str:
        clean = self.cleaning
        # llama.cpp: strip_accents = lowercase
        strip_accents = self.lowercase if clean.strip_accents is None else clean.strip_accents
        if strip_accents:
            cpt = nfd_base(cpt)
        cat = flags(cpt)
        if cpt in WHITESPACE:
            return " "
        if clean.drop_controls and (cpt == 0 or cpt == 0xFFFD or cat & CONTROL):
            return ""
        if strip_accents and cat & ACCENT_MARK:
            return ""
        char = chr(data.LOWERCASE.get(cpt, cpt) if self.lowercase else cpt)
        if cat & PUNCTUATION and cpt > 0x7F and not clean.whole_punctuation:
            return f" {BYTE_WORD} {BYTES_ON}"  # the first byte alone, the rest opening the next word
        alone = cat & PUNCTUATION or (cpt < 0x7F and cat & SYMBOL and clean.ascii_symbols)
        if alone or is_chinese_char(cpt, clean.hf_cjk_bound):
            return f" {char} "
        return char


class WordPieceEncoder:
    def __init__(self, tokens: list[bytes], unk_id: int, lowercase: bool, cleaning: Cleaning = LLAMA_CLEANING) -> None:
        self.token_to_id = {text: i for i, text in enumerate(tokens)}
        self.max_len = max((len(t) for t in tokens), default=0)
        self.unk_id = unk_id
        self.lowercase = lowercase
        self.table = _WordMap(lowercase, cleaning)
        self.cache: dict[str, tuple[int, ...]] = {}

    def preprocess(self, text: str) -> list[str]:
        """The words of llm_tokenizer_wpm_session::preprocess (text: decoded as llama.cpp decodes it)."""
        return [word for word in text.translate(self.table).split(" ") if word]

    def encode(self, text: str) -> list[int]:
        return encode_words(self.cache, self.preprocess(text), self._match)

    def _match(self, word: str) -> tuple[int, ...]:
        """Longest token first from each position, after U+2581; any position unmatched: [UNK]."""
        if not self.table.cleaning.whole_punctuation and word[0] in (BYTE_WORD, BYTES_ON):  # bytes of a cut character
            return (self.unk_id,)
        word1 = "\u2581".encode() + word.encode("utf-8", "surrogatepass")  # surrogates as llama.cpp writes them
        n = len(word1)
        out: list[int] = []
        i = 0
        while i < n:
            for j in range(min(n, i + self.max_len + 1), i, -1):
                token = self.token_to_id.get(word1[i:j])
                if token is not None:
                    out.append(token)
                    i = j
                    break
            else:  # no token starts here: the whole word is unknown
                return (self.unk_id,)
        return tuple(out) or (self.unk_id,)
