"""What a port does wrong, as mechanisms that can be replayed.

Each cause `--explain` names is a `Mechanism`: a deviation from llama.cpp that, applied to llama.cpp's
tokenizer, gives the port's answer. A case belongs to a cause only when replaying the cause's
mechanism (with the other causes the case needs) turns llama.cpp's answer into the port's, exactly:
that is the "fix" of the kind, run backwards. The mechanisms act at one of four stages:

- `Stage.INPUT`: the port changes the input first (NFC, a NUL-terminated string, GPT-2's byte
  mapping, a character taken for another);
- `Stage.TOKENIZER`: the port's tokenizer differs (a character's whitespace class, the
  pre-tokenizer's split rule, `ignore_merges`, which special tokens are cut out): replayed on the
  reference tokenizer (`tokconf_reference`) with that one difference;
- `Stage.OUTPUT`: the port changes the ids (BOS or EOS missing or added, ids numbered differently);
- `Stage.VERDICT`: the port refuses where llama.cpp answers, or the reverse.

`Character` is the fallback: no mechanism reproduces the port's ids, but every minimal input needs
the same character. Its cases are those that hold one of its minimal inputs and fail on it.

A mechanism's `key` decides what folds: two causes of one kind with the same key are one cause (its
parameters united: every special token the port does not parse is one `special-not-parsed` cause).
Labels depend on the mechanism alone, so a cause reads the same in every mode.
"""

from __future__ import annotations

import enum
import functools
import re
import unicodedata
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...core.outcome import MODES, Mode, is_utf8
from ...core.render import visible
from ...core.shrink import holds


class Kind(enum.Enum):
    """The named kinds of cause (docs/checking.md, "Explaining failures")."""

    BOS_MISSING = "bos-missing"
    BOS_ADDED = "bos-added"
    EOS_MISSING = "eos-missing"
    EOS_ADDED = "eos-added"
    CLS_MISSING = "cls-missing"
    SEP_MISSING = "sep-missing"
    INVALID_UTF8_REFUSED = "invalid-utf8-refused"
    INVALID_UTF8_REPLACED = "invalid-utf8-replaced"
    INVALID_UTF8_BYTES = "invalid-utf8-bytes"
    INVALID_UTF8_CUT = "invalid-utf8-cut"
    REFUSED = "refused"
    TOO_LONG_REFUSED = "too-long-refused"
    NOT_REFUSED = "not-refused"
    SPECIAL_NOT_PARSED = "special-not-parsed"
    SPECIAL_WRONG_ID = "special-wrong-id"
    SPECIAL_PARSED = "special-parsed"
    SPECIAL_START_ONLY = "special-start-only"
    SPECIAL_ISOLATED = "special-isolated"
    SPECIAL_STRIP = "special-strip"
    NORMALIZED_NFC = "normalized-nfc"
    NORMALIZED_NFD = "normalized-nfd"
    NORMALIZED_NFKC = "normalized-nfkc"
    NORMALIZED_NFKD = "normalized-nfkd"
    WHITESPACE_CLASS = "whitespace-class"
    WHITESPACE_CONTEXT = "whitespace-context"
    NUMBER_CLASS = "number-class"
    LETTER_CLASS = "letter-class"
    PRETOKENIZER_SPLIT = "pretokenizer-split"
    IGNORE_MERGES = "ignore-merges"
    MERGE_ORDER = "merge-order"
    SPACE_PREFIX = "space-prefix"
    WORDPIECE_CLEANING = "wordpiece-cleaning"
    TOKENIZER_MODEL = "tokenizer-model"
    NUL_TRUNCATED = "nul-truncated"
    BYTE_MAPPING = "byte-mapping"
    BYTE_MAPPED_SPLIT = "byte-mapped-split"
    VOCAB_MISMATCH = "vocab-mismatch"
    LOAD_REFUSED = "load-refused"
    CHARACTER = "character"


class Stage(enum.Enum):
    """Where in the port's pipeline a mechanism acts: the order `Model.predict` replays them in."""

    VERDICT = 0
    INPUT = 1
    TOKENIZER = 2
    OUTPUT = 3


def char_name(unit: bytes) -> str:
    """`U+0085 (NEXT LINE)`: a character for a label; an invalid byte as itself."""
    text = unit.decode("utf-8", errors="surrogateescape")
    if len(text) != 1 or 0xDC80 <= ord(text) <= 0xDCFF:
        return f"the bytes {unit!r}" if len(text) != 1 else f"the byte \\x{unit[0]:02X}"
    name = unicodedata.name(text, "") or {0x85: "NEXT LINE", 0: "NUL"}.get(ord(text), "")
    return f"U+{ord(text):04X}" + (f" ({name})" if name else f" '{visible(unit)}'")


def _some(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


@dataclass
class Mechanism:
    """One deviation of the port from llama.cpp. Subclasses say how to replay it."""

    kind: Kind
    stage: Stage
    # Its place among its stage's mechanisms: a C string is cut at NUL before anything reads it
    FIRST: ClassVar[bool] = False

    def key(self) -> Hashable:
        """Causes with equal keys fold into one."""
        return self.kind

    def absorb(self, other: Mechanism) -> None:
        """Take in the parameters of another mechanism with the same key (nothing to add by default)."""

    def applies(self, data: bytes, mode: Mode) -> bool:
        """Whether replaying it on this input can change anything: a cheap filter before replaying."""
        return True

    def transform(self, data: bytes) -> bytes:
        """What an input-stage mechanism makes of the input (the others leave it)."""
        return data

    def apply(self, ids: list[int]) -> list[int]:
        """What an output-stage mechanism makes of the ids (the others leave them)."""
        return ids

    def label(self) -> str:
        raise NotImplementedError


# ---- Stage.OUTPUT -----------------------------------------------------------------------------


@dataclass
class Boundary(Mechanism):
    """BOS or EOS missing or added (llama_tokenize_impl adds them with add_special as the vocab says),
    or WordPiece's [CLS]/[SEP] missing (llama_tokenize_impl's WPM case adds both with add_special:
    a binding adding BOS/EOS by hand leaves them out, the facts' add_sep says llama.cpp adds SEP).
    A missing one is missing where llama.cpp adds it (add_special); an added one is added in the
    modes it was seen in (`add_special`: the flag's values there)."""

    token: int = -1
    text: str = ""  # the token's text (a BOS that is a normal token, gpt-2's `,` 11, shows its piece)
    add_special: set[bool] = field(default_factory=set)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Boundary)
        self.add_special |= other.add_special

    @property
    def at_start(self) -> bool:
        return self.kind in (Kind.BOS_MISSING, Kind.BOS_ADDED, Kind.CLS_MISSING)

    @property
    def missing(self) -> bool:
        return self.kind in (Kind.BOS_MISSING, Kind.EOS_MISSING, Kind.CLS_MISSING, Kind.SEP_MISSING)

    def applies(self, data: bytes, mode: Mode) -> bool:
        return MODES[mode][0] if self.missing else MODES[mode][0] in self.add_special

    def apply(self, ids: list[int]) -> list[int]:
        edge = 0 if self.at_start else -1
        if not self.missing:
            return [self.token, *ids] if self.at_start else [*ids, self.token]
        if ids and ids[edge] == self.token:
            return ids[1:] if self.at_start else ids[:-1]
        return ids

    def label(self) -> str:
        name = {Kind.CLS_MISSING: "CLS", Kind.SEP_MISSING: "SEP"}.get(self.kind, "BOS" if self.at_start else "EOS")
        token = f"{name} token {self.text!r} ({self.token})"
        if self.missing:
            return f"does not add the {token} that llama.cpp adds with add_special"
        when = {frozenset({True}): " (add_special=true)", frozenset({False}): " (add_special=false)"}
        return f"adds the {token} where llama.cpp adds none{when.get(frozenset(self.add_special), '')}"


@dataclass
class Renumbered(Mechanism):
    """Tokens the port numbers differently: a special-token table from another release
    (`special-wrong-id`), or another vocabulary altogether (`vocab-mismatch`)."""

    remap: dict[int, int] = field(default_factory=dict)  # llama.cpp's id -> the port's
    texts: dict[int, str] = field(default_factory=dict)  # llama.cpp's ids' texts, for the label

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Renumbered)
        self.remap.update(other.remap)
        self.texts.update(other.texts)

    def apply(self, ids: list[int]) -> list[int]:
        return [self.remap.get(i, i) for i in ids]

    def label(self) -> str:
        shown = [f"{self.texts.get(a, '?')!r} as {b} (llama.cpp: {a})" for a, b in sorted(self.remap.items())]
        what = (
            "parses special tokens as other ids" if self.kind is Kind.SPECIAL_WRONG_ID else "numbers tokens differently"
        )
        return f"{what} than the GGUF vocabulary: {_some(shown, 3)}"


# ---- Stage.INPUT ------------------------------------------------------------------------------


# The strongest form first: on a minimal input two forms may change alike (`¾` under NFKC and
# NFKD), and a weaker one taken first cannot explain the stronger's other inputs, while a stronger
# one taken wrongly is replaced once the weaker one is found (`Explainer._reexamined`).
NORMAL_FORMS = {
    Kind.NORMALIZED_NFKD: "NFKD",
    Kind.NORMALIZED_NFKC: "NFKC",
    Kind.NORMALIZED_NFD: "NFD",
    Kind.NORMALIZED_NFC: "NFC",
}


@dataclass
class Normalized(Mechanism):
    """The port normalizes its text (Unicode normal form) before tokenizing; llama.cpp never does."""

    def applies(self, data: bytes, mode: Mode) -> bool:
        return not data.isascii()

    def transform(self, data: bytes) -> bytes:
        """The normal form of the text; invalid bytes stay as they are between the characters."""
        text = data.decode("utf-8", errors="surrogateescape")
        form: Any = NORMAL_FORMS[self.kind]
        return unicodedata.normalize(form, text).encode("utf-8", errors="surrogateescape")

    def label(self) -> str:
        form = NORMAL_FORMS[self.kind]
        return f"normalizes its input to {form} before tokenizing; llama.cpp tokenizes the bytes as given"


@dataclass
class Substituted(Mechanism):
    """The port reads characters as another one (U+3000 as a space: its own whitespace table)."""

    chars: dict[bytes, bytes] = field(default_factory=dict)
    target: bytes = b" "

    def key(self) -> Hashable:
        return (self.kind, "as", self.target)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Substituted)
        self.chars.update(other.chars)

    def applies(self, data: bytes, mode: Mode) -> bool:
        return any(holds(data, c) for c in self.chars)

    def transform(self, data: bytes) -> bytes:
        text = data.decode("utf-8", errors="surrogateescape")
        for char, target in self.chars.items():
            text = text.replace(char.decode("utf-8", "surrogateescape"), target.decode("utf-8", "surrogateescape"))
        return text.encode("utf-8", errors="surrogateescape")

    def label(self) -> str:
        return f"reads {_some([char_name(c) for c in sorted(self.chars)])} as {char_name(self.target)}"


@dataclass
class Replaced(Mechanism):
    """Bytes that are not UTF-8 read as U+FFFD before tokenizing, by one of two policies: one U+FFFD
    per maximal subpart of an invalid sequence (Python's and Rust's `errors="replace"`/lossy decoders,
    Unicode's recommended practice), or one per byte that does not start a valid sequence (Go's
    `[]rune(s)` and `range s`: an overlong `C0 80` or a surrogate is two or three U+FFFD). llama.cpp
    reads each byte it cannot decode as U+FFFD but decodes overlong forms and surrogates
    (unicode_cpts_from_utf8), and SentencePiece takes the raw bytes."""

    per_byte: bool | None = False  # Go's policy; else Python's; None: the port's answers cannot tell

    def key(self) -> Hashable:
        return self.kind

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Replaced)
        if self.per_byte is None:
            self.per_byte = other.per_byte

    def applies(self, data: bytes, mode: Mode) -> bool:
        return not is_utf8(data)

    def transform(self, data: bytes) -> bytes:
        if self.per_byte is False:
            return data.decode("utf-8", errors="replace").encode()
        text = data.decode("utf-8", errors="surrogateescape")  # each invalid byte its own surrogate
        return "".join("\ufffd" if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text).encode()

    def label(self) -> str:
        how = "U+FFFD (per byte or per maximal subpart: its answers do not tell)"
        if self.per_byte is not None:
            how = "one U+FFFD per byte (Go's decoding)" if self.per_byte else "U+FFFD (one per maximal subpart)"
        return f"reads bytes that are not valid UTF-8 as {how}; llama.cpp tokenizes the bytes themselves"


@dataclass
class NulTruncated(Mechanism):
    """The text is cut at its first NUL (a C binding passing a NUL-terminated string), before the
    port does anything else to it (GPT-2's byte mapping would make the NUL another character)."""

    FIRST: ClassVar[bool] = True

    def applies(self, data: bytes, mode: Mode) -> bool:
        return b"\0" in data

    def transform(self, data: bytes) -> bytes:
        return data.split(b"\0", 1)[0]

    def label(self) -> str:
        return "stops at the first NUL byte; llama.cpp tokenizes the whole input"


@dataclass
class ByteMapped(Mechanism):
    """GPT-2's byte-to-unicode mapping applied to the input of a vocabulary that has none (an SPM or
    raw-UTF-8 vocabulary tokenized as if it were byte-level BPE)."""

    def transform(self, data: bytes) -> bytes:
        from tokconf_reference.bpe import byte_level

        return byte_level(data).encode()

    def label(self) -> str:
        return "applies GPT-2's byte-to-unicode mapping to the input; this vocabulary has none"


@dataclass
class MappedBeforeSplit(Mechanism):
    """GPT-2's byte mapping applied before the pre-tokenizer splits the text, where llama.cpp maps
    each word after (unicode_regex_split, then unicode_byte_encoding_process): a space is `Ġ`, a
    letter to the regexes, and a character's bytes are stand-ins of their own classes, split apart
    (llama3.java's Tokenizer.encode). Replayed by the reference's BPE with `map_before_split`."""

    def label(self) -> str:
        return ("maps the input's bytes to GPT-2's stand-ins before its pre-tokenizer splits it (a space is `Ġ`, "
                "a letter to the regexes); llama.cpp splits the text, then maps each word")  # fmt: skip


@dataclass(frozen=True)
class RawRun:
    """A run of bytes a port hands to its byte-level BPE as they are (`RawBytes`): one word."""

    data: bytes


Piece = bytes | int | RawRun  # a text tokenized alone, a token, or raw bytes merged as one word
Words = Callable[[bytes], list[bytes] | None]  # the vocabulary's pre-tokenizer words of a valid text


@dataclass
class Segmenting(Mechanism):
    """A port that tokenizes its input in pieces where llama.cpp tokenizes it whole: each text piece
    is replayed as llama.cpp's answer for that piece alone (no BOS/EOS; special tokens parsed in it
    as the mode says, unless `parses_pieces` is off), each id kept, each raw run merged by the
    vocabulary's BPE, and BOS/EOS put around them as llama.cpp adds them (`Model`)."""

    parses_pieces: ClassVar[bool] = True
    tokens: dict[int, bytes] = field(default_factory=dict)  # id -> text: the tokens it concerns

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Segmenting)
        self.tokens.update(other.tokens)

    def segments(self, data: bytes, mode: Mode, words: Words = lambda _: None) -> list[Piece] | None:
        """The pieces, or None where the port tokenizes this input whole (`words`: the vocabulary's
        pre-tokenizer, for a mechanism that needs a text's last word)."""
        raise NotImplementedError

    def applies(self, data: bytes, mode: Mode) -> bool:
        return self.segments(data, mode) is not None

    def _names(self) -> str:
        return _some([f"{text.decode('utf-8', 'replace')!r} ({token})" for token, text in sorted(self.tokens.items())])


@dataclass
class SpecialStartOnly(Segmenting):
    """Special tokens matched only where their text opens the input, the rest tokenized as text: a
    binding checking `text.startswith(special)` so that a chat prompt's leading token is one token,
    there in every mode (`plain`); or gpt-tokenizer 4's `findNextSpecialToken`, whose sticky regex
    (`new RegExp(escaped.join('|'), 'y')`, `lastIndex = searchIndex`) matches only at the scan
    position, only with special parsing on, and which returns `match.index + searchIndex` for a
    match whose index is already `searchIndex` (`doubled`): a token right after a leading one is
    placed at twice its offset, the text between kept as text (`<|endoftext|><|endoftext|>` →
    [50256, <text of <|endoftext|>>, 50256]) and the scan resumed past it. llama.cpp keeps the text
    as text with parse_special off and parses the token wherever it is with it on. `tokens` are
    every special text the port knows."""

    parses_pieces: ClassVar[bool] = False
    plain: bool = True  # parses the leading token with parse_special off too
    doubled: bool = False  # gpt-tokenizer's scan: a token found at offset s is taken to start at 2s

    def key(self) -> Hashable:
        return (self.kind, self.plain, self.doubled)

    def segments(self, data: bytes, mode: Mode, words: Words = lambda _: None) -> list[Piece] | None:
        parse_special = MODES[mode][1]
        if not parse_special and not self.plain:
            return None
        ordered = sorted(self.tokens.items(), key=lambda item: (-len(item[1]), item[0]))
        text = data.decode("utf-8", errors="surrogateescape").encode("utf-16-le", errors="surrogatepass")
        pieces: list[Piece] = []
        at = 0  # the scan position in UTF-16 code units (JavaScript's string indices)
        while at * 2 <= len(text):
            rest = _utf8(text[at * 2 :])
            token = next((t for t, special in ordered if rest.startswith(special)), None)
            if token is None:
                break
            start = 2 * at if self.doubled else at
            pieces += [p for p in (_utf8(text[at * 2 : start * 2]), token) if p != b""]
            at = start + len(self.tokens[token])  # special texts are ASCII: one code unit a byte
            if not self.doubled:
                break
        if pieces:
            tail = _utf8(text[at * 2 :])
            return [*pieces, tail] if tail else pieces
        if parse_special and any(special in data for special in self.tokens.values()):
            return [data]  # parsed nowhere else
        return None

    def label(self) -> str:
        where = "only at the start of the text"
        if self.doubled:
            where += " (a second one right after it at twice its offset, the text between kept as text)"
        if self.plain:
            return (
                f"parses special tokens ({self._names()}) {where}, there even with parse_special=false; "
                "llama.cpp parses them anywhere with parse_special and nowhere without"
            )
        return (
            f"parses special tokens ({self._names()}) {where} with parse_special=true; llama.cpp parses them anywhere"
        )


def _utf8(units: bytes) -> bytes:
    """UTF-16-LE code units back to the input's bytes (invalid bytes as they came)."""
    return units.decode("utf-16-le", errors="surrogatepass").encode("utf-8", errors="surrogateescape")


@dataclass
class SpecialIsolated(Segmenting):
    """Special-token texts cut out of the input with parse_special off, each piece (the special text
    too) then tokenized as text on its own: a library splitting on its special tokens before it
    looks at the flag. llama.cpp tokenizes the whole input as one text (tokenizer_st_partition cuts
    nothing without parse_special but user-defined tokens)."""

    def segments(self, data: bytes, mode: Mode, words: Words = lambda _: None) -> list[Piece] | None:
        if MODES[mode][1] or not any(text in data for text in self.tokens.values()):
            return None
        pieces: list[bytes] = [data]
        for text in sorted(set(self.tokens.values()), key=lambda t: (-len(t), t)):  # longest first
            cut: list[bytes] = []
            for piece in pieces:
                if piece in self.tokens.values():
                    cut.append(piece)
                    continue
                parts = piece.split(text)
                for i, part in enumerate(parts):
                    if i:
                        cut.append(text)
                    if part:
                        cut.append(part)
            pieces = cut
        return list(pieces)

    def label(self) -> str:
        return (
            f"cuts the texts of {self._names()} out of the input with parse_special=false and tokenizes each "
            "piece as text on its own; llama.cpp tokenizes the input as one text"
        )


@dataclass
class RawBytes(Segmenting):
    """Bytes that are not valid UTF-8 (Python's strict decoder decides which) handed to the
    byte-level BPE as they are, each run of them one word, the valid text around them tokenized
    apart: a byte-level library working on bytes. llama.cpp reads them otherwise:
    unicode_cpts_from_utf8 (src/unicode.cpp) calls unicode_cpt_from_utf8 at each offset, which
    throws on a continuation or F8-FF byte where a sequence starts and on a lead byte whose
    sequence is cut short; the catch emits one U+FFFD and moves on by *one* byte (a truncated
    `E4 B8` is two U+FFFD, where Python's `errors="replace"` makes one), and overlong forms (`C0 80`)
    decode, since only the top bits are checked (`tokconf_reference.unicode.decode` is that rule)."""

    def segments(self, data: bytes, mode: Mode, words: Words = lambda _: None) -> list[Piece] | None:
        if is_utf8(data):
            return None
        text = data.decode("utf-8", errors="surrogateescape")
        out: list[Piece] = []
        for n, part in enumerate(_INVALID_RUN.split(text)):
            if n % 2:
                out.append(RawRun(part.encode("utf-8", errors="surrogateescape")))
            elif part:
                out.append(part.encode("utf-8"))
        return out

    def label(self) -> str:
        return (
            "tokenizes bytes that are not valid UTF-8 as the raw bytes (a run of them one word); llama.cpp "
            "reads each byte it cannot decode as U+FFFD (unicode_cpts_from_utf8) and decodes overlong forms"
        )


@dataclass
class RawTail(Segmenting):
    """Everything from the first byte that is not valid UTF-8 on merged as raw bytes in one piece,
    together with the last word of the valid text before it: tiktoken's `_encode_bytes` (the valid
    prefix encoded as text, its last piece's tokens decoded back to bytes, and those bytes with the
    rest of the input given to `byte_pair_encode` whole; no special token parsed). The other words
    keep the tokens they have in the prefix tokenized whole. llama.cpp reads the
    bad bytes as U+FFFD one at a time (`RawBytes`) and splits the text after them into words."""

    parses_pieces: ClassVar[bool] = False  # encode_ordinary: no special token is parsed there

    def key(self) -> Hashable:
        return (self.kind, "tail")

    def applies(self, data: bytes, mode: Mode) -> bool:
        return not is_utf8(data)

    def segments(self, data: bytes, mode: Mode, words: Words = lambda _: None) -> list[Piece] | None:
        try:
            data.decode("utf-8")
            return None
        except UnicodeDecodeError as error:
            start = error.start
        prefix = data[:start]
        split = words(prefix) if prefix else []
        if split is None:
            return None
        # the words before the last one each alone, as the prefix tokenized whole splits them: the
        # text before the last word, tokenized alone, may split otherwise at its new end (` <U+205F>`
        # is one word at the end of a text, ` ` and `<U+205F>` before a letter)
        return [*split[:-1], RawRun((split[-1] if split else b"") + data[start:])]

    def label(self) -> str:
        return (
            "merges everything from the first byte that is not valid UTF-8 on as raw bytes, with the word "
            "before it (tiktoken's _encode_bytes); llama.cpp reads each such byte as U+FFFD and splits the rest"
        )


@dataclass
class Latin1Bytes(Segmenting):
    """Each byte that is not valid UTF-8 read as the code point of its value (Latin-1) by the
    pre-tokenizer, so it joins a word as a letter (0x85 and 0xA0 as whitespace), and merged by the
    byte-level BPE as the raw byte it is: memvanta's scanner (its decoder falls back to the byte's value
    for the character classes and keeps the byte for the merges). llama.cpp reads each such byte as
    U+FFFD (unicode_cpts_from_utf8), neither letter nor whitespace."""

    def key(self) -> Hashable:
        return (self.kind, "latin-1")

    def applies(self, data: bytes, mode: Mode) -> bool:
        return not is_utf8(data)

    def segments(self, data: bytes, mode: Mode, words: Words = lambda _: None) -> list[Piece] | None:
        if is_utf8(data):
            return None
        text = data.decode("utf-8", errors="surrogateescape")  # an invalid byte b is the surrogate U+DC00+b
        split = words("".join(chr(ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in text).encode())
        if split is None:
            return None
        out: list[Piece] = []
        at = 0
        for word in split:
            size = len(word.decode("utf-8"))
            raw = text[at : at + size].encode("utf-8", errors="surrogateescape")
            out.append(raw if is_utf8(raw) else RawRun(raw))
            at += size
        return out if at == len(text) else None

    def label(self) -> str:
        return (
            "reads each byte that is not valid UTF-8 as the code point of its value (Latin-1: a letter, 0x85 "
            "and 0xA0 whitespace) in its pre-tokenizer and merges the raw byte; llama.cpp reads each such byte "
            "as U+FFFD (unicode_cpts_from_utf8)"
        )


_INVALID_RUN = re.compile("([\udc80-\udcff]+)")


# ---- Stage.TOKENIZER (replayed on the reference tokenizer) ------------------------------------


@dataclass
class SpacePrefix(Mechanism):
    """SentencePiece's dummy prefix: llama.cpp puts a space (U+2581) before the first text fragment
    and after each special token where the vocabulary's add_space_prefix says so (llm_tokenizer_spm
    via llama_tokenize_impl's `is_prev_special`, UGM's normalize); the port does not (ollama's
    sentencepiece.go escapes spaces and never adds one), or adds it where llama.cpp does not."""

    add: bool = False  # what the port does

    def key(self) -> Hashable:
        return (self.kind, self.add)

    def label(self) -> str:
        if self.add:
            return "adds a space prefix (U+2581) before the text; llama.cpp adds none for this vocabulary"
        return "does not add SentencePiece's space prefix (U+2581); llama.cpp adds it (add_space_prefix)"


@dataclass
class SpecialStrip(Mechanism):
    """The LSTRIP/RSTRIP attributes of special tokens not applied: llama.cpp's tokenizer_st_partition
    eats the ASCII whitespace left of an LSTRIP token and right of an RSTRIP one (phi-3's specials,
    `<mask>` of jina-v2 and nomic-bert-moe: llama_vocab::impl::load sets them by model name); a port
    cutting special texts out without them keeps that whitespace as text."""

    def label(self) -> str:
        return (
            "keeps the whitespace beside special tokens that llama.cpp strips (their lstrip/rstrip attributes, "
            "tokenizer_st_partition)"
        )


@dataclass
class SymbolCut(Mechanism):
    """SentencePiece's symbols cut at valid UTF-8 only: a lead byte whose continuation bytes are not
    there is a symbol of its own and the next one starts right after it (memvanta). llama.cpp's
    llm_tokenizer_spm_session takes `unicode_len_utf8(lead)` bytes whatever they are (`\\xe0 `
    is one symbol, the escaped space's bytes with it). Replayed on the reference's `cut_valid`."""

    def applies(self, data: bytes, mode: Mode) -> bool:
        return not is_utf8(data)

    def label(self) -> str:
        return (
            "cuts a lead byte without its continuation bytes as a symbol of its own; llama.cpp's SentencePiece "
            "takes as many bytes as the lead byte says (unicode_len_utf8), whatever follows"
        )


@dataclass
class MergeOrder(Mechanism):
    """Equal-rank BPE merges taken in another order than llama.cpp's leftmost first
    (llm_bigram_bpe::comparator breaks rank ties by position): the rightmost first, or the order a
    binary heap comparing ranks alone pops them in (ollama's gods `binaryheap` over `cmp.Compare(rank)`:
    `!!!!!!` is merged from the right). Replayed on the reference's `tie_break` switch."""

    tie_break: str = "heap"

    def label(self) -> str:
        how = {"right": "the rightmost first", "heap": "in the order of a heap comparing ranks alone"}[self.tie_break]
        return f"merges equal-rank BPE pairs {how}; llama.cpp merges the leftmost first"


@dataclass
class WordPieceCleaning(Mechanism):
    """Steps of BERT's text cleaning (llm_tokenizer_wpm_session::preprocess) the port leaves out:
    `off` names them (`tokconf_reference.wpm.Cleaning`'s switches), one cause for all of them."""

    off: set[str] = field(default_factory=set)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, WordPieceCleaning)
        self.off |= other.off

    def cleaning(self) -> Any:
        from tokconf_reference.wpm import Cleaning

        return Cleaning(**dict.fromkeys(self.off, False))

    def label(self) -> str:
        said = {
            "strip_accents": "strip accents", "drop_controls": "drop controls and U+FFFD",
            "ascii_symbols": "split ASCII symbols off as punctuation",
            "whole_punctuation": "cut multi-byte punctuation out whole (it cuts it by bytes)",
            "hf_cjk_bound": "keep U+2B820-U+2B91F inside words (llama.cpp's CJK Extension E starts at U+2B920, as "
            "HF's; it splits them off as ideographs, as the Unicode block says)",
        }  # fmt: skip
        steps = " or ".join(said[name] for name in sorted(self.off))
        return f"does not {steps} in WordPiece's text cleaning; llama.cpp does"


@dataclass
class TokenizerModel(Mechanism):
    """Another tokenizer model run on the vocabulary: WordPiece's greedy longest match where the file
    says Unigram (ollama's nomicbert model tokenizes nomic-bert-moe's `t5` vocabulary with WordPiece)."""

    model: str = "wpm"
    vocab_model: str = ""

    def label(self) -> str:
        model, vocab = self.model.upper(), self.vocab_model.upper()
        return f"tokenizes this {vocab} vocabulary with {model}; llama.cpp uses the vocabulary's model"


@dataclass
class Reclassed(Mechanism):
    """Characters in the wrong whitespace class of the pre-tokenizer (unicode_regex_split's `\\s`):
    one whitespace table of the port's own (JavaScript's `\\s` leaves U+0085 out and takes U+FEFF
    in), so both directions are one cause."""

    flips: dict[int, bool] = field(default_factory=dict)  # code point -> whitespace to the port

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Reclassed)
        self.flips.update(other.flips)

    def applies(self, data: bytes, mode: Mode) -> bool:
        text = data.decode("utf-8", errors="surrogateescape")
        return any(chr(c) in text for c in self.flips)

    def label(self) -> str:
        def names(space: bool) -> str:
            return _some([char_name(chr(c).encode()) for c in sorted(self.flips) if self.flips[c] is space])

        if all(self.flips.values()):
            return f"treats {names(True)} as whitespace in its pre-tokenizer; llama.cpp does not"
        if not any(self.flips.values()):
            return f"does not treat {names(False)} as whitespace in its pre-tokenizer; llama.cpp does"
        return (
            f"does not treat {names(False)} as whitespace and treats {names(True)} as whitespace in its "
            "pre-tokenizer; llama.cpp the other way round"
        )


@dataclass
class Widening(Mechanism):
    """A tokenizer mechanism over a set of code points, widened to the culprit's whole class where
    the port fails alike on the others (`Explainer._widened`)."""

    points: set[int] = field(default_factory=set)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Widening)
        self.points |= other.points

    def applies(self, data: bytes, mode: Mode) -> bool:
        text = data.decode("utf-8", errors="surrogateescape")
        return any(chr(c) in text for c in self.points)

    def table(self) -> dict[int, str]:
        """What the pre-tokenizer's regexes see of these code points (pretokenize.Classes)."""
        return {}

    def regexes(self, current: list[str]) -> list[str]:
        return current

    def _names(self) -> str:
        names = _some([char_name(chr(c).encode()) for c in sorted(self.points)], 3)
        categories = {unicodedata.category(chr(c)) for c in self.points}
        return f"{names} (all of category {categories.pop()})" if len(categories) == 1 else names


@dataclass
class NumberClass(Widening):
    """Code points llama.cpp counts as numbers (`\\p{N}`: its tables put Nd, Nl and No there) that the
    port's pre-tokenizer does not (a hand-built table with Nd and No only): replayed as neither
    letters nor numbers."""

    def table(self) -> dict[int, str]:
        from tokconf_reference.pretokenize import OTHER_BYTE

        return dict.fromkeys(self.points, OTHER_BYTE)

    def label(self) -> str:
        return f"does not read {self._names()} as numbers (\\p{{N}}) in its pre-tokenizer; llama.cpp does"


class LetterRule(enum.Enum):
    """How a port's letters (`\\p{L}`) are drawn: a table of code points, or a rule over all of them."""

    TABLE = "table"  # the code points of `LetterClass.points`, as far as found
    BEYOND_ASCII = "beyond-ascii"  # every non-ASCII code point but whitespace a letter (memvanta's `u_letter`)
    ASCII_ONLY = "ascii-only"  # no non-ASCII code point a letter (a scanner's `[A-Za-z]`)


@dataclass
class LetterClass(Widening):
    """Code points the port's pre-tokenizer reads as letters (`\\p{L}`) where llama.cpp's tables do not
    (`letter`: memvanta's scanner calls every non-ASCII code point but whitespace a letter, so `י׳` is
    one word), or does not read as letters where llama.cpp does (a runtime's older Unicode tables:
    Java 17's `Character` misses Unicode 14's letters; a scanner with ASCII letters only). Replayed
    with the letters' class byte, or as neither letter nor number."""

    letter: bool = True
    rule: LetterRule = LetterRule.TABLE

    def key(self) -> Hashable:
        return (self.kind, self.letter)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, LetterClass)
        super().absorb(other)
        if self.rule is LetterRule.TABLE:
            self.rule = other.rule

    def applies(self, data: bytes, mode: Mode) -> bool:
        if self.rule is LetterRule.TABLE:
            return super().applies(data, mode)
        return not data.isascii()

    def table(self) -> dict[int, str]:
        from tokconf_reference.pretokenize import LETTER_BYTE, OTHER_BYTE

        if self.rule is LetterRule.BEYOND_ASCII:
            return _beyond_ascii_letters()
        if self.rule is LetterRule.ASCII_ONLY:
            return _no_letters_beyond_ascii()
        return dict.fromkeys(self.points, LETTER_BYTE if self.letter else OTHER_BYTE)

    def label(self) -> str:
        # A rule's examples are code points it reads otherwise than llama.cpp: the points met may hold other
        # characters of a minimal input (memvanta's label showed U+0020).
        drawn = None if self.rule is LetterRule.TABLE else self.table()
        shown = _some([char_name(chr(c).encode()) for c in sorted(self.points) if drawn is None or c in drawn], 3)
        if self.rule is LetterRule.BEYOND_ASCII:
            return (f"reads every non-ASCII code point but whitespace as a letter (\\p{{L}}) in its pre-tokenizer "
                    f"(as {shown}); llama.cpp reads each by its category")  # fmt: skip
        if self.rule is LetterRule.ASCII_ONLY:
            return (f"reads no non-ASCII code point as a letter (\\p{{L}}) in its pre-tokenizer, its letters are "
                    f"A-Z and a-z (as {shown}); llama.cpp reads each by its category")  # fmt: skip
        categories = sorted({unicodedata.category(chr(c)) for c in self.points})
        names = self._names() if len(categories) == 1 else (
            f"{shown} ({len(self.points)} code points of categories {', '.join(categories)})"
        )  # fmt: skip
        if self.letter:
            return f"reads {names} as letters (\\p{{L}}) in its pre-tokenizer; llama.cpp does not"
        return f"does not read {names} as letters (\\p{{L}}) in its pre-tokenizer; llama.cpp does"


@functools.cache
def _beyond_ascii_letters() -> dict[int, str]:
    """Every non-ASCII code point llama.cpp reads as neither letter nor whitespace, as a letter."""
    from tokconf_reference.pretokenize import LETTER_BYTE, LLAMA_CLASSES

    return {
        p: LETTER_BYTE for p, c in enumerate(LLAMA_CLASSES.collapse) if p >= 0x80 and c not in (LETTER_BYTE, "\x0b")
    }


@functools.cache
def _no_letters_beyond_ascii() -> dict[int, str]:
    """Every non-ASCII code point llama.cpp reads as a letter, in no class."""
    from tokconf_reference.pretokenize import LETTER_BYTE, LLAMA_CLASSES, OTHER_BYTE

    return {p: OTHER_BYTE for p, c in enumerate(LLAMA_CLASSES.collapse) if p >= 0x80 and c == LETTER_BYTE}


# Where a whitespace code point's replay stands in the regexes' subject (re.ASCII: the ASCII ones).
_STAND_INS = (0x0B, 0x0C, 0x09)


@dataclass
class ContextRule(Widening):
    """A rule of the pre-tokenizer that the port breaks right after some whitespace (`points`):
    a contraction not matched (`'t` after `\\n` stays `'`, `t`), or a word's optional leading space
    not taken (` x` after a tab is ` `, `x`): a hand-written scanner tracking the previous code
    point. Replayed by a lookbehind in the vocabulary's regexes (`'` and ` ?` outside classes)."""

    contraction: bool = True
    prefix: bool = False

    def key(self) -> Hashable:
        return (self.kind, self.contraction, self.prefix)

    def _marks(self) -> tuple[str, str]:
        """The subject's stand-ins for non-ASCII whitespace in `points` and for the rest."""
        inside = next((c for c in _STAND_INS if c in self.points), _STAND_INS[0])
        outside = next((c for c in _STAND_INS if c not in self.points), _STAND_INS[0])
        return chr(inside), chr(outside)

    def table(self) -> dict[int, str]:
        from tokconf_reference.unicode import WHITESPACE

        inside, outside = self._marks()
        return {c: inside if c in self.points else outside for c in WHITESPACE if c >= 0x80}

    def regexes(self, current: list[str]) -> list[str]:
        marks = {chr(c) for c in self.points if c < 0x80} | {self._marks()[0]}
        look = "(?<![" + "".join(f"\\x{ord(m):02x}" for m in sorted(marks)) + "])"
        out = []
        for regex in current:
            if self.contraction:
                regex = _outside_classes(regex, "'", look + "'")
            if self.prefix:
                regex = _outside_classes(regex, " \\?", f"(?:{look} )?")
            out.append(regex)
        return out

    def label(self) -> str:
        from tokconf_reference.unicode import WHITESPACE

        rules = (("matches no contraction", self.contraction), ("drops a word's leading space", self.prefix))
        broken = " and ".join(what for what, on in rules if on)
        spared = sorted(set(WHITESPACE) - self.points)  # llama.cpp's whitespace (unicode_set_whitespace)
        if len(self.points) > len(spared) and len(spared) <= 4:
            names = "any whitespace but " + _some([char_name(chr(c).encode()) for c in spared])
        else:
            names = self._names()
        return f"{broken} right after {names}; llama.cpp's pre-tokenizer does"


@dataclass(frozen=True)
class SplitRule:
    """A pre-tokenizer regex other than the vocabulary's: what it is, and how to make it from the
    vocabulary's regexes (a substitution in their source) or another type's (`bpe.PRE_REGEXES`)."""

    name: str
    description: str
    find: str = ""  # a regex over the regexes' source, and what each match becomes
    replace: str = ""
    pre_type: str = ""  # or: the whole regex list of another pre-tokenizer type
    across: bool = False  # `find` may span `[...]` classes (it is matched on the whole source)
    none: bool = False  # or: no regex at all, the text one word

    def regexes(self, current: list[str]) -> list[str] | None:
        """The port's regexes, or None where the rule changes nothing for this vocabulary."""
        from tokconf_reference.bpe import PRE_REGEXES

        if self.none:
            return [] if current else None
        if self.pre_type:
            other = PRE_REGEXES[self.pre_type]
            return None if other == current else list(other)
        if self.across:
            changed = [re.sub(self.find, lambda _: self.replace, r) for r in current]
        else:
            changed = [_outside_classes(r, self.find, self.replace) for r in current]
        return None if changed == current else changed


def _outside_classes(regex: str, find: str, replace: str) -> str:
    """`re.sub(find, replace, …)` on the parts of a regex's source outside `[...]` classes: a
    quantifier cannot go inside a class. `replace` is taken as it is (no group references)."""
    parts = re.split(r"(\[(?:\\.|[^\]\\])*\])", regex)  # odd parts are classes
    return "".join(part if i % 2 else re.sub(find, lambda _: replace, part) for i, part in enumerate(parts))


_DIGIT = re.escape("\\p{N}")
SPLIT_RULES = (
    SplitRule("digits-one", "splits numbers one digit at a time", _DIGIT + r"(?:\{1,3\}|\+)", r"\p{N}"),
    SplitRule("digits-run", "keeps a run of digits whole", _DIGIT + r"\{1,3\}", r"\p{N}+"),
    SplitRule("digits-three", "splits numbers in groups of up to three digits", _DIGIT + r"(?![{+])", r"\p{N}{1,3}"),
    SplitRule(
        "no-lookahead",
        "keeps a whitespace run before a word whole (no `\\s+(?!\\S)`)",
        re.escape("\\s+(?!\\S)"),
        "\\s+",
    ),
    SplitRule(
        "contraction-ends-run",
        "ends a run of symbols before a contraction unless a space leads it (`>'d` is `>`, `'d`; ` >'d` one run)",
        re.escape(" ?[^\\s\\p{L}\\p{N}]+"),
        " [^\\s\\p{L}\\p{N}]+|[^\\s\\p{L}\\p{N}](?:(?!'(?:s|t|re|ve|m|ll|d))[^\\s\\p{L}\\p{N}])*",
        across=True,
    ),
    SplitRule("gpt2", "splits words with GPT-2's regex", pre_type="gpt2"),
    SplitRule("llama3", "splits words with Llama 3's regex", pre_type="llama3"),
    SplitRule("qwen2", "splits words with Qwen2's regex", pre_type="qwen2"),
    SplitRule("no-split", "splits no words (no pre-tokenizer: BPE over the whole text)", none=True),
)


@dataclass
class Resplit(Mechanism):
    """Words cut where llama.cpp's pre-tokenizer does not cut them (or the reverse)."""

    rule: SplitRule = SPLIT_RULES[0]
    pre: str = ""  # the vocabulary's pre-tokenizer type, for the label
    alike: tuple[SplitRule, ...] = ()  # other rules the port's answers fit as well (no id tells them apart)

    def key(self) -> Hashable:
        return (self.kind, self.rule.name)

    def rules(self) -> tuple[SplitRule, ...]:
        """The rule named and those the port's answers fit as well."""
        return (self.rule, *self.alike)

    def absorb(self, other: Mechanism) -> None:
        """Met again through another minimal input: the rules both fit."""
        assert isinstance(other, Resplit)
        both = [r for r in SPLIT_RULES if r in self.rules() and r in other.rules()]
        if both:
            self.rule, self.alike = both[0], tuple(both[1:])

    def label(self) -> str:
        said = self.rule.description
        if self.alike:  # Llama 3's and Qwen2's regexes on a vocabulary without multi-digit tokens
            others = " or ".join(r.description.removeprefix("splits words with ") for r in self.alike)
            said += f" (or {others}: this vocabulary's ids do not tell them apart)"
        return f"{said}; llama.cpp's {self.pre} pre-tokenizer does not"


@dataclass
class MergesIgnored(Mechanism):
    """`ignore_merges` (llama_vocab's flag for the llama3 family): a word the vocabulary holds whole
    is one token, whatever the merges would make of it. A port may do the whole-word lookup only up
    to a length (`over`: a fixed-size key buffer), merging longer words pair by pair."""

    ignore: bool = False  # what the port does
    over: int = -1  # the port looks words up whole only up to this many bytes (-1: no bound)

    def label(self) -> str:
        if self.ignore:
            return "takes a word the vocabulary holds whole as one token; llama.cpp merges it (no ignore_merges)"
        if self.over >= 0:
            return (
                f"splits a word over {self.over} bytes the vocabulary holds whole by its merges (its whole-word "
                "lookup stops there); llama.cpp takes it whole (ignore_merges)"
            )
        return "splits a word the vocabulary holds whole by its merges; llama.cpp takes it whole (ignore_merges)"


@dataclass
class SpecialsCut(Mechanism):
    """Which special-token texts are cut out of the text (tokenizer_st_partition): the port does
    not cut some that llama.cpp cuts (`special-not-parsed`), or cuts some llama.cpp keeps as text
    (`special-parsed`), in the modes of one parse_special."""

    parse_special: bool = True
    tokens: dict[int, bytes] = field(default_factory=dict)  # id -> text

    def key(self) -> Hashable:
        return (self.kind, self.parse_special)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, SpecialsCut)
        self.tokens.update(other.tokens)

    def applies(self, data: bytes, mode: Mode) -> bool:
        return MODES[mode][1] == self.parse_special and any(text in data for text in self.tokens.values())

    def label(self) -> str:
        names = _some([f"{text.decode('utf-8', 'replace')!r} ({token})" for token, text in sorted(self.tokens.items())])
        flag = f"parse_special={str(self.parse_special).lower()}"
        if self.kind is Kind.SPECIAL_NOT_PARSED:
            return f"tokenizes the text of {names} as plain text where llama.cpp parses the token ({flag})"
        return f"parses {names} as the token where llama.cpp keeps the text ({flag})"


# ---- Stage.VERDICT ----------------------------------------------------------------------------


@dataclass
class Refusing(Mechanism):
    """The port refuses inputs llama.cpp tokenizes: every one that is not valid UTF-8
    (`invalid-utf8-refused`), or those holding certain characters, or the empty input (`refused`),
    or every input over `over` bytes (`too-long-refused`: a length limit llama.cpp does not have); or it
    answers where llama.cpp refuses (`not-refused`, where llama.cpp aborts)."""

    chars: set[bytes] = field(default_factory=set)  # `refused`: characters every refused input holds
    over: int = -1  # `too-long-refused`: the longest input it takes, in bytes

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Refusing)
        self.chars |= other.chars
        self.over = min(self.over, other.over)

    def applies(self, data: bytes, mode: Mode) -> bool:
        return self.kind is Kind.NOT_REFUSED or self.refuses(data)

    def refuses(self, data: bytes) -> bool:
        if self.kind is Kind.INVALID_UTF8_REFUSED:
            return not is_utf8(data)
        if self.kind is Kind.TOO_LONG_REFUSED:
            return len(data) > self.over
        if self.kind is not Kind.REFUSED:
            return False
        return data == b"" if not self.chars else any(holds(data, c) for c in self.chars)

    def key(self) -> Hashable:
        return (self.kind, not self.chars)  # the empty input refused is not a character refused

    def label(self) -> str:
        if self.kind is Kind.INVALID_UTF8_REFUSED:
            return "refuses input that is not valid UTF-8; llama.cpp tokenizes it"
        if self.kind is Kind.NOT_REFUSED:
            return "gives ids where llama.cpp refuses the input (llama.cpp aborts on it)"
        if self.kind is Kind.TOO_LONG_REFUSED:
            return f"refuses input over {self.over} bytes; llama.cpp tokenizes it"
        if not self.chars:
            return "refuses the empty input; llama.cpp tokenizes it"
        return f"refuses input holding {_some([char_name(c) for c in sorted(self.chars)])}; llama.cpp tokenizes it"


@dataclass
class LoadRefusal(Mechanism):
    """A llama.cpp (or a binding of one) refuses to load the vocabulary the recording's build loaded
    (`llama_model_load` failed: a pre-tokenizer name it does not know, a newer GGUF key): every case
    of it fails for that one reason, so there is nothing to shrink or replay."""

    reason: str = ""  # the engine's: "refused to load a vocabulary llama.cpp bN loads: <llama.cpp's reason>"

    def label(self) -> str:
        return self.reason


@dataclass
class Character(Mechanism):
    """No known mechanism: every minimal input of these failures needs one of these characters.
    `culprits` is every character of the culprit's class (`classes.CharClass`) that, put in its
    place in a minimal input, fails too (asked of the port and of llama.cpp); `family` names the
    class, `spared` the members that pass. `templates` are the minimal inputs with the culprit each
    was found with: a case is under the cause when it holds one with any culprit in its place."""

    culprit: bytes = b""
    culprits: set[bytes] = field(default_factory=set)
    family: str = ""
    spared: list[bytes] = field(default_factory=list)
    templates: set[tuple[bytes, bytes]] = field(default_factory=set)
    alone: bool = True  # whether the culprit fails alone: a label never blames one the port gets right alone

    def key(self) -> Hashable:
        return (self.kind, self.family or self.culprit, frozenset(self.culprits))

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Character)
        self.templates |= other.templates
        self.culprits |= other.culprits
        self.spared = [c for c in self.spared if c not in self.culprits]

    def variants(self) -> list[bytes]:
        """Every minimal input with every culprit in its culprit's place, shortest first."""
        from ...core.shrink import units

        out: set[bytes] = set()
        for minimal, culprit in self.templates:
            parts = units(minimal)
            for other in self.culprits or {culprit}:
                out.add(b"".join(other if p == culprit else p for p in parts))
        return sorted(out, key=lambda v: (len(v), v))

    def label(self) -> str:
        if not self.culprit:
            return "fails on the empty input; no switch of the tokenizer reproduces the port's ids"
        shortest = min((t for t, _ in self.templates), key=lambda t: (len(t), t), default=self.culprit)
        if not self.alone:
            return (
                f"fails on inputs like '{visible(shortest)}' (each character alone passes); no switch of the "
                "tokenizer reproduces the port's ids"
            )
        if self.family:
            but = f" but {_some([char_name(c) for c in self.spared], 3)}" if self.spared else ""
            what = f"any {self.family}{but}"
        else:
            what = _some([char_name(c) for c in sorted(self.culprits | {self.culprit})])
        where = f" (as in '{visible(shortest)}')" if shortest != self.culprit else ""
        return f"fails on inputs holding {what}{where}; no switch of the tokenizer reproduces the port's ids"
