"""Unigram (UGM, `tokenizer.ggml.model = t5`) as llama.cpp's `llm_tokenizer_ugm_session` does it.

Two steps, both in src/llama-vocab.cpp:

- `normalize`: at each input position the longest user-defined token path is copied as is
  (`naive_trie::get_longest_prefix` stops where the trie does, whether or not a token ends there);
  else the longest key of the precompiled charsmap (SentencePiece's XOR-compressed compact double
  array, walked byte by byte) is replaced by its NUL-terminated replacement; else one structurally
  valid UTF-8 character is copied (`unicode_cpt_from_utf8`: lead and continuation bits only), or one
  invalid byte becomes U+FFFD. Spaces of the result then become U+2581; with `add_space_prefix` one
  goes before the first non-space byte, with `remove_extra_whitespaces` every run of spaces becomes
  one before each word and trailing spaces vanish.
- `tokenize`: Viterbi over code-point starts. Every token (normal, user-defined or unused) starting
  there is a candidate, scored by its log probability in double precision (user-defined tokens
  score 0); a code point no single token covers may become the unknown token at
  `min(normal scores) - 10` (float32). A strictly better sum replaces the best path, so on ties
  the earlier start and the shorter token win. Runs of unknown tokens collapse into one.
"""

from __future__ import annotations

import re
import struct
import sys
from array import array

# unicode_len_utf8: by the high nibble of the lead byte.
_LEN = (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)
ESCAPED_SPACE = "\u2581".encode()
REPLACEMENT = "\ufffd".encode()
FLT_MAX = 3.4028234663852886e38
UNKNOWN_PENALTY = 10.0  # llm_tokenizer_ugm::unknown_token_score_penalty
# One character as unicode_cpt_from_utf8 accepts it: the lead byte's length, continuation bits only.
_UTF8_CHAR = re.compile(rb"[\x00-\x7f]|[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3}")


class CharsmapError(ValueError):
    """The precompiled charsmap points outside itself: llama.cpp throws std::runtime_error here."""


def _float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


_LCHECK = (1 << 31) | 0xFF  # an entry's LCHECK bits (bit 31 marks value entries, never a byte)


def _base(packed: int) -> int:
    """An entry's BASE: bits 10-30, shifted left by 8 when bit 9 is set."""
    return (packed >> 10) << ((packed & 0x200) >> 6)


class Charsmap:
    """The precompiled charsmap: a 4-byte blob size, the XCDA entries, then replacement strings."""

    def __init__(self, blob: bytes) -> None:
        if len(blob) < 4:
            raise CharsmapError("precompiled_charsmap too small for xcda_blob_size header")
        (size,) = struct.unpack_from("<I", blob, 0)
        if size + 4 >= len(blob):
            raise CharsmapError("index out of array bounds in precompiled charsmap")
        self.xcda = array("I", blob[4 : 4 + size - size % 4])
        if sys.byteorder == "big":
            self.xcda.byteswap()
        self.replacements = blob[4 + size :]
        # Bytes where the walk does anything: a key can start there (or the walk runs off the array,
        # which must raise when such a byte is met, as llama.cpp throws then).
        self.starters = {c for c in range(1, 256) if self._starts(c)}

    def followers(self, c: int) -> tuple[bool, frozenset[int]]:
        """Whether the one byte `c` is a key, and the bytes that can continue a key after it (a byte
        where the walk would run off the array counts as one, so that the walk meets it)."""
        xcda = self.xcda
        try:
            packed = xcda[_base(xcda[0]) ^ c]
            after = (_base(xcda[0]) ^ c) ^ _base(packed)
        except IndexError:
            return True, frozenset(range(256))
        follow = set()
        for d in range(1, 256):
            try:
                if xcda[after ^ d] & _LCHECK == d:
                    follow.add(d)
            except IndexError:
                follow.add(d)
        return bool(packed & 0x100), frozenset(follow)

    def _starts(self, c: int) -> bool:
        try:
            return self.xcda[_base(self.xcda[0]) ^ c] & _LCHECK == c
        except IndexError:
            return True

    def longest_match(self, text: bytes, start: int) -> tuple[int, bytes]:
        """(length, replacement) of the longest key at `start`; length 0 when none matches.

        The XCDA walk of normalize_prefix, inlined (it runs at most positions of a text): BASE[s]
        XOR the byte gives the next node, whose LCHECK must be that byte; a LEAF node's BASE leads
        to the node holding the replacement's offset. An index off the array is llama.cpp's throw.
        """
        xcda = self.xcda
        length = value = 0
        try:
            node = _base(xcda[0])
            for offset in range(start, len(text)):
                c = text[offset]
                if c == 0:
                    break
                node ^= c
                packed = xcda[node]
                if packed & _LCHECK != c:
                    break
                node ^= _base(packed)
                if packed & 0x100:
                    length, value = offset - start + 1, xcda[node] & 0x7FFFFFFF
        except IndexError:
            raise CharsmapError("index out of array bounds in XCDA array") from None
        if not length:
            return 0, b""
        if value >= len(self.replacements):
            raise CharsmapError("index out of array bounds in precompiled charsmap")
        end = self.replacements.find(b"\0", value)
        if end < 0:
            raise CharsmapError("unterminated string in precompiled charsmap")
        return length, self.replacements[value:end]


class UnigramEncoder:
    def __init__(
        self,
        tokens: list[bytes],
        scores: list[float],
        kinds: list[str],
        unk_id: int,
        charsmap: bytes,
        add_space_prefix: bool,
        remove_extra_whitespaces: bool,
    ) -> None:
        """`kinds` per token: "normal", "user" (user-defined), "unused", or anything else (not matched)."""
        self.charsmap = Charsmap(charsmap) if charsmap else None
        self.unk_id = unk_id
        self.add_space_prefix = add_space_prefix
        self.remove_extra_whitespaces = remove_extra_whitespaces
        normal = [scores[i] for i, kind in enumerate(kinds) if kind == "normal"]
        min_score = min(normal) if normal else FLT_MAX
        self.unknown_score = _float32(min_score - UNKNOWN_PENALTY)
        self.scores = [0.0 if kind == "user" else score for kind, score in zip(kinds, scores, strict=True)]
        # The token trie as a dict of every token prefix: the id where a token ends there, else -1.
        matched = {
            text: token
            for token, (text, kind) in enumerate(zip(tokens, kinds, strict=True))
            if kind in ("normal", "user", "unused") and text
        }  # naive_trie::insert: the last id wins
        self.prefixes: dict[bytes, int] = dict.fromkeys({t[:end] for t in matched for end in range(1, len(t))}, -1)
        self.prefixes.update(matched)
        user = [text for text, kind in zip(tokens, kinds, strict=True) if kind == "user"]
        self.user_prefixes = {t[:end] for t in user for end in range(1, len(t) + 1)}
        starters = set(self.charsmap.starters if self.charsmap else ()) | {p[0] for p in self.user_prefixes}
        plain = bytes(c for c in range(256) if c not in starters)
        alternatives = []
        for low, high, tail in ((0x00, 0x7F, b""), (0xC0, 0xDF, b"{1}"), (0xE0, 0xEF, b"{2}"), (0xF0, 0xF7, b"{3}")):
            leads = bytes(c for c in plain if low <= c <= high)
            if leads:
                alternatives.append(b"[" + re.escape(leads) + b"]" + (b"[\x80-\xbf]" + tail if tail else b""))
        # An ASCII byte that starts keys but is none itself copies through too when the next byte
        # cannot continue a key (a capital letter before anything but a combining mark, say).
        groups: dict[frozenset[int], list[int]] = {}
        for c in sorted(starters):
            if c < 0x80 and self.charsmap and c not in {p[0] for p in self.user_prefixes}:
                is_key, follow = self.charsmap.followers(c)
                if not is_key:
                    groups.setdefault(follow, []).append(c)
        for follow, firsts in groups.items():
            lookahead = b"(?![" + re.escape(bytes(sorted(follow))) + b"])" if follow else b""
            alternatives.append(b"[" + re.escape(bytes(firsts)) + b"]" + lookahead)
        self._plain = re.compile(b"(?:" + b"|".join(alternatives) + b")+") if alternatives else None

    def encode(self, text: bytes) -> list[int]:
        return self._viterbi(self._whitespace(self._charsmap(text)))

    def _charsmap(self, text: bytes) -> bytes:
        """normalize_prefix over the whole text; runs that nothing can rewrite are copied at once."""
        out: list[bytes] = []
        pos, size = 0, len(text)
        while pos < size:
            run = self._plain.match(text, pos) if self._plain else None
            if run:
                out.append(run.group())
                pos = run.end()
                continue
            length = 0
            while pos + length < size and text[pos : pos + length + 1] in self.user_prefixes:
                length += 1
            if length:
                out.append(text[pos : pos + length])
                pos += length
                continue
            if self.charsmap:
                length, replacement = self.charsmap.longest_match(text, pos)
                if length:
                    out.append(replacement)
                    pos += length
                    continue
            char = _UTF8_CHAR.match(text, pos)
            if char:
                out.append(char.group())
                pos = char.end()
            else:
                out.append(REPLACEMENT)
                pos += 1
        return b"".join(out)

    def _whitespace(self, text: bytes) -> bytes:
        """The space handling of normalize (escape on, whitespace as prefix, as b11192 always has it)."""
        if self.remove_extra_whitespaces:
            words = [word for word in text.split(b" ") if word]
            return b"".join(ESCAPED_SPACE + word for word in words)
        escaped = text.replace(b" ", ESCAPED_SPACE)
        if not self.add_space_prefix:
            return escaped
        leading = len(text) - len(text.lstrip(b" "))
        if leading == len(text):
            return escaped
        return escaped[: leading * len(ESCAPED_SPACE)] + ESCAPED_SPACE + escaped[leading * len(ESCAPED_SPACE) :]

    def _viterbi(self, text: bytes) -> list[int]:
        size = len(text)
        if not size:
            return []
        best = [-sys.float_info.max] * (size + 1)  # -DBL_MAX: below every real sum
        best[0] = 0.0
        token_at = [self.unk_id] * (size + 1)
        start_at = [0] * (size + 1)
        get, scores, unknown, unk_id = self.prefixes.get, self.scores, self.unknown_score, self.unk_id
        pos = 0
        while pos < size:
            lead = text[pos]
            width = 1 if lead < 0x80 else min(_LEN[lead >> 4], size - pos)
            base = best[pos]
            whole = False
            end = pos + 1
            while end <= size:
                token = get(text[pos:end])
                if token is None:
                    break
                if token >= 0:
                    if end - pos == width:
                        whole = True
                    score = base + scores[token]
                    if score > best[end]:
                        best[end] = score
                        token_at[end] = token
                        start_at[end] = pos
                end += 1
            if not whole:
                end = pos + width
                score = base + unknown
                if score > best[end]:
                    best[end] = score
                    token_at[end] = unk_id
                    start_at[end] = pos
            pos += width
        out: list[int] = []
        end, prev_unknown = size, False
        while True:
            token = token_at[end]
            is_unknown = token == self.unk_id
            if not (prev_unknown and is_unknown):
                out.append(token)
            if start_at[end] == 0:
                break
            end, prev_unknown = start_at[end], is_unknown
        out.reverse()
        return out
