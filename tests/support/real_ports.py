"""Tokenizer ports written the way third-party libraries are written, each with planted bugs that can be
switched off one at a time: the material `--explain` is measured on (a case it files under a kind
must pass once the bug of that kind is switched off).

Every port is built on the pure-Python reference (`tokconf_reference`, token-identical to llama.cpp
b11192) and reaches its answer through its *own* code path: its own pre-tokenizer classes or regex,
its own special-token table, its own normalisation or text handling. With every bug off a port is
token-identical to llama.cpp; each bug changes exactly one step, the way that step goes wrong in
the kind of library the port imitates. Facts (`add_bos`, `add_eos`, `add_sep`, `bos_id`, `eos_id`, `eog_ids`)
and decoding (`token_to_piece`, `decode`, `n_tokens`) are the reference's, so a port fails only
where its bugs bite. Where llama.cpp aborts (the reference raises `LlamaAborts`) a port raises
`Refused`.

`PORTS` describes the seven `--explain` was designed on, `NEW_PORTS` the ten of issue 33 (fault shapes
seen in real libraries), `ALL_PORTS` both (`PortSpec`: name, vocabulary, class, bug -> explain kind). For the CLI, one
factory per port with all its bugs on, e.g. `PYTHONPATH=tests/support tokconf check --recordings
recordings/b11192/llama-bpe.yaml --impl real_ports:js_llama3`; `factory(name, bugs)` builds one with
only some bugs on.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, ClassVar

from tokconf.checking.engine import CaseResult
from tokconf.core.outcome import MODES, Outcome, Refusal, is_utf8
from tokconf.implementations.base import Refused, Unsupported
from tokconf.implementations.reference import DECLINED
from tokconf_reference import Tokenizer
from tokconf_reference.bpe import BYTE_TO_UNICODE, PRE_REGEXES, BytePairEncoder
from tokconf_reference.errors import LlamaAborts
from tokconf_reference.pretokenize import COLLAPSE, LLAMA_CLASSES, Classes, compile_expr, split
from tokconf_reference.spm import SentencePieceEncoder
from tokconf_reference.tokenizer import (
    ASCII_SPACE,
    ATTR_CONTROL,
    ATTR_LSTRIP,
    ATTR_RSTRIP,
    ATTR_UNKNOWN,
    ATTR_USER_DEFINED,
    ESCAPED_SPACE,
)
from tokconf_reference.unicode import ACCENT_MARK, CATEGORY, LETTER, NUMBER, PUNCTUATION, SYMBOL, WHITESPACE
from tokconf_reference.unicode import decode as utf8_codepoints
from tokconf_reference.word_cache import encode_words

LLAMA3_REGEX = PRE_REGEXES["llama3"]
QWEN2_REGEX = PRE_REGEXES["qwen2"]


@lru_cache(maxsize=8)
def _reference(path: str) -> Tokenizer:
    """The reference tokenizer of a vocabulary, loaded once per process (ports share it and never
    change it: its caches only remember answers)."""
    try:
        return Tokenizer.from_gguf(path)
    except DECLINED as why:
        raise Unsupported(f"cannot load {Path(path).name}: {why}") from None


class RealPort:
    """What every port shares: the reference's facts and decoding, bug switches, refusals as `Refused`."""

    NAME: ClassVar[str] = ""
    BUGS: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        unknown = set(bugs) - self.BUGS
        if unknown:
            raise ValueError(f"{self.NAME} has no bug {sorted(unknown)} (its bugs: {sorted(self.BUGS)})")
        self.bugs = frozenset(bugs)
        self.reference = _reference(str(path))
        self.check_vocab(self.reference, Path(path))
        self.add_bos = self.reference.add_bos
        self.add_eos = self.reference.add_eos
        if hasattr(self.reference, "add_sep"):  # llama_vocab_get_add_sep, where the reference reports it
            self.add_sep = self.reference.add_sep
        self.bos_id = self.reference.bos_id
        self.eos_id = self.reference.eos_id
        self.eog_ids = list(self.reference.eog_ids)

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        """Decline (`Unsupported`) a vocabulary this port is not written for."""

    def _require_bpe(self, path: Path, regexes: list[str] | None) -> BytePairEncoder:
        encoder = self.reference.encoder
        if not isinstance(encoder, BytePairEncoder) or (regexes is not None and encoder.regexes != regexes):
            raise Unsupported(f"{self.NAME} is written for another tokenizer than {path.name}'s")
        return encoder

    def has(self, bug: str) -> bool:
        return bug in self.bugs

    @property
    def n_tokens(self) -> int:
        return self.reference.n_tokens

    def token_to_piece(self, token: int, special: bool) -> bytes:
        return self.reference.token_to_piece(token, special)

    def decode(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        return self.reference.decode(ids, remove_special, unparse_special)

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            return self._encode(bytes(data), add_special, parse_special)
        except LlamaAborts as why:
            raise Refused(str(why)) from None

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        raise NotImplementedError

    def _bpe(
        self,
        data: bytes,
        parse_special: bool,
        words_of: Callable[[str], list[str]],
        cache: dict[str, tuple[int, ...]],
        encoder: BytePairEncoder,
    ) -> list[int]:
        """A BPE port's ids: special tokens cut as the reference cuts them, each text fragment split
        into words by the port's own pre-tokenizer, each word merged by `encoder`."""
        ids: list[int] = []
        for fragment in self.reference._partition(data, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
            else:
                ids += encode_words(cache, words_of(utf8_codepoints(fragment)), encoder.encode_word)
        return ids

    def _with_specials(self, ids: list[int], add_special: bool, bos: bool = True) -> list[int]:
        """BOS and EOS around the ids, as the vocabulary says (llama_tokenize_impl)."""
        head = [self.bos_id] if add_special and self.add_bos and bos else []
        tail = [self.eos_id] if add_special and self.add_eos else []
        return head + ids + tail


# --- 1. js_llama3 --------------------------------------------------------------------------------

# ECMAScript's `\s` (WhiteSpace and LineTerminator, ES2016 on): U+0085 is not in it, U+FEFF is.
JS_WHITESPACE = frozenset(
    {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F}
    | {0x3000, 0xFEFF}  # U+FEFF, the BOM: ZWNBSP is in ECMAScript's WhiteSpace production
)
# The class bytes of llama.cpp's collapsed text (unicode_regex_split's k_ucat_cpt): letter, number, ...
_CLASS_BYTE = {NUMBER: "\xd1", LETTER: "\xd2", PUNCTUATION: "\xd3", ACCENT_MARK: "\xd4", SYMBOL: "\xd5"}


def js_classes(whitespace: frozenset[int]) -> list[str]:
    """llama.cpp's collapsed classes (one character per code point) with `whitespace` as the
    whitespace class: what a regex engine whose `\\s` is that set sees, the other classes equal."""
    table = list(COLLAPSE)
    for cpt in (WHITESPACE | whitespace) - set(range(0x80)):
        table[cpt] = "\x0b" if cpt in whitespace else _CLASS_BYTE.get(CATEGORY[cpt], "\xd0")
    return table


class JsLlama3(RealPort):
    """A JavaScript port of Llama 3's tokenizer (in the style of llama3-tokenizer-js and the npm
    ports of tiktoken): its pre-tokenizer is the Llama 3 regex compiled as a JS `RegExp` with the `u`
    flag, so `\\p{L}`/`\\p{N}` are Unicode classes (here llama.cpp's own, so letters agree) but `\\s`
    is JavaScript's whitespace, not llama.cpp's.

    Bugs:
    - `js-whitespace`: JS `\\s` leaves out U+0085 (NEL), which llama.cpp counts as whitespace, and
      takes in U+FEFF (the BOM), which llama.cpp does not: words split differently around them.
    - `no-bos`: its `encode` never adds `<|begin_of_text|>`, which the library leaves to its chat
      template; llama.cpp adds it with add_special.
    """

    NAME = "js_llama3"
    BUGS = frozenset({"js-whitespace", "no-bos"})

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        (regex,) = LLAMA3_REGEX
        self.pattern, _ = compile_expr(regex)  # the regex on collapsed text (it uses \p{..} classes)
        self.classes = js_classes(JS_WHITESPACE) if self.has("js-whitespace") else js_classes(WHITESPACE)
        self.cache: dict[str, tuple[int, ...]] = {}

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, LLAMA3_REGEX)

    def pre_tokenize(self, text: str) -> list[str]:
        """The matches of the regex and the text between them, in order (String.prototype.split with
        a global regex, keeping what is not matched)."""
        subject = text if text.isascii() else text.translate(self.classes)
        words: list[str] = []
        position = 0
        for match in self.pattern.finditer(subject):
            start, end = match.span()
            if start > position:
                words.append(text[position:start])
            words.append(text[start:end])
            position = end
        if position < len(text):
            words.append(text[position:])
        return words

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids = self._bpe(data, parse_special, self.pre_tokenize, self.cache, self.encoder)
        return self._with_specials(ids, add_special, bos=not self.has("no-bos"))


# --- 2. nfc_qwen2 --------------------------------------------------------------------------------


class NfcQwen2(RealPort):
    """A Python port of Qwen2's tokenizer that works on `str` (in the style of wrappers around Hugging
    Face `tokenizers`, whose normalizers run before anything else).

    Bugs:
    - `nfc`: it normalizes the text to NFC first (`unicodedata.normalize("NFC", text)`), as
      checkpoints with an NFC normalizer do; llama.cpp tokenizes the code points as they come, so
      a decomposed "e" + U+0301 or a compatibility character like U+2000 gets other tokens.
    - `strict-utf8`: the bytes are decoded with `data.decode("utf-8")`, which raises on invalid
      UTF-8: the port refuses those inputs, where llama.cpp tokenizes them (replacing what it
      cannot decode). With this bug off the port hands invalid input on as bytes.
    """

    NAME = "nfc_qwen2"
    BUGS = frozenset({"nfc", "strict-utf8"})

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self._require_bpe(path, QWEN2_REGEX)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            if self.has("strict-utf8"):
                raise Refused(f"the input is not valid UTF-8: {error}") from None
            return self.reference.encode(data, add_special, parse_special)  # the bytes as they are
        if self.has("nfc"):
            text = unicodedata.normalize("NFC", text)
        return self.reference.encode(text.encode("utf-8"), add_special, parse_special)


# --- 3. tiktoken_llama3 ----------------------------------------------------------------------------

# Llama 3.1's special-token numbering (its tokenizer.json / tiktoken model), which a library built for
# that release carries: 128004 is <|finetune_right_pad_id|>, 128008 <|eom_id|>, 128010 <|python_tag|>,
# and the reserved tokens from 2 on sit in the slots left over. Llama 3.0 (the llama-bpe vocabulary)
# numbers its reserved tokens 0-3 at 128002-128005, 4 at 128008, 5-250 at 128010-128255.
_LLAMA31_NAMED = {
    "<|begin_of_text|>": 128000,
    "<|end_of_text|>": 128001,
    "<|reserved_special_token_0|>": 128002,
    "<|reserved_special_token_1|>": 128003,
    "<|finetune_right_pad_id|>": 128004,
    "<|reserved_special_token_2|>": 128005,
    "<|start_header_id|>": 128006,
    "<|end_header_id|>": 128007,
    "<|eom_id|>": 128008,
    "<|eot_id|>": 128009,
    "<|python_tag|>": 128010,
}
LLAMA31_SPECIALS = _LLAMA31_NAMED | {f"<|reserved_special_token_{n}|>": 128008 + n for n in range(3, 248)}


class TiktokenLlama3(RealPort):
    """A tiktoken-style port of Llama 3 (`tiktoken.Encoding` with the Llama 3 pattern and mergeable
    ranks): special tokens do not come from the vocabulary's token types but from a table built into
    the library, matched in the text by one regex of their texts, longest first.

    Bugs:
    - `special-table`: the built-in table is Llama 3.1's (`LLAMA31_SPECIALS`), applied to the texts
      of this Llama 3.0 vocabulary: `<|reserved_special_token_2|>` gets 128005 where the vocabulary
      says 128004, and every reserved token from 2 to 247 gets a wrong id (those 3.1 has no entry for,
      248-250, keep the vocabulary's). The named tokens are numbered alike in both releases.
    - `allowed-special-all`: it calls `encode(text, allowed_special="all")` whatever the caller asked,
      so special-token texts become special tokens even with parse_special off (llama.cpp then
      tokenizes the text of a CONTROL token as text).
    """

    NAME = "tiktoken_llama3"
    BUGS = frozenset({"special-table", "allowed-special-all"})

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        reference = self.reference
        # The vocabulary's special texts (CONTROL, USER_DEFINED, UNKNOWN), numbered by the library's
        # built-in table where it has the text.
        builtin = LLAMA31_SPECIALS if self.has("special-table") else {}
        self.specials = {
            reference.special_bytes[t]: builtin.get(reference.tokens[t], t)
            for t in reference.specials
            if reference.special_bytes[t]
        }
        texts = sorted(self.specials, key=len, reverse=True)
        self.special_regex = re.compile(b"|".join(map(re.escape, texts)))
        # Without allowed_special, tiktoken still splits out nothing; a USER_DEFINED token is
        # special to llama.cpp in every mode (Llama 3.0 has none).
        always = [reference.special_bytes[t] for t in reference.specials if reference.attrs[t] & ATTR_USER_DEFINED]
        always = sorted(filter(None, always), key=len, reverse=True)
        self.always_regex = re.compile(b"|".join(map(re.escape, always))) if always else None

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, LLAMA3_REGEX)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        allowed_all = parse_special or self.has("allowed-special-all")
        finder = self.special_regex if allowed_all else self.always_regex
        ids: list[int] = []
        position = 0
        if finder is not None:
            for match in finder.finditer(data):
                if match.start() > position:
                    ids += self._ordinary(data[position : match.start()])
                ids.append(self.specials[match.group()])
                position = match.end()
        if position < len(data):
            ids += self._ordinary(data[position:])
        return self._with_specials(ids, add_special)

    def _ordinary(self, text: bytes) -> list[int]:
        """`encode_ordinary`: the pattern's words merged by rank."""
        return self.encoder.encode(utf8_codepoints(text))


# --- 4. gpt2map_spm ----------------------------------------------------------------------------------


class Gpt2MapSpm(RealPort):
    """A native runtime (in the style of small C/Rust inference engines) that handles every vocabulary
    as if it were byte-level BPE: before tokenizing, it maps each byte of the text to GPT-2's printable
    stand-in (`BYTE_TO_UNICODE`: a space becomes "Ġ", a newline "Ċ"), then runs this SentencePiece
    vocabulary's merges on the result.

    Bug `byte-mapping`: the mapping is applied to a SentencePiece vocabulary, which wants the raw
    UTF-8 (spaces as "▁"): almost every input with a space, a newline or any non-ASCII byte gets
    other tokens. One deep fault, not many. With it off the port is plain SentencePiece.
    """

    NAME = "gpt2map_spm"
    BUGS = frozenset({"byte-mapping"})

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        encoder = reference.encoder
        if not isinstance(encoder, SentencePieceEncoder):
            raise Unsupported(f"{self.NAME} is written for SentencePiece vocabularies, not {path.name}")
        self.encoder = encoder

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids: list[int] = []
        space_prefix = self.reference.add_space_prefix  # before the first text and after each special token
        prefix = space_prefix
        for fragment in self.reference._partition(data, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
                prefix = space_prefix
                continue
            if self.has("byte-mapping"):
                fragment = fragment.decode("latin-1").translate(BYTE_TO_UNICODE).encode("utf-8")
            text = (b" " if prefix else b"") + fragment
            ids += self.encoder.encode(text.replace(b" ", ESCAPED_SPACE))
            prefix = False
        return self._with_specials(ids, add_special)


# --- 5. digits_llama3 ---------------------------------------------------------------------------------


class DigitsLlama3(RealPort):
    """A port of Llama 3 on a Hugging Face `tokenizers`-style pipeline (a `Split` pre-tokenizer with a
    regex, then a BPE model), assembled by hand from another model's config.

    Bugs:
    - `digits-one-by-one`: its Split regex was taken from Qwen2's config, whose number branch is
      `\\p{N}` where Llama 3's is `\\p{N}{1,3}`: numbers are cut one digit at a time ("2024" is four
      words, where llama.cpp makes "202" and "4").
    - `no-ignore-merges`: its BPE model predates `ignore_merges` (tokenizers < 0.19.1), so every word
      is merged pair by pair even where the whole word is a token, which Llama 3 (and llama.cpp's
      llama3 pre-tokenizer) takes as it is; some words then end in other tokens.
    """

    NAME = "digits_llama3"
    BUGS = frozenset({"digits-one-by-one", "no-ignore-merges"})

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        # Qwen2's Split regex is Llama 3's but for the number branch: `\p{N}` where Llama 3 has `\p{N}{1,3}`.
        self.regexes = QWEN2_REGEX if self.has("digits-one-by-one") else LLAMA3_REGEX
        self.model = copy.copy(self.encoder)  # its own BPE model over the same ranks, with its own cache
        self.model.cache = {}
        self.model.ignore_merges = not self.has("no-ignore-merges")

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, LLAMA3_REGEX)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        words = partial(split, exprs=self.regexes)
        return self._with_specials(self._bpe(data, parse_special, words, self.model.cache, self.model), add_special)


# --- 6. cstring_gpt2 ---------------------------------------------------------------------------------------


class CstringGpt2(RealPort):
    """A C binding (in the style of hand-written ctypes/FFI wrappers of llama.cpp) that hands the text
    to the tokenizer as a NUL-terminated `char *` and lets it take `strlen(text)` as the length.

    Bug `nul`: everything from the first NUL byte on is lost (llama.cpp takes an explicit length and
    tokenizes the NUL and what follows).
    """

    NAME = "cstring_gpt2"
    BUGS = frozenset({"nul"})

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self._require_bpe(path, None)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if self.has("nul"):
            data = data.split(b"\0", 1)[0]  # what strlen() sees of a char *
        return self.reference.encode(data, add_special, parse_special)


# --- 7. userdefined_qwen2 ------------------------------------------------------------------------------


def cut_specials(raw: bytes, order: list[int], texts: dict[int, bytes], attrs: list[int]) -> list[bytes | int]:
    """llama.cpp's tokenizer_st_partition: each special token in `order` (longest text first) is cut
    out of the text fragments left, LSTRIP/RSTRIP ones eating the ASCII whitespace beside them."""
    fragments: list[bytes | int] = [raw] if raw else []
    for token in order:
        text = texts[token]
        if text not in raw:
            continue
        result: list[bytes | int] = []
        for fragment in fragments:
            if isinstance(fragment, int) or text not in fragment:
                result.append(fragment)
                continue
            rest = fragment
            while (at := rest.find(text)) >= 0:
                left = rest[:at]
                if attrs[token] & ATTR_LSTRIP:
                    left = left.rstrip(ASCII_SPACE)
                if left:
                    result.append(left)
                result.append(token)
                rest = rest[at + len(text) :]
                if attrs[token] & ATTR_RSTRIP:
                    rest = rest.lstrip(ASCII_SPACE)
            if rest:
                result.append(rest)
        fragments = result
    return fragments


class UserDefinedQwen2(RealPort):
    """A port of Qwen2 (in the style of ports that read the GGUF token types themselves) with its own
    special-token handling: it sorts the vocabulary's special tokens by text length and cuts them out
    of the text before the BPE, the ones that need parse_special only when it is on.

    Bug `user-defined-as-control`: it reads USER_DEFINED (token type 4) as one more kind of control
    token, so in plain mode (parse_special off) it tokenizes the texts of Qwen2's user-defined tokens
    (`[PAD151646]` and the like) as ordinary text. llama.cpp cuts a user-defined token out in every
    mode; only CONTROL and UNKNOWN tokens wait for parse_special.
    """

    NAME = "userdefined_qwen2"
    BUGS = frozenset({"user-defined-as-control"})

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        reference = self.reference
        needs_parse = ATTR_CONTROL | ATTR_UNKNOWN
        if self.has("user-defined-as-control"):
            needs_parse |= ATTR_USER_DEFINED
        kinds = ATTR_CONTROL | ATTR_UNKNOWN | ATTR_USER_DEFINED
        self.texts = {t: text.encode("utf-8", "surrogateescape") for t, text in enumerate(reference.tokens)}
        special = [t for t, attr in enumerate(reference.attrs) if attr & kinds and self.texts[t]]
        special.sort(key=lambda t: -len(self.texts[t]))  # longest first; ties by id (a stable sort)
        self.order = {True: special, False: [t for t in special if not reference.attrs[t] & needs_parse]}

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, QWEN2_REGEX)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        ids: list[int] = []
        for fragment in cut_specials(data, self.order[parse_special], self.texts, self.reference.attrs):
            if isinstance(fragment, int):
                ids.append(fragment)
            else:
                ids += self.encoder.encode(utf8_codepoints(fragment))
        return self._with_specials(ids, add_special)


# --- 8. isolating_llama3 ---------------------------------------------------------------------------------


class IsolatingLlama3(RealPort):
    """A port of Llama 3 on a tokenizer.json-style pipeline (in the style of Hugging Face `tokenizers`,
    whose added-token table is matched before the pre-tokenizer): the special-token texts are always
    cut out of the input first, and `parse_special` only decides what becomes of each piece.

    Bug `isolate-specials`: with parse_special off (`split_special_tokens=True` in transformers), a
    special token's text found in the input is still cut out, then tokenized as text on its own:
    ` <|eot_id|>` becomes ` ` and `<|eot_id|>` tokenized apart, where llama.cpp tokenizes the whole
    text in one piece (the space joins the `<`). With it off, nothing is cut without parse_special
    (but user-defined tokens, which llama.cpp cuts in every mode).
    """

    NAME = "isolating_llama3"
    BUGS = frozenset({"isolate-specials"})

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, LLAMA3_REGEX)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        reference = self.reference
        if parse_special or not self.has("isolate-specials"):
            return reference.encode(data, add_special, parse_special)
        ids: list[int] = []
        for fragment in reference._partition(data, True):  # the added-token table matched first
            if isinstance(fragment, int):
                if reference.attrs[fragment] & (ATTR_CONTROL | ATTR_UNKNOWN):  # not parsed: its text, alone
                    ids += reference._fragment_ids(reference.special_bytes[fragment], False)
                else:
                    ids.append(fragment)
            else:
                ids += reference._fragment_ids(fragment, False)
        return self._with_specials(ids, add_special)


# --- 9. rawbytes_gpt2 -------------------------------------------------------------------------------------


class RawBytesGpt2(RealPort):
    """A byte-level BPE port of GPT-2 with a bytes API (in the style of tiktoken's `_encode_bytes` and
    Rust crates taking `&[u8]`): it decodes what is valid UTF-8 and hands the rest to the byte-level
    BPE as the raw bytes they are, since every byte has a token.

    Bug `raw-bytes`: the bytes that are not valid UTF-8 (Python's decoder decides which) are kept as
    raw bytes, each run of them one word: `\\x80` becomes GPT-2's byte token for 0x80 (222), where
    llama.cpp reads a byte it cannot decode as U+FFFD (`unicode_cpts_from_utf8`: the lead byte of a
    broken or truncated sequence is one U+FFFD and the bytes after it are read again, so neither
    Python's `errors="replace"` nor raw bytes gives its ids). Code points above U+10FFFF are still
    refused as llama.cpp aborts on them. With it off the port decodes as llama.cpp does.
    """

    NAME = "rawbytes_gpt2"
    BUGS = frozenset({"raw-bytes"})
    _INVALID = re.compile("([\udc80-\udcff]+)")

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, None)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        reference = self.reference
        if not self.has("raw-bytes") or is_utf8(data):
            return reference.encode(data, add_special, parse_special)
        ids: list[int] = []
        for fragment in reference._partition(data, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
                continue
            utf8_codepoints(fragment)  # raises where llama.cpp aborts (a code point above U+10FFFF)
            text = fragment.decode("utf-8", "surrogateescape")
            for n, part in enumerate(self._INVALID.split(text)):
                if n % 2:  # a run of bytes that are not UTF-8: one word of raw bytes
                    ids += self._raw_word(part.encode("utf-8", "surrogateescape"))
                elif part:
                    ids += reference._fragment_ids(part.encode("utf-8"), False)
        return self._with_specials(ids, add_special)

    def _raw_word(self, raw: bytes) -> list[int]:
        symbols = list(raw.decode("latin-1").translate(BYTE_TO_UNICODE))
        if len(symbols) > 1:
            symbols = self.encoder._merge_short(symbols)
        return [self.encoder.token_to_id[symbol] for symbol in symbols]


# --- 10. startonly_gpt2 ------------------------------------------------------------------------------------


class StartOnlyGpt2(RealPort):
    """A binding of GPT-2 (in the style of thin wrappers around a native tokenizer) that handles the
    special tokens itself: it looks whether the prompt starts with a special token's text (so a chat
    prompt's leading `<|endoftext|>` is one token) and tokenizes the rest as text.

    Bug `special-at-start`: a special token is matched only at the start of the text, and there in
    every mode: `<|endoftext|>` is 50256 even with parse_special off (llama.cpp tokenizes its text),
    and `\\n<|endoftext|>x` with parse_special on is all text (llama.cpp parses the token wherever it
    is). With it off the port parses special tokens as llama.cpp does.
    """

    NAME = "startonly_gpt2"
    BUGS = frozenset({"special-at-start"})

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        reference = self.reference
        texts = [(reference.special_bytes[t], t) for t in reference.specials if reference.special_bytes[t]]
        self.leading = sorted(texts, key=lambda pair: -len(pair[0]))  # longest first

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self._require_bpe(path, None)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        reference = self.reference
        if not self.has("special-at-start"):
            return reference.encode(data, add_special, parse_special)
        head: list[int] = []
        for text, token in self.leading:
            if data.startswith(text):
                head, data = [token], data[len(text) :]
                break
        return self._with_specials(head + reference.encode(data, False, False), add_special)


# --- 11. bounded_llama3 ------------------------------------------------------------------------------------


class BoundedLlama3(RealPort):
    """A native port of Llama 3 (in the style of small C/C++ inference engines with fixed buffers):
    its whole-word lookup (`ignore_merges`) goes through a fixed-size key buffer, and its `tokenize`
    call copies the prompt into a buffer of `MAX_BYTES`.

    Bugs:
    - `ignore-merges-16`: the whole-word lookup is done only for words of at most 16 bytes (the key
      buffer's size); a longer word that is a token is merged pair by pair, as without
      `ignore_merges` (llama.cpp looks every word up whole).
    - `max-bytes`: an input longer than `MAX_BYTES` bytes is refused (an error, not ids), where
      llama.cpp tokenizes it.
    """

    NAME = "bounded_llama3"
    BUGS = frozenset({"ignore-merges-16", "max-bytes"})
    MAX_BYTES = 2048
    KEY_BYTES = 16

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        self.whole = copy.copy(self.encoder)  # ignore_merges, as llama.cpp (its own cache)
        self.whole.cache = {}
        self.merged = copy.copy(self.encoder)
        self.merged.cache = {}
        self.merged.ignore_merges = False
        self.cache: dict[str, tuple[int, ...]] = {}

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, LLAMA3_REGEX)

    def encode_word(self, word: str) -> tuple[int, ...]:
        if self.has("ignore-merges-16") and len(word.encode("utf-8", "surrogatepass")) > self.KEY_BYTES:
            return self.merged.encode_word(word)
        return self.whole.encode_word(word)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if self.has("max-bytes") and len(data) > self.MAX_BYTES:
            raise Refused(f"the prompt is {len(data)} bytes, over the {self.MAX_BYTES}-byte buffer")
        ids: list[int] = []
        for fragment in self.reference._partition(data, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
            else:
                words = split(utf8_codepoints(fragment), LLAMA3_REGEX)
                ids += encode_words(self.cache, words, self.encode_word)
        return self._with_specials(ids, add_special)


# --- 12. nl_llama3 -----------------------------------------------------------------------------------------


def letter_numbers() -> frozenset[int]:
    """The code points of general category Nl (letter numbers: Roman numerals, U+3007, ...) that
    llama.cpp counts as numbers (`\\p{N}`), by Python's Unicode database."""
    return frozenset(
        cpt for cpt in range(0x110000) if CATEGORY[cpt] & NUMBER and unicodedata.category(chr(cpt)) == "Nl"
    )


class NlLlama3(RealPort):
    """A port of Llama 3 with a hand-built character table (in the style of ports to languages whose
    regex engine has no `\\p{..}` classes, which build them from the Unicode database): `\\p{N}` is
    made of the categories Nd and No, `\\p{L}` of the five letter categories.

    Bug `nl-not-number`: the letter numbers (Nl: `Ⅻ`, `ⅰ`, `〇`, …) are left out of `\\p{N}`, so they
    fall in neither letters nor numbers: `Ⅻ` is cut as punctuation would be, and `〇〇〇〇` is one
    word where llama.cpp's `\\p{N}{1,3}` cuts it in two. With it off they are numbers, as in
    llama.cpp (`\\p{N}` is Nd, Nl and No).
    """

    NAME = "nl_llama3"
    BUGS = frozenset({"nl-not-number"})

    def __init__(self, path: Path, bugs: frozenset[str]) -> None:
        super().__init__(path, bugs)
        table = list(COLLAPSE)
        if self.has("nl-not-number"):
            for cpt in letter_numbers():
                table[cpt] = "\xd0"  # neither letter, number, nor whitespace
        self.classes = Classes(table, LLAMA_CLASSES.plain)
        self.cache: dict[str, tuple[int, ...]] = {}

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, LLAMA3_REGEX)

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        words = partial(split, exprs=LLAMA3_REGEX, classes=self.classes)
        return self._with_specials(self._bpe(data, parse_special, words, self.cache, self.encoder), add_special)


# --- 13. binding_bert --------------------------------------------------------------------------------------


class BindingBert(RealPort):
    """A binding of llama.cpp's tokenizer for BERT embedders (in the style of wrappers whose `encode`
    calls `llama_tokenize` with add_special off and adds the special tokens by hand, the way a
    decoder-only model's BOS and EOS are added).

    Bugs:
    - `sep-from-add-eos`: it appends the EOS when `add_eos` says so, and nothing else: WordPiece's
      `[SEP]` (llama.cpp appends it with add_special whatever `add_eos` says) is never added.
    - `cls-from-add-bos`: it prepends the BOS only when `add_bos` says so: on a WordPiece vocabulary
      whose `add_bos` is false `[CLS]` is missing (llama.cpp starts every WPM text with it). On
      bert-bge, whose `add_bos` is true, it adds `[CLS]` as llama.cpp does.
    """

    NAME = "binding_bert"
    BUGS = frozenset({"sep-from-add-eos", "cls-from-add-bos"})

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        if reference.kind != "wpm":
            raise Unsupported(f"{self.NAME} is written for WordPiece vocabularies, not {path.name}")

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        reference = self.reference
        ids = reference.encode(data, False, parse_special)
        if not add_special:
            return ids
        cls = self.add_bos if self.has("cls-from-add-bos") else True
        head = [reference.bos_id] if cls else []
        if self.has("sep-from-add-eos"):
            tail = [self.eos_id] if self.add_eos and self.eos_id >= 0 else []
        else:
            tail = [reference.sep_id]
        return head + ids + tail


# --- 14. runtime_gemma4 ------------------------------------------------------------------------------------


class RuntimeGemma4(RealPort):
    """A native GGUF runtime (in the style of small C/Rust inference engines) running Gemma 4's
    tokenizer: its BPE merges on raw UTF-8 with spaces escaped as "▁", which the runtime's
    byte-level code path does not expect.

    Bugs:
    - `byte-mapping`: the runtime maps each byte of the text to GPT-2's printable stand-in
      (`BYTE_TO_UNICODE`: a space "Ġ", a newline "Ċ", a non-ASCII byte a Latin-1 letter) before the
      merges, as it does for byte-level BPE vocabularies: any input with a space, a newline or a
      non-ASCII byte gets other tokens.
    - `nul`: the prompt is passed as a C string, so everything from its first NUL byte on is lost.
    """

    NAME = "runtime_gemma4"
    BUGS = frozenset({"byte-mapping", "nul"})

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        encoder = reference.encoder
        if not isinstance(encoder, BytePairEncoder) or encoder.byte_encode or not reference.escape_whitespaces:
            raise Unsupported(f"{self.NAME} is written for Gemma 4's raw-UTF-8 BPE, not {path.name}")

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        if self.has("nul"):
            data = data.split(b"\0", 1)[0]  # what strlen() sees of a char *
        if not self.has("byte-mapping"):
            return self.reference.encode(data, add_special, parse_special)
        ids: list[int] = []
        for fragment in self.reference._partition(data, parse_special):
            if isinstance(fragment, int):
                ids.append(fragment)
            else:
                mapped = fragment.decode("latin-1").translate(BYTE_TO_UNICODE).encode("utf-8")
                ids += self.reference._fragment_ids(mapped, False)
        return self._with_specials(ids, add_special)


# --- 15-17. a hand-written GPT-2 scanner: contraction_gpt2, tabprefix_gpt2, lookahead_gpt2 -------------------


def gpt2_scan(text: str, contraction_after_blank: bool, prefix_after_tab: bool, lookahead: bool) -> list[str]:
    """GPT-2's pre-tokenizer (`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`)
    written as a scanner over code points, the way C ports write it (llama.cpp's own is
    `unicode_regex_split_custom_gpt2`). With every switch true it is that regex; each false one is a
    port's mistake:
    - `contraction_after_blank` false: a contraction is not tried right after whitespace other than
      U+0020 (`\\n't` gives `\\n`, `'`, `t`);
    - `prefix_after_tab` false: right after HT, VT or FF a word loses its prefix, the apostrophe of a
      contraction or its leading space (`\\t're` gives `\\t`, `'`, `re`; `\\t x` gives `\\t`, ` `, `x`);
    - `lookahead` false: `\\s+(?!\\S)` is left out, a whitespace run is one word even before a word.
    """
    cpts = [ord(c) for c in text]
    size = len(cpts)

    def flag(pos: int) -> int:
        return CATEGORY[cpts[pos]] if pos < size else 0

    def space(pos: int) -> bool:
        return pos < size and cpts[pos] in WHITESPACE

    words: list[str] = []
    pos = 0
    while pos < size:
        cpt = cpts[pos]
        before = cpts[pos - 1] if pos > 0 else -1
        after_blank = pos > 0 and before in WHITESPACE and before != 0x20
        after_tab = pos > 0 and before in (0x09, 0x0B, 0x0C)
        bare = (not prefix_after_tab and after_tab) or (not contraction_after_blank and after_blank)
        if cpt == 0x27 and pos + 1 < size and not bare:  # 's 't 'm 'd 're 've 'll
            nxt = text[pos + 1 : pos + 3]
            if nxt[:1] in ("s", "t", "m", "d"):
                words.append(text[pos : pos + 2])
                pos += 2
                continue
            if nxt in ("re", "ve", "ll"):
                words.append(text[pos : pos + 3])
                pos += 3
                continue
        prefixed = cpt == 0x20 and not (not prefix_after_tab and after_tab)
        look = pos + 1 if prefixed else pos
        end = look
        if look < size and not space(look) and flag(look) & LETTER:
            while end < size and not space(end) and flag(end) & LETTER:
                end += 1
        elif look < size and not space(look) and flag(look) & NUMBER:
            while end < size and not space(end) and flag(end) & NUMBER:
                end += 1
        elif look < size and not space(look):
            while end < size and not space(end) and not flag(end) & (LETTER | NUMBER):
                end += 1
        else:
            run = 0
            while space(pos + run):
                run += 1
            end = pos + run - 1 if lookahead and run > 1 and pos + run < size else pos + max(run, 1)
        words.append(text[pos:end])
        pos = end
    return words


class ScannerGpt2(RealPort):
    """A port of GPT-2 whose pre-tokenizer is a hand-written scanner (`gpt2_scan`), in the style of C
    and Go ports that avoid a regex engine; one subclass per mistake such scanners make."""

    def check_vocab(self, reference: Tokenizer, path: Path) -> None:
        self.encoder = self._require_bpe(path, PRE_REGEXES["gpt2"])
        self.cache: dict[str, tuple[int, ...]] = {}

    def words(self, text: str) -> list[str]:
        return gpt2_scan(
            text,
            contraction_after_blank=not self.has("contraction-after-blank"),
            prefix_after_tab=not self.has("tab-drops-prefix"),
            lookahead=not self.has("no-lookahead"),
        )

    def _encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        return self._with_specials(self._bpe(data, parse_special, self.words, self.cache, self.encoder), add_special)


class ContractionGpt2(ScannerGpt2):
    """Bug `contraction-after-blank`: the scanner tries a contraction only where the previous code
    point is not whitespace or is U+0020 (it keeps an `after_blank` flag for the other whitespace):
    `\\n't` and `\\r'd` lose their contraction (`\\n`, `'`, `t`), where llama.cpp makes `'t`."""

    NAME = "contraction_gpt2"
    BUGS = frozenset({"contraction-after-blank"})


class TabPrefixGpt2(ScannerGpt2):
    """Bug `tab-drops-prefix`: after HT, VT or FF the scanner starts the next word bare, dropping its
    prefix: a contraction's apostrophe (`\\t're` gives `\\t`, `'`, `re`) and a word's leading space
    (`\\t x` gives `\\t`, ` `, `x`)."""

    NAME = "tabprefix_gpt2"
    BUGS = frozenset({"tab-drops-prefix"})


class LookaheadGpt2(ScannerGpt2):
    """Bug `no-lookahead`: the scanner has no `\\s+(?!\\S)`: a whitespace run is one word even when
    a word follows it (`\\n\\nb` gives `\\n\\n`, `b`; llama.cpp `\\n`, `\\n`, `b`; `  b` gives `  `,
    `b` where llama.cpp gives ` `, ` b`)."""

    NAME = "lookahead_gpt2"
    BUGS = frozenset({"no-lookahead"})


# --- the catalogue ---------------------------------------------------------------------------------------


# The `--explain` kind each new port's bug is meant to be filed under (issue 33): one table, so the
# names follow the explainer's as it gains the kinds. A name no `Kind` has yet is the target kind.
KIND = {
    name: name
    for name in (
        "special-isolated", "invalid-utf8-bytes", "special-start-only", "ignore-merges", "too-long-refused",
        "number-class", "cls-missing", "sep-missing", "byte-mapping", "nul-truncated", "whitespace-context",
        "pretokenizer-split",
    )
}  # fmt: skip


@dataclass(frozen=True)
class PortSpec:
    """One port: its name, the vocabulary it is written for (a recording stem under recordings/b11192),
    its class, and its bugs: bug name -> the `--explain` kind its failures are filed under, and a
    one-line description of each."""

    name: str
    vocab: str
    port: type[RealPort]
    bugs: dict[str, str]
    descriptions: dict[str, str] = field(default_factory=dict)


PORTS: dict[str, PortSpec] = {
    spec.name: spec
    for spec in (
        PortSpec(
            "js_llama3", "llama-bpe", JsLlama3,
            {"js-whitespace": "whitespace-class", "no-bos": "bos-missing"},
            {"js-whitespace": "JavaScript's \\s: U+0085 is not whitespace, U+FEFF is",
             "no-bos": "encode never adds BOS (left to the chat template)"},
        ),
        PortSpec(
            "nfc_qwen2", "qwen2", NfcQwen2,
            {"nfc": "normalized-nfc", "strict-utf8": "invalid-utf8-refused"},
            {"nfc": "unicodedata.normalize('NFC', text) before tokenizing",
             "strict-utf8": "data.decode('utf-8') refuses invalid UTF-8"},
        ),
        PortSpec(
            "tiktoken_llama3", "llama-bpe", TiktokenLlama3,
            {"special-table": "special-wrong-id", "allowed-special-all": "special-parsed"},
            {"special-table": "built-in Llama 3.1 special-token ids for this Llama 3.0 vocabulary",
             "allowed-special-all": "special texts parsed even with parse_special off"},
        ),
        PortSpec(
            "gpt2map_spm", "llama-spm", Gpt2MapSpm,
            {"byte-mapping": "byte-mapping"},
            {"byte-mapping": "GPT-2's byte-to-unicode map applied before SentencePiece"},
        ),
        PortSpec(
            "digits_llama3", "llama-bpe", DigitsLlama3,
            {"digits-one-by-one": "pretokenizer-split", "no-ignore-merges": "ignore-merges"},
            {"digits-one-by-one": "the regex's number branch is \\p{N}, not \\p{N}{1,3}",
             "no-ignore-merges": "words that are whole tokens are merged anyway"},
        ),
        PortSpec(
            "cstring_gpt2", "gpt-2", CstringGpt2,
            {"nul": "nul-truncated"},
            {"nul": "the text is cut at its first NUL byte (strlen)"},
        ),
        PortSpec(
            "userdefined_qwen2", "qwen2", UserDefinedQwen2,
            {"user-defined-as-control": "special-not-parsed"},
            {"user-defined-as-control": "user-defined tokens wait for parse_special, as control ones do"},
        ),
    )
}  # fmt: skip
# Issue 33: fault shapes seen in real libraries that `--explain` was not designed on, each a port of its
# own (measured by benchmarks/explain.py and tests/test_real_ports.py; tests/test_explain.py takes PORTS).
NEW_PORTS: dict[str, PortSpec] = {
    spec.name: spec
    for spec in (
        PortSpec(
            "isolating_llama3", "llama-bpe", IsolatingLlama3,
            {"isolate-specials": KIND["special-isolated"]},
            {"isolate-specials": "special texts cut out with parse_special off, each piece tokenized as text"},
        ),
        PortSpec(
            "rawbytes_gpt2", "gpt-2", RawBytesGpt2,
            {"raw-bytes": KIND["invalid-utf8-bytes"]},
            {"raw-bytes": "bytes that are not UTF-8 tokenized as raw bytes, not read as U+FFFD"},
        ),
        PortSpec(
            "startonly_gpt2", "gpt-2", StartOnlyGpt2,
            {"special-at-start": KIND["special-start-only"]},
            {"special-at-start": "a special token parsed only at the start of the text, in every mode"},
        ),
        PortSpec(
            "bounded_llama3", "llama-bpe", BoundedLlama3,
            {"ignore-merges-16": KIND["ignore-merges"], "max-bytes": KIND["too-long-refused"]},
            {"ignore-merges-16": "whole-word lookup only for words of at most 16 bytes",
             "max-bytes": "inputs over 2,048 bytes refused"},
        ),
        PortSpec(
            "nl_llama3", "llama-bpe", NlLlama3,
            {"nl-not-number": KIND["number-class"]},
            {"nl-not-number": "letter numbers (Nl) left out of \\p{N}"},
        ),
        PortSpec(
            "binding_bert", "bert-bge", BindingBert,
            {"sep-from-add-eos": KIND["sep-missing"], "cls-from-add-bos": KIND["cls-missing"]},
            {"sep-from-add-eos": "EOS appended by hand when add_eos says so; [SEP] never",
             "cls-from-add-bos": "BOS prepended by hand only when add_bos says so (bites where add_bos is false)"},
        ),
        PortSpec(
            "runtime_gemma4", "gemma-4", RuntimeGemma4,
            {"byte-mapping": KIND["byte-mapping"], "nul": KIND["nul-truncated"]},
            {"byte-mapping": "GPT-2's byte-to-unicode map applied before Gemma 4's raw-UTF-8 BPE",
             "nul": "the text is cut at its first NUL byte (strlen)"},
        ),
        PortSpec(
            "contraction_gpt2", "gpt-2", ContractionGpt2,
            {"contraction-after-blank": KIND["whitespace-context"]},
            {"contraction-after-blank": "no contraction right after whitespace other than U+0020"},
        ),
        PortSpec(
            "tabprefix_gpt2", "gpt-2", TabPrefixGpt2,
            {"tab-drops-prefix": KIND["whitespace-context"]},
            {"tab-drops-prefix": "after HT, VT or FF a word loses its prefix (apostrophe, space)"},
        ),
        PortSpec(
            "lookahead_gpt2", "gpt-2", LookaheadGpt2,
            {"no-lookahead": KIND["pretokenizer-split"]},
            {"no-lookahead": "no \\s+(?!\\S): a whitespace run stays whole before a word"},
        ),
    )
}  # fmt: skip


ALL_PORTS = PORTS | NEW_PORTS


def factory(name: str, bugs: Iterable[str]) -> Callable[[Path], RealPort]:
    """A `module:factory` callable for port `name` with exactly `bugs` on (any subset of its bugs)."""
    spec = ALL_PORTS[name]
    chosen = frozenset(bugs)
    unknown = chosen - spec.bugs.keys()
    if unknown:
        raise ValueError(f"{name} has no bug {sorted(unknown)} (its bugs: {sorted(spec.bugs)})")

    def make(path: Path) -> RealPort:
        return spec.port(Path(path), chosen)

    make.__name__ = make.__qualname__ = f"{name}[{','.join(sorted(chosen))}]"
    return make


# One factory per port with all its bugs on, for `--impl real_ports:<name>`.
js_llama3 = factory("js_llama3", ALL_PORTS["js_llama3"].bugs)
nfc_qwen2 = factory("nfc_qwen2", ALL_PORTS["nfc_qwen2"].bugs)
tiktoken_llama3 = factory("tiktoken_llama3", ALL_PORTS["tiktoken_llama3"].bugs)
gpt2map_spm = factory("gpt2map_spm", ALL_PORTS["gpt2map_spm"].bugs)
digits_llama3 = factory("digits_llama3", ALL_PORTS["digits_llama3"].bugs)
cstring_gpt2 = factory("cstring_gpt2", ALL_PORTS["cstring_gpt2"].bugs)
userdefined_qwen2 = factory("userdefined_qwen2", ALL_PORTS["userdefined_qwen2"].bugs)
isolating_llama3 = factory("isolating_llama3", ALL_PORTS["isolating_llama3"].bugs)
rawbytes_gpt2 = factory("rawbytes_gpt2", ALL_PORTS["rawbytes_gpt2"].bugs)
startonly_gpt2 = factory("startonly_gpt2", ALL_PORTS["startonly_gpt2"].bugs)
bounded_llama3 = factory("bounded_llama3", ALL_PORTS["bounded_llama3"].bugs)
nl_llama3 = factory("nl_llama3", ALL_PORTS["nl_llama3"].bugs)
binding_bert = factory("binding_bert", ALL_PORTS["binding_bert"].bugs)
runtime_gemma4 = factory("runtime_gemma4", ALL_PORTS["runtime_gemma4"].bugs)
contraction_gpt2 = factory("contraction_gpt2", ALL_PORTS["contraction_gpt2"].bugs)
tabprefix_gpt2 = factory("tabprefix_gpt2", ALL_PORTS["tabprefix_gpt2"].bugs)
lookahead_gpt2 = factory("lookahead_gpt2", ALL_PORTS["lookahead_gpt2"].bugs)


def misfiled(spec: PortSpec, vocab: Path, failed: Iterable[CaseResult], kinds_of: dict[int, set[str]]) -> list[str]:
    """The failed cases `--explain` filed wrong, judged by the port itself, not by the explainer's
    replay: a case under causes of kinds K1..Kn must pass once the port's bugs of those kinds are
    switched off; a case under a kind no planted bug has, or under none, is misfiled too.
    `kinds_of` maps `id(case result)` to the kinds of the causes it is under."""
    bugs_of_kind: dict[str, set[str]] = {}
    for bug, kind in spec.bugs.items():
        bugs_of_kind.setdefault(kind, set()).add(bug)
    fixed: dict[frozenset[str], RealPort] = {}
    wrong: list[str] = []
    for result in failed:
        kinds = kinds_of.get(id(result), set())
        if not kinds or not kinds <= bugs_of_kind.keys():
            wrong.append(result.case)
            continue
        off = frozenset(bug for kind in kinds for bug in bugs_of_kind[kind])
        if off not in fixed:
            fixed[off] = factory(spec.name, set(spec.bugs) - off)(vocab)
        add_special, parse_special = MODES[result.section]  # type: ignore[index]
        try:
            answer: Outcome = fixed[off].encode(result.data, add_special, parse_special)
        except Refused as refusal:
            answer = Refusal(str(refusal))
        if answer != result.expected and not (isinstance(answer, Refusal) and isinstance(result.expected, Refusal)):
            wrong.append(result.case)
    return wrong


def _answer(port: RealPort, data: bytes, add_special: bool, parse_special: bool, llama: bool) -> Outcome:
    """The port's answer, or (`llama`) llama.cpp b11192's: the reference it wraps, token-identical to it."""
    try:
        return (
            port.reference.encode(data, add_special, parse_special)
            if llama
            else port.encode(data, add_special, parse_special)
        )
    except (Refused, LlamaAborts) as why:
        return Refusal(str(why))


def contradicted(spec: PortSpec, vocab: Path, causes: Iterable[Any]) -> list[str]:
    """The causes the port itself contradicts: one of a kind no planted bug has (but the `character`
    fallback, which names no mechanism), or one whose kind's fault is not at work on one of its
    minimal inputs (every one found for it): with the port's bugs of that kind switched off, the
    port answers there as it did with them on. (Not "passes": a minimal input may need two faults,
    a NUL cut and a byte mapping, and one cause name the first.) `causes` are
    `tokconf.checking.explain.Cause`s (kind, mode, minimal, variants)."""
    bugs_of_kind: dict[str, set[str]] = {}
    for bug, kind in spec.bugs.items():
        bugs_of_kind.setdefault(kind, set()).add(bug)
    ported: dict[frozenset[str], RealPort] = {}

    def port(bugs: frozenset[str]) -> RealPort:
        if bugs not in ported:
            ported[bugs] = factory(spec.name, bugs)(vocab)
        return ported[bugs]

    out: list[str] = []
    for cause in causes:
        kind = cause.kind.value
        if kind == "character":
            continue
        if kind not in bugs_of_kind:
            out.append(f"{kind}: no planted bug of this kind ({cause.label[:80]})")
            continue
        add_special, parse_special = MODES[cause.mode]
        every, off = frozenset(spec.bugs), frozenset(spec.bugs) - bugs_of_kind[kind]
        for data in sorted({cause.minimal, *cause.variants}):
            on = _answer(port(every), data, add_special, parse_special, llama=False)
            fixed = _answer(port(off), data, add_special, parse_special, llama=False)
            if on == fixed or (isinstance(on, Refusal) and isinstance(fixed, Refusal)):
                out.append(f"{kind}: {data!r} [{cause.mode}]: the port's {kind} bugs are not at work there")
                break
    return out
