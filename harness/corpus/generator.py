"""The recording's seeded fuzz strings (`fuzz/NNNN` cases): the same seed, the same strings on any Python.

Nothing here asks the running interpreter about Unicode (no `unicodedata`, no `random` module whose
algorithms may change): the generator is SplitMix64 over fixed code point ranges, so a recording's
`fuzz: {seed, generator}` provenance names its inputs exactly. Bump `GENERATOR_VERSION` whenever a
change here would change any generated string.

Each string glues together 1-12 pieces: a run from one named Unicode range, a whitespace run, a digit
run, a contraction, a well-known special-token text, or (rarely) malformed UTF-8 that llama.cpp
accepts without aborting (the aborting kind lives in `corpora/invalid-utf8.yaml`, where each costs
one worker restart, not in every 2,000-string set).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.render import WHITESPACE

GENERATOR_VERSION = 1
DEFAULT_SEED = 11192
DEFAULT_COUNT = 2000

MASK64 = (1 << 64) - 1

RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "ascii": ((0x21, 0x7E),),
    "latin-1": ((0xA1, 0xFF),),
    "latin-extended": ((0x100, 0x24F), (0x1E00, 0x1EFF)),
    "combining-marks": ((0x300, 0x36F), (0x1AB0, 0x1ABE), (0x20D0, 0x20F0)),
    "greek": ((0x370, 0x377), (0x37A, 0x37F), (0x384, 0x38A), (0x38E, 0x3A1), (0x3A3, 0x3FF)),
    "cyrillic": ((0x400, 0x52F),),
    "armenian": ((0x531, 0x556), (0x559, 0x58A)),
    "georgian": ((0x10A0, 0x10C5), (0x10D0, 0x10FF)),
    "hebrew": ((0x591, 0x5C7), (0x5D0, 0x5EA), (0x5F0, 0x5F4)),
    "arabic": ((0x600, 0x6FF),),
    "devanagari": ((0x900, 0x97F),),
    "tamil": ((0xB82, 0xB83), (0xB85, 0xB8A), (0xBAA, 0xBB9), (0xBBE, 0xBCD), (0xBE6, 0xBFA)),
    "thai": ((0xE01, 0xE3A), (0xE3F, 0xE5B)),
    "hangul": ((0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3131, 0x318E)),
    "kana": ((0x3041, 0x3096), (0x30A0, 0x30FF)),
    "cjk": ((0x4E00, 0x9FFF), (0x3000, 0x303F), (0xFF01, 0xFF5E)),
    "cjk-supplementary": ((0x20000, 0x2A6DF), (0x2F800, 0x2FA1D)),
    "emoji": ((0x1F300, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F900, 0x1F9FF), (0x1F1E6, 0x1F1FF)),
    "math-alphanumerics": ((0x1D400, 0x1D7FF),),
    "box-drawing": ((0x2500, 0x257F), (0x2580, 0x259F)),
    "arrows": ((0x2190, 0x21FF), (0x27F0, 0x27FF)),
    "symbols": ((0x2600, 0x27BF), (0x2100, 0x214F), (0x20A0, 0x20C0)),
    "specials": ((0xFFF9, 0xFFFD), (0xFEFF, 0xFEFF), (0xFFFE, 0xFFFF), (0xE000, 0xE0FF), (0x200B, 0x200F)),
    "controls": ((0x00, 0x08), (0x0E, 0x1F), (0x7F, 0x9F)),
}

DIGITS = (
    "0123456789",
    "٠١٢٣٤٥٦٧٨٩",
    "०१२३४५६७८९",
    "๐๑๒๓๔๕๖๗๘๙",
    "０１２３４５６７８９",
    "²³¹⁴",
    "½¼¾",
    "ⅠⅡⅢⅣ",
    "①②③",
)

CONTRACTIONS = (
    "'s",
    "'t",
    "'re",
    "'ve",
    "'m",
    "'ll",
    "'d",
    "'S",
    "'T",
    "'RE",
    "'VE",
    "'M",
    "'LL",
    "'D",
    "’s",
)

# Texts that are special tokens in at least one of the shipped vocabularies (and plain text in others).
SPECIAL_TEXTS = (
    "<s>", "</s>", "<unk>", "<pad>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
    "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "[CLS]", "[SEP]", "[MASK]", "[PAD]", "<bos>",
    "<eos>", "<start_of_turn>", "<end_of_turn>", "<|user|>", "<|assistant|>", "<|end|>", "<|fim_prefix|>",
    "<BOS_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<｜begin▁of▁sentence｜>", "<|im_start", "<mask>",
)  # fmt: skip

MALFORMED_UTF8 = (
    b"\x80", b"\xbf", b"\xc3", b"\xc0\xaf", b"\xc1\xbf", b"\xe2\x82", b"\xed\xa0\x80", b"\xed\xbf\xbf",
    b"\xef\xbf", b"\xf0\x9f\x98", b"\xf0\x80\x80\x80", b"\xfe", b"\xff", b"\xf8\x88\x80\x80\x80",
)  # fmt: skip


class SplitMix64:
    """A tiny PRNG with a fixed algorithm, so seeds mean the same strings forever."""

    def __init__(self, seed: int) -> None:
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A number in [0, n), by rejection so there is no modulo bias."""
        limit = MASK64 - (MASK64 + 1) % n
        while True:
            value = self.next()
            if value <= limit:
                return value % n

    def pick(self, items: tuple[str, ...]) -> str:
        return items[self.below(len(items))]


RANGE_NAMES = tuple(RANGES)


def _range_run(rng: SplitMix64, name: str) -> str:
    spans = RANGES[name]
    out = []
    for _ in range(1 + rng.below(8)):
        low, high = spans[rng.below(len(spans))]
        out.append(chr(low + rng.below(high - low + 1)))
    return "".join(out)


def _piece(rng: SplitMix64) -> bytes:
    kind = rng.below(100)
    if kind < 55:
        text = _range_run(rng, RANGE_NAMES[rng.below(len(RANGE_NAMES))])
    elif kind < 70:
        text = "".join(rng.pick(WHITESPACE) for _ in range(1 + rng.below(4)))
    elif kind < 80:
        digits = rng.pick(DIGITS)
        text = "".join(digits[rng.below(len(digits))] for _ in range(1 + rng.below(12)))
    elif kind < 87:
        text = rng.pick(CONTRACTIONS)
    elif kind < 97:
        text = rng.pick(SPECIAL_TEXTS)
    else:
        return MALFORMED_UTF8[rng.below(len(MALFORMED_UTF8))]
    return text.encode("utf-8")


def fuzz_strings(seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT) -> Iterator[bytes]:
    """`count` byte strings, a pure function of (seed, GENERATOR_VERSION)."""
    rng = SplitMix64(seed)
    for _ in range(count):
        yield b"".join(_piece(rng) for _ in range(1 + rng.below(12)))
