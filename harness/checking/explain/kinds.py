"""What a port does wrong, as mechanisms that can be replayed.

Each cause `--explain` names is a `Mechanism`: a deviation from llama.cpp that, applied to llama.cpp's
tokenizer, gives the port's answer. A case belongs to a cause only when replaying the cause's
mechanism (with the other causes the case needs) turns llama.cpp's answer into the port's, exactly:
that is the "fix" of the kind, run backwards. The mechanisms act at one of four stages:

- `Stage.INPUT`: the port changes the input first (NFC, a NUL-terminated string, GPT-2's byte
  mapping, a character taken for another);
- `Stage.TOKENIZER`: the port's tokenizer differs (a character's whitespace class, the
  pre-tokenizer's split rule, `ignore_merges`, which special tokens are cut out): replayed on the
  reference tokenizer (`reference_impl`) with that one difference;
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
import re
import unicodedata
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ...core.outcome import MODES, Mode, is_utf8
from ...core.render import visible
from ...core.shrink import holds


class Kind(enum.Enum):
    """The named kinds of cause (docs/checking.md, "Explaining failures")."""

    BOS_MISSING = "bos-missing"
    BOS_ADDED = "bos-added"
    EOS_MISSING = "eos-missing"
    EOS_ADDED = "eos-added"
    INVALID_UTF8_REFUSED = "invalid-utf8-refused"
    INVALID_UTF8_REPLACED = "invalid-utf8-replaced"
    REFUSED = "refused"
    NOT_REFUSED = "not-refused"
    SPECIAL_NOT_PARSED = "special-not-parsed"
    SPECIAL_WRONG_ID = "special-wrong-id"
    SPECIAL_PARSED = "special-parsed"
    NORMALIZED_NFC = "normalized-nfc"
    NORMALIZED_NFD = "normalized-nfd"
    NORMALIZED_NFKC = "normalized-nfkc"
    NORMALIZED_NFKD = "normalized-nfkd"
    WHITESPACE_CLASS = "whitespace-class"
    PRETOKENIZER_SPLIT = "pretokenizer-split"
    IGNORE_MERGES = "ignore-merges"
    NUL_TRUNCATED = "nul-truncated"
    BYTE_MAPPING = "byte-mapping"
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
    """BOS or EOS missing or added (llama_tokenize_impl adds them with add_special as the vocab says).
    A missing one is missing where llama.cpp adds it (add_special); an added one is added in the
    modes it was seen in (`add_special`: the flag's values there)."""

    token: int = -1
    text: str = ""
    add_special: set[bool] = field(default_factory=set)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Boundary)
        self.add_special |= other.add_special

    @property
    def at_start(self) -> bool:
        return self.kind in (Kind.BOS_MISSING, Kind.BOS_ADDED)

    @property
    def missing(self) -> bool:
        return self.kind in (Kind.BOS_MISSING, Kind.EOS_MISSING)

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
        token = f"{'BOS' if self.at_start else 'EOS'} token {self.text!r} ({self.token})"
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
    """Bytes that are not UTF-8 read as U+FFFD (a port decoding with `errors="replace"`, or a library
    that does so inside); llama.cpp tokenizes each such byte by itself."""

    def applies(self, data: bytes, mode: Mode) -> bool:
        return not is_utf8(data)

    def transform(self, data: bytes) -> bytes:
        return data.decode("utf-8", errors="replace").encode()

    def label(self) -> str:
        return "reads bytes that are not valid UTF-8 as U+FFFD; llama.cpp tokenizes the bytes themselves"


@dataclass
class NulTruncated(Mechanism):
    """The text is cut at its first NUL (a C binding passing a NUL-terminated string)."""

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
        from reference_impl.bpe import BYTE_TO_UNICODE

        return "".join(BYTE_TO_UNICODE[b] for b in data).encode()

    def label(self) -> str:
        return "applies GPT-2's byte-to-unicode mapping to the input; this vocabulary has none"


# ---- Stage.TOKENIZER (replayed on the reference tokenizer) ------------------------------------


@dataclass
class Reclassed(Mechanism):
    """Characters in the wrong whitespace class of the pre-tokenizer (unicode_regex_split's `\\s`)."""

    flips: dict[int, bool] = field(default_factory=dict)  # code point -> whitespace to the port
    to_space: bool = True

    def key(self) -> Hashable:
        return (self.kind, self.to_space)

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Reclassed)
        self.flips.update(other.flips)

    def applies(self, data: bytes, mode: Mode) -> bool:
        text = data.decode("utf-8", errors="surrogateescape")
        return any(chr(c) in text for c in self.flips)

    def label(self) -> str:
        names = _some([char_name(chr(c).encode()) for c in sorted(self.flips)])
        if self.to_space:
            return f"treats {names} as whitespace in its pre-tokenizer; llama.cpp does not"
        return f"does not treat {names} as whitespace in its pre-tokenizer; llama.cpp does"


@dataclass(frozen=True)
class SplitRule:
    """A pre-tokenizer regex other than the vocabulary's: what it is, and how to make it from the
    vocabulary's regexes (a substitution in their source) or another type's (`bpe.PRE_REGEXES`)."""

    name: str
    description: str
    find: str = ""  # a regex over the regexes' source, and what each match becomes
    replace: str = ""
    pre_type: str = ""  # or: the whole regex list of another pre-tokenizer type

    def regexes(self, current: list[str]) -> list[str] | None:
        """The port's regexes, or None where the rule changes nothing for this vocabulary."""
        from reference_impl.bpe import PRE_REGEXES

        if self.pre_type:
            other = PRE_REGEXES[self.pre_type]
            return None if other == current else list(other)
        changed = [_outside_classes(r, self.find, self.replace) for r in current]
        return None if changed == current else changed


def _outside_classes(regex: str, find: str, replace: str) -> str:
    """`re.sub(find, replace, …)` on the parts of a regex's source outside `[...]` classes: a
    quantifier cannot go inside a class."""
    parts = re.split(r"(\[(?:\\.|[^\]\\])*\])", regex)  # odd parts are classes
    return "".join(part if i % 2 else re.sub(find, replace, part) for i, part in enumerate(parts))


_DIGIT = re.escape("\\p{N}")
SPLIT_RULES = (
    SplitRule("digits-one", "splits numbers one digit at a time", _DIGIT + r"(?:\{1,3\}|\+)", r"\\p{N}"),
    SplitRule("digits-run", "keeps a run of digits whole", _DIGIT + r"\{1,3\}", r"\\p{N}+"),
    SplitRule("digits-three", "splits numbers in groups of up to three digits", _DIGIT + r"(?![{+])", r"\\p{N}{1,3}"),
    SplitRule("gpt2", "splits words with GPT-2's regex", pre_type="gpt2"),
    SplitRule("llama3", "splits words with Llama 3's regex", pre_type="llama3"),
    SplitRule("qwen2", "splits words with Qwen2's regex", pre_type="qwen2"),
)


@dataclass
class Resplit(Mechanism):
    """Words cut where llama.cpp's pre-tokenizer does not cut them (or the reverse)."""

    rule: SplitRule = SPLIT_RULES[0]
    pre: str = ""  # the vocabulary's pre-tokenizer type, for the label

    def key(self) -> Hashable:
        return (self.kind, self.rule.name)

    def label(self) -> str:
        return f"{self.rule.description}; llama.cpp's {self.pre} pre-tokenizer does not"


@dataclass
class MergesIgnored(Mechanism):
    """`ignore_merges` (llama_vocab's flag for the llama3 family): a word the vocabulary holds whole
    is one token, whatever the merges would make of it."""

    ignore: bool = False  # what the port does

    def label(self) -> str:
        if self.ignore:
            return "takes a word the vocabulary holds whole as one token; llama.cpp merges it (no ignore_merges)"
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
    (`invalid-utf8-refused`), or those holding certain characters, or the empty input (`refused`);
    or it answers where llama.cpp refuses (`not-refused`, where llama.cpp aborts)."""

    chars: set[bytes] = field(default_factory=set)  # `refused`: characters every refused input holds

    def absorb(self, other: Mechanism) -> None:
        assert isinstance(other, Refusing)
        self.chars |= other.chars

    def applies(self, data: bytes, mode: Mode) -> bool:
        return self.kind is Kind.NOT_REFUSED or self.refuses(data)

    def refuses(self, data: bytes) -> bool:
        if self.kind is Kind.INVALID_UTF8_REFUSED:
            return not is_utf8(data)
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
    """No known mechanism: every minimal input of these failures needs this character."""

    culprit: bytes = b""

    def key(self) -> Hashable:
        return (self.kind, self.culprit)

    def label(self) -> str:
        if not self.culprit:
            return "fails on the empty input; no known mechanism reproduces the port's ids"
        return f"fails on inputs holding {char_name(self.culprit)}; no known mechanism reproduces the port's ids"
