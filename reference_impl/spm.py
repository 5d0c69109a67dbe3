"""SentencePiece BPE as llama.cpp's `llm_tokenizer_spm_session` does it (src/llama-vocab.cpp).

The text (spaces already escaped to U+2581) is cut into UTF-8 characters by their lead byte alone
(`unicode_len_utf8`: nothing is validated, so invalid UTF-8 never aborts here), and adjacent
symbols are merged while their concatenation is a token: the highest score first, the leftmost on
ties (`llm_bigram_spm::comparator`). Every merge is remembered by its text (`rev_merge`, the last
pair with that text wins); a final symbol that is not a token is re-segmented through that map and,
at the bottom, becomes byte tokens `<0xXX>` (or the byte's own token).

Where the vocabulary allows it (`word_wise`), valid UTF-8 is merged word by word through a cache:
the same merges, since none can cross the start of a word.

`cut_valid` is a switch llama.cpp does not have (`tokconf check --explain` replays it): a lead byte whose
continuation bytes are not there is a symbol of one byte, the next symbol starting right after it
(memvanta's SentencePiece); llama.cpp's symbol takes as many bytes as the lead byte says, whatever they are.
"""

from __future__ import annotations

import heapq
import re
from itertools import pairwise

from tokconf_reference.errors import LlamaAborts
from tokconf_reference.word_cache import encode_words

# unicode_len_utf8: by the high nibble of the lead byte.
_LEN = (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4)
ESCAPED_SPACE = "\u2581".encode()
_WORD_START = re.compile(b"(?<!\xe2\x96\x81)(?=\xe2\x96\x81)")  # a U+2581 not after another
SCAN_LIMIT = 64  # words up to this many bytes are merged by scanning, longer ones with a queue
NO_PAIR = float("-inf")
_UTF8_CHAR = re.compile(rb"[\x00-\x7f]|[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf7][\x80-\xbf]{3}")


class UnknownByte(LlamaAborts, KeyError):
    """A byte with neither a <0xXX> token nor a token of its own: llama.cpp throws out_of_range here."""


class SentencePieceEncoder:
    def __init__(self, tokens: list[bytes], scores: list[float]) -> None:
        self.token_to_id = {text: i for i, text in enumerate(tokens)}
        # No token has U+2581 after another character, so no merge crosses the start of a word
        # (a U+2581 after a non-U+2581): words merge alone, in the same order, and can be cached.
        self.word_wise = not any(ESCAPED_SPACE in t.lstrip(ESCAPED_SPACE) for t in tokens)
        self.cache: dict[bytes, tuple[int, ...]] = {}
        self.cut_valid = False  # llama.cpp: unicode_len_utf8 alone decides a symbol's length
        self.scores = scores
        self.byte_tokens: list[int | None] = []
        for byte in range(256):
            token = self.token_to_id.get(f"<0x{byte:02X}>".encode())
            self.byte_tokens.append(token if token is not None else self.token_to_id.get(bytes([byte])))

    def encode(self, text: bytes) -> list[int]:
        """The ids of one escaped fragment; word by word (and cached) where that is provably the same."""
        if not self.word_wise:
            return self._merge_all(text)
        try:
            text.decode("utf-8")  # valid: character starts are where the lead bytes say
        except UnicodeDecodeError:
            return self._merge_all(text)
        words = [w for w in _WORD_START.split(text) if w]
        return encode_words(self.cache, words, self._merge_word)

    def _merge_word(self, word: bytes) -> tuple[int, ...]:
        return tuple(self._merge_short(word) if len(word) <= SCAN_LIMIT else self._merge_all(word))

    def _merge_short(self, text: bytes) -> list[int]:
        """The same merges by scanning, for a short word: the best-scoring pair that is a token, the
        leftmost on ties. (A symbol that is not a token was never merged, so it falls back to bytes.)"""
        chars = [m.group() for m in _UTF8_CHAR.finditer(text)]
        get, scores = self.token_to_id.get, self.scores

        def score(piece: bytes) -> float:
            token = get(piece)
            return NO_PAIR if token is None else scores[token]

        pairs = [score(a + b) for a, b in pairwise(chars)]
        while pairs:
            best = max(pairs)
            if best == NO_PAIR:
                break
            at = pairs.index(best)
            merged = chars[at] + chars[at + 1]
            chars[at : at + 2] = [merged]
            del pairs[at]
            if at < len(pairs):
                pairs[at] = score(merged + chars[at + 1])
            if at > 0:
                pairs[at - 1] = score(chars[at - 1] + merged)
        out: list[int] = []
        for piece in chars:
            token = get(piece)
            if token is not None:
                out.append(token)
                continue
            for byte in piece:
                byte_token = self.byte_tokens[byte]
                if byte_token is None:
                    raise UnknownByte(f"no token for byte 0x{byte:02X} (llama.cpp aborts: out_of_range)")
                out.append(byte_token)
        return out

    def _merge_all(self, text: bytes) -> list[int]:
        starts: list[int] = []
        offs = 0
        while offs < len(text):
            starts.append(offs)
            length = min(_LEN[text[offs] >> 4], len(text) - offs)
            if self.cut_valid and any(b & 0xC0 != 0x80 for b in text[offs + 1 : offs + length]):
                length = 1  # the switch: a lead byte without its continuation bytes stands alone
            offs += length
        n = len(starts)
        if n == 0:
            return []
        size = [(starts[i + 1] if i + 1 < n else len(text)) - starts[i] for i in range(n)]
        nxt = [*range(1, n), -1]
        prv = list(range(-1, n - 1))
        heap: list[tuple[float, int, int, int]] = []
        rev_merge: dict[bytes, tuple[int, int]] = {}
        token_to_id, scores = self.token_to_id, self.scores

        def try_add(left: int, right: int) -> None:
            if left < 0 or right < 0:
                return
            piece = text[starts[left] : starts[left] + size[left] + size[right]]
            token = token_to_id.get(piece)
            if token is None:
                return
            heapq.heappush(heap, (-scores[token], left, right, len(piece)))
            rev_merge[piece] = (left, right)

        for i in range(1, n):
            try_add(i - 1, i)
        while heap:
            _, left, right, merged = heapq.heappop(heap)
            if size[left] == 0 or size[right] == 0 or size[left] + size[right] != merged:
                continue
            size[left] += size[right]
            size[right] = 0
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            try_add(prv[left], left)
            try_add(left, nxt[left])
        out: list[int] = []
        i = 0
        while i != -1:
            self._resegment(text, starts, size, i, rev_merge, out)
            i = nxt[i]
        return out

    def _resegment(
        self, text: bytes, starts: list[int], size: list[int], index: int, rev_merge: dict[bytes, tuple[int, int]],
        out: list[int],
    ) -> None:  # fmt: skip
        """resegment, reading the symbols as they are now (as llama.cpp does), with a stack for recursion."""
        stack = [index]
        while stack:
            symbol = stack.pop()
            piece = text[starts[symbol] : starts[symbol] + size[symbol]]
            token = self.token_to_id.get(piece)
            if token is not None:
                out.append(token)
                continue
            pair = rev_merge.get(piece)
            if pair is None:
                for byte in piece:
                    byte_token = self.byte_tokens[byte]
                    if byte_token is None:
                        raise UnknownByte(f"no token for byte 0x{byte:02X} (llama.cpp aborts: out_of_range)")
                    out.append(byte_token)
                continue
            stack.extend((pair[1], pair[0]))
