"""Byte-level BPE as llama.cpp's `llm_tokenizer_bpe_session::tokenize` does it (src/llama-vocab.cpp).

Each pre-tokenized word is byte-encoded (GPT-2's byte-to-unicode map, `unicode_byte_to_utf8`), cut
into UTF-8 characters, and merged pair by pair: the pair with the lowest merge rank first, the
leftmost on ties (`llm_bigram_bpe::comparator`), through a priority queue so a long word costs
n log n, not n². With `ignore_merges` (the llama3 family) a word that is a whole token is taken as
it is. `tie_break` is a switch llama.cpp does not have, replayed by `tokconf check --explain` to name a
port's merge order: "right" merges the rightmost of equal-rank pairs first, "heap" pops equal ranks in
the order of a textbook binary heap comparing ranks alone (ollama's `binaryheap.NewWith` over
`cmp.Compare(rank)`: `!!!!!!` is `!!!` `!!!` merged from the right in gpt-2).
A final symbol that is not a token falls back to the tokens of its single bytes, and bytes
without a token are dropped, as llama.cpp drops them. Words are cached: prose repeats them.
"""

from __future__ import annotations

import heapq
from itertools import pairwise

from tokconf_reference.errors import LlamaAborts
from tokconf_reference.pretokenize import LLAMA_CLASSES, split
from tokconf_reference.word_cache import encode_words

GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
LLAMA3 = (
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
QWEN2 = (
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
QWEN35 = (
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
)
DEEPSEEK_LLM_LETTERS = (  # copied from llama-vocab.cpp b11192, as escapes
    "A-Za-z\xb5\xc0-\xd6\xd8-\xf6\xf8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376"
    "\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-"
    "\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b"
    "\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59"
    "\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3"
    "\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d"
    "\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00"
    "-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787"
    "\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-"
    "\U000118df\U0001e900-\U0001e943"
)

CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
DEEPSEEK3 = (
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)
SPARK = (
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+"
)
CASED = (  # tekken / gpt-4o: capitals then lower case, or the other way round (<C>: an optional suffix)
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+<C>"
    "|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*<C>"
)
CASED_M = CASED.replace("(?=[\\p{L}])", "(?=[\\p{L}\\p{M}])")
CASED_CLASSES = (  # youtu / tiny_aya: the same with letter classes
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" + CONTRACTIONS + "?"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" + CONTRACTIONS + "?"
)
TAIL = "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
PORO = " ?[^(\\s|.,!?…。，、।۔،)]+"

RAW_UTF8 = {"gemma4", "sarvam-moe", "whitespace"}  # pre types with byte_encode = false

# llm_tokenizer_bpe's regex lists by llama_vocab_pre_type (the constructor's switch), written as
# llama.cpp writes them; pretokenize.split runs them as llama.cpp does.
PRE_REGEXES: dict[str, list[str]] = {
    "default": ["[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"],
    "llama3": [LLAMA3],
    "jais2": [
        LLAMA3.replace(
            "|\\s+(?!\\S)|\\s+",
            "".join(f"|\\s{{{n}}}(?!\\S)" for n in (512, 256, 128, 64, 32, 16, 8, 4)) + "|\\s{1,2}(?!\\S)|\\s{1}",
        )
    ],
    "gpt2": [GPT2],
    "starcoder": ["\\p{N}", GPT2],
    "qwen2": [QWEN2],
    "qwen35": [QWEN35],
    "falcon": ["[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"],
    "deepseek-llm": [
        "[\r\n]",
        f"\\s?[{DEEPSEEK_LLM_LETTERS}]+",
        "\\s?[!-/:-~！-／：-～‘-‟\u3000-。]+",
        "\\s+$",
        "[一-龥ࠀ-一가-\ud7ff]+",
        "\\p{N}+",
    ],
    "deepseek3-llm": ["\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", DEEPSEEK3],
    "spark2_5": ["\\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+", SPARK, "\\p{N}"],
    "youtu": [
        "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
        CASED_CLASSES + "|\\p{N}" + TAIL,
    ],
    "gemma4": ["[^\\n]+|[\\n]+"],  # split on newlines only; spaces are already U+2581
    "sarvam-moe": ["[^\\n]+|[\\n]+"],
    "whitespace": ["\\S+"],
    "afmoe": [
        "\\p{AFMoE_digits}",
        "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
        DEEPSEEK3.replace("\r", "\\r").replace("\n", "\\n"),  # the same, with \r \n as regex escapes
    ],
    "tiny_aya": ["\\d{1,3}(?=(?:\\d{3})*\\b)", CASED_CLASSES + "|\\p{N}{1,3}" + TAIL],
    "superbpe": ["\\p{N}+", "(?=(\\d{3})+(?!\\d))"],
    "kimi-k2": ["\\p{Han}+"],  # llama.cpp's hand-written splitter (pretokenize.CUSTOM)
    "deepseek-coder": ["[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", "[一-龥ࠀ-一가-\ud7ff]+", "\\p{N}"],
    "poro": [PORO],
    "viking": [PORO, "\\p{N}"],
    "tekken": [CASED.replace("<C>", "") + "|\\p{N}" + TAIL],
    "chameleon": [
        "<sentinel:[0-9]+>",
        "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
        "([\\t\\n]|    |  )",
        "\\p{N}",
        "[\\p{P}!-/:-@\\[-`{-~]",
        GPT2,
    ],
    "gpt4o": [CASED.replace("<C>", CONTRACTIONS + "?") + "|\\p{N}{1,3}" + TAIL],
    "granite-emb-multi": [CASED_M.replace("<C>", CONTRACTIONS + "?") + "|\\p{N}{1,3}" + TAIL],
    "bailingmoe": [
        "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
        "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
    ],
    "seed-coder": [
        CONTRACTIONS
        + "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
    ],
    "ufakzeka": [QWEN2.removeprefix(CONTRACTIONS + "|")],
    "laguna": ["[^\\n]+|[\\n]+", QWEN2],
    "exaone-moe": [
        CONTRACTIONS + "|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}"
        "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
    ],
    "minicpm5": ["\\p{N}{1,3}", LLAMA3.replace("|\\p{N}{1,3}|", "|\\p{N}+|")],
}


def _byte_to_unicode() -> list[str]:
    """unicode_byte_to_utf8_map: printable bytes map to themselves, the rest to U+0100 upwards."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = [""] * 256
    for byte in keep:
        table[byte] = chr(byte)
    extra = 0
    for byte in range(256):
        if not table[byte]:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_UNICODE = _byte_to_unicode()


def byte_level(data: bytes) -> str:
    """`data` as byte-level BPE spells it (unicode_byte_encoding_process): each byte its printable
    stand-in, BYTE_TO_UNICODE's."""
    return data.decode("latin-1").translate(BYTE_TO_UNICODE)


NO_MERGE = 1 << 62  # above every merge rank
SCAN_LIMIT = 64  # words up to this many characters are merged by scanning, longer ones with a queue


def _ranks(merges: list[str]) -> dict[tuple[str, str], int]:
    """bpe_ranks: each merge line cut at its first space from position 1; a repeated pair keeps its
    first rank (emplace). Lines without such a space give keys no lookup can meet."""
    if "\n " in "\n" + "\n".join(merges):  # a line may start with a space: find(' ', 1) is not a split
        ranks: dict[tuple[str, str], int] = {}
        for rank, merge in enumerate(merges):
            cut = merge.find(" ", 1)
            if cut > 0:
                ranks.setdefault((merge[:cut], merge[cut + 1 :]), rank)
        return ranks
    pairs = [tuple(merge.split(" ", 1)) for merge in merges]
    # Later entries overwrite earlier ones, so going backwards leaves each pair's first rank.
    return dict(zip(reversed(pairs), range(len(pairs) - 1, -1, -1), strict=True))  # type: ignore[arg-type]


class MergeAbort(LlamaAborts, ValueError):
    """llama.cpp aborts here (a GGML_ASSERT); a port must refuse the input."""


class BytePairEncoder:
    """The merge step of one byte-level BPE vocabulary."""

    def __init__(
        self,
        token_to_id: dict[str, int],
        merges: list[str],
        regexes: list[str],
        ignore_merges: bool,
        byte_encode: bool = True,
        newline_runs: bool = False,
    ) -> None:
        self.token_to_id = token_to_id
        self.ranks = _ranks(merges)
        self.regexes = regexes
        self.ignore_merges = ignore_merges
        self.byte_encode = byte_encode  # false for RAW_UTF8 types: raw UTF-8 symbols, <0xXX> byte fallback
        self.newline_runs = newline_runs  # gemma4: a run of newlines that is a token is taken whole
        self.cache: dict[str, tuple[int, ...]] = {}
        self.classes = LLAMA_CLASSES  # what the regexes see of each code point (`pretokenize.reclassified`)
        self.tie_break = "left"  # llm_bigram_bpe::comparator: the leftmost of equal ranks; "right" is a port's
        # A port's order, not llama.cpp's: the bytes mapped to their stand-ins before the split (llama3.java's
        # Tokenizer.encode), so the regexes see `Ġ` for a space and a character's bytes as stand-ins apart
        self.map_before_split = False

    def encode(self, text: str) -> list[int]:
        """Token ids of one raw-text fragment, decoded to code points as llama.cpp decodes it."""
        if self.map_before_split and self.byte_encode:
            mapped = byte_level(text.encode("utf-8", "surrogatepass"))
            return encode_words(self.cache, split(mapped, self.regexes, self.classes), self.merge_word)
        return encode_words(self.cache, split(text, self.regexes, self.classes), self.encode_word)

    def encode_word(self, raw_word: str) -> tuple[int, ...]:
        """The ids of one pre-tokenized word."""
        # unicode_byte_encoding_process: the word's UTF-8 (surrogates as llama.cpp encodes them), each
        # byte mapped to its printable stand-in.
        word = byte_level(raw_word.encode("utf-8", "surrogatepass")) if self.byte_encode else raw_word
        return self.merge_word(word)

    def merge_word(self, word: str) -> tuple[int, ...]:
        """The ids of one word as the merges see it (byte-encoded, unless the vocabulary is raw UTF-8)."""
        if self.newline_runs and not word.strip("\n") and word in self.token_to_id:
            return (self.token_to_id[word],)
        if self.ignore_merges and word in self.token_to_id:
            return (self.token_to_id[word],)
        if len(word) == 1 and word in self.token_to_id:  # nothing to merge
            return (self.token_to_id[word],)
        symbols = list(word)  # byte-encoded text: one character per UTF-8 character of it
        if not self.byte_encode and len(symbols) > 1 and " " in word:
            # The first pairs are looked up at once, and llama_vocab::find_bpe_rank asserts that
            # neither side holds a space (byte-encoded or escaped text never does).
            raise MergeAbort("a space inside a raw-UTF-8 BPE word (llama.cpp: GGML_ASSERT in find_bpe_rank)")
        if self.tie_break == "heap" and len(symbols) > 1:
            symbols = _rank_heap_merge(symbols, self.ranks)
        elif len(symbols) > SCAN_LIMIT:
            symbols = self._merge(symbols)
        elif len(symbols) > 1:
            symbols = self._merge_short(symbols)
        ids = list(map(self.token_to_id.get, symbols))
        if None not in ids:
            return tuple(ids)  # type: ignore[arg-type]
        out: list[int] = []
        for symbol in symbols:
            token = self.token_to_id.get(symbol)
            if token is not None:
                out.append(token)
                continue
            for byte in symbol.encode("utf-8", "surrogatepass"):  # each byte of the symbol's UTF-8
                key = bytes([byte]).decode("utf-8", errors="surrogateescape") if self.byte_encode else f"<0x{byte:02X}>"
                fallback = self.token_to_id.get(key)
                if fallback is not None:
                    out.append(fallback)
        return tuple(out)

    def _merge_short(self, symbols: list[str]) -> list[str]:
        """The same greedy order by scanning: for a short word cheaper than keeping a queue."""
        get = self.ranks.get
        ranks = [get(pair, NO_MERGE) for pair in pairwise(symbols)]  # ranks[i]: symbols i and i+1
        while ranks:
            best = min(ranks)
            if best == NO_MERGE:
                break
            # the leftmost of the lowest rank (llama.cpp), or the rightmost (`tie_break`)
            at = ranks.index(best) if self.tie_break == "left" else len(ranks) - 1 - ranks[::-1].index(best)
            merged = symbols[at] + symbols[at + 1]
            symbols[at : at + 2] = [merged]
            del ranks[at]  # only the two pairs beside the merge change
            if at < len(ranks):
                ranks[at] = get((merged, symbols[at + 1]), NO_MERGE)
            if at > 0:
                ranks[at - 1] = get((symbols[at - 1], merged), NO_MERGE)
        return symbols

    def _merge(self, symbols: list[str]) -> list[str]:
        """Lowest rank first, leftmost on ties; stale queue entries are skipped, as llama.cpp does."""
        n = len(symbols)
        text = symbols[:]
        nxt = [*range(1, n), -1]
        prv = list(range(-1, n - 1))
        heap: list[tuple[int, int, str, int]] = []
        ranks = self.ranks
        side = 1 if self.tie_break == "left" else -1  # the position's sign in the queue's key

        def push(left: int) -> None:
            right = nxt[left]
            if left < 0 or right < 0:
                return
            rank = ranks.get((text[left], text[right]))
            if rank is not None:
                heapq.heappush(heap, (rank, side * left, text[left] + text[right], right))

        for i in range(n - 1):
            push(i)
        while heap:
            _, signed, merged, right = heapq.heappop(heap)
            left = signed * side
            if not text[left] or not text[right] or nxt[left] != right or text[left] + text[right] != merged:
                continue
            text[left] = merged
            text[right] = ""
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            if prv[left] >= 0:
                push(prv[left])
            push(left)
        return [t for t in text if t]


def _rank_heap_merge(symbols: list[str], ranks: dict[tuple[str, str], int]) -> list[str]:
    """Merges popped from a binary heap that compares ranks alone (no position: equal ranks come
    out in heap order), each pushed by appending and bubbling up while the parent's rank is greater,
    popped by moving the last entry to the root and bubbling it down to the smaller child (the left
    one on equal ranks). Not llama.cpp: the queue of gods' `binaryheap` as ollama's BPE uses it,
    a port's `tie_break` ("heap") that `--explain` replays."""
    text = symbols[:]
    n = len(text)
    nxt, prv = [*range(1, n), -1], list(range(-1, n - 1))
    heap: list[tuple[int, int, int, str]] = []  # rank, left, right, merged

    def push(left: int, right: int) -> None:
        if left < 0 or right < 0:
            return
        rank = ranks.get((text[left], text[right]))
        if rank is None:
            return
        heap.append((rank, left, right, text[left] + text[right]))
        at = len(heap) - 1
        while at > 0 and heap[(at - 1) >> 1][0] > heap[at][0]:
            parent = (at - 1) >> 1
            heap[at], heap[parent] = heap[parent], heap[at]
            at = parent

    def pop() -> tuple[int, int, int, str]:
        top = heap[0]
        heap[0] = heap[-1]
        heap.pop()
        at, size = 0, len(heap)
        while 2 * at + 1 < size:
            child = 2 * at + 1
            if child + 1 < size and heap[child][0] > heap[child + 1][0]:
                child += 1
            if heap[at][0] <= heap[child][0]:
                break
            heap[at], heap[child] = heap[child], heap[at]
            at = child
        return top

    for i in range(n - 1):
        push(i, i + 1)
    while heap:
        _, left, right, merged = pop()
        if not text[left] or not text[right] or text[left] + text[right] != merged:
            continue
        text[left], text[right] = merged, ""
        nxt[left] = nxt[right]
        if nxt[right] >= 0:
            prv[nxt[right]] = left
        push(prv[left], left)
        push(left, nxt[left])
    return [t for t in text if t]
