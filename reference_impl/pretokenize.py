"""Pre-tokenization as llama.cpp's `unicode_regex_split` does it (src/unicode.cpp).

llama.cpp runs each regex of the vocabulary's pre-tokenizer over the pieces the previous one made.
Where a regex uses `\\p{..}` classes it is applied to a *collapsed* text: every code point below 128
stays itself, every other one becomes one byte for its class in llama.cpp's own tables (0xD1 number,
0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 anything else, 0x0B whitespace), and
`\\p{X}` in the regex becomes that byte plus its ASCII members. Other regexes run on the code points
with non-ASCII whitespace replaced by 0x0B. Text between matches is kept as a piece of its own
(`unicode_regex_split_stl`). Running Python's `re` on the same collapsed text gives the same pieces:
the classes, not the regex engine's Unicode tables, decide what is a letter.

The four patterns llama.cpp implements by hand (gpt2, llama3, qwen2, qwen35) are the same regexes
written out as code, so they go through the same path.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

from tokconf_reference import unicode_data_b11192 as data
from tokconf_reference.unicode import ACCENT_MARK, CATEGORY, LETTER, NUMBER, PUNCTUATION, SYMBOL, WHITESPACE

# unicode_regex_split: k_ucat_cpt and k_ucat_map.
_CLASS_BYTE = {NUMBER: "\xd1", LETTER: "\xd2", PUNCTUATION: "\xd3", ACCENT_MARK: "\xd4", SYMBOL: "\xd5"}
LETTER_BYTE, OTHER_BYTE = _CLASS_BYTE[LETTER], "\xd0"  # a letter, and a code point of no class, to the regexes
_CLASS_OF = {
    "\\p{N}": (NUMBER, "0-9"),
    "\\p{L}": (LETTER, "A-Za-z"),
    "\\p{P}": (PUNCTUATION, "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}"),
    "\\p{M}": (ACCENT_MARK, ""),
    "\\p{S}": (SYMBOL, "\\$\\+<->\\^`\\|~"),
    "\\p{Lu}": (LETTER, "A-Za-z"),
    "\\p{Ll}": (LETTER, "A-Za-z"),
    "\\p{Lt}": (LETTER, "A-Za-z"),
    "\\p{Lm}": (LETTER, "A-Za-z"),
    "\\p{Lo}": (LETTER, "A-Za-z"),
}
_PROPERTY = re.compile(r"\\p\{[A-Za-z]{1,2}\}")
# For regexes without classes: std::wregex sees non-ASCII whitespace as 0x0B, the rest as it is.
_PLAIN = {cpt: "\x0b" for cpt in WHITESPACE if cpt > 0x7F}


def _collapse_table() -> list[str]:
    """One character per code point: itself below 128, 0x0B for whitespace, else its class byte."""
    classes = bytearray(0xD0 for _ in range(256))
    for flag, byte in _CLASS_BYTE.items():
        classes[flag] = ord(byte)
    table = bytearray(CATEGORY.translate(bytes(classes)))
    table[:128] = bytes(range(128))
    for cpt in WHITESPACE:
        if cpt > 0x7F:
            table[cpt] = 0x0B
    return list(table.decode("latin-1"))


COLLAPSE = _collapse_table()  # a list, so str.translate looks each code point up in C


@dataclass(frozen=True, eq=False)
class Classes:
    """What the regexes see of each code point: `collapse` for regexes with `\\p{..}` classes,
    `plain` for the others, and whether ASCII text may skip the translation (it is itself in both
    tables for llama.cpp's own classes)."""

    collapse: list[str]
    plain: Mapping[int, str]
    ascii_as_is: bool = True


LLAMA_CLASSES = Classes(COLLAPSE, _PLAIN)


def reclassified(whitespace: Mapping[int, bool]) -> Classes:
    """llama.cpp's classes with some code points moved into (True) or out of (False) the whitespace
    class, the rest of each moved one's class as llama.cpp's tables say. Not llama.cpp: a port's
    deviation, reproduced so that `tokconf check --explain` can confirm a `whitespace-class` cause
    (a port whose regex engine's `\\s` differs, as JavaScript's does for U+0085 and U+FEFF)."""
    collapse = list(COLLAPSE)
    plain = dict(_PLAIN)
    for cpt, is_space in whitespace.items():
        if is_space:
            collapse[cpt] = plain[cpt] = "\x0b"
            continue
        plain.pop(cpt, None)
        if cpt < 0x80:  # an ASCII space character the port does not count: some other control
            collapse[cpt] = plain[cpt] = "\x01"
        else:
            collapse[cpt] = _CLASS_BYTE.get(CATEGORY[cpt], OTHER_BYTE)
    return Classes(collapse, plain, ascii_as_is=all(cpt >= 0x80 for cpt in whitespace))


def _collapse_regex(expr: str) -> str:
    """Replace `\\p{X}` by its class byte and ASCII members, inside `[...]` or as a new class."""
    out: list[str] = []
    inside = False
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch == "[" and (i == 0 or expr[i - 1] != "\\"):
            inside = True
        elif inside and ch == "]" and expr[i - 1] != "\\":
            inside = False
        match = _PROPERTY.match(expr, i)
        if match and match.group() in _CLASS_OF:
            flag, members = _CLASS_OF[match.group()]
            body = _CLASS_BYTE[flag] + members
            out.append(body if inside else f"[{body}]")
            i = match.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


@lru_cache(maxsize=64)
def compile_expr(expr: str) -> tuple[re.Pattern[str], bool]:
    """A Python regex equivalent to llama.cpp's std::regex use of `expr`, and whether it wants collapsed text."""
    collapsed = any(name in expr for name in _CLASS_OF)  # the k_ucat_enum names, as llama.cpp checks
    source = _uncapture(_collapse_regex(expr) if collapsed else expr)
    # std::regex ECMAScript: \s, \d, \w are ASCII-only here; Python's re.ASCII gives the same.
    pattern = re.compile(source, re.ASCII)
    assert not pattern.groups, "split() relies on findall returning whole matches"
    return pattern, collapsed


def _uncapture(expr: str) -> str:
    """Groups as non-capturing ones: llama.cpp compiles with `nosubs`, and findall must return
    whole matches (tekken's and gpt-4o's regexes group their lookaheads)."""
    out: list[str] = []
    inside = escaped = False
    for i, ch in enumerate(expr):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == "[" and not inside:
            inside = True
        elif ch == "]" and inside:
            inside = False
        elif ch == "(" and not inside and not expr.startswith("?", i + 1):
            out.append("(?:")
            continue
        out.append(ch)
    return "".join(out)


_NUMBER_RUN = re.compile("[0-9\xd1]+")  # in collapsed text: a run of code points llama.cpp counts as numbers


def _afmoe_digits(piece: str) -> list[int]:
    """unicode_regex_split_custom_afmoe: each run of numbers in groups of three from the right; the
    text before a run goes with the run's first group, as llama.cpp emits it."""
    subject = piece if piece.isascii() else piece.translate(COLLAPSE)
    lengths: list[int] = []
    previous = 0
    for run in _NUMBER_RUN.finditer(subject):
        start, end = run.span()
        cut = start + (end - start) % 3
        if cut == start:
            cut += 3
        while cut <= end:
            lengths.append(cut - previous)
            previous = cut
            cut += 3
    if previous < len(subject):
        lengths.append(len(subject) - previous)
    return lengths


_WS, _IN = 1 << 8, 1 << 9  # kimi-k2's flags beyond the category: whitespace, inside the piece
_HAN = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
        (0x2B820, 0x2CEAF), (0x2CEB0, 0x2EBEF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))  # fmt: skip
_CR_LF = (0x0D, 0x0A)


def _is_han(cpt: int) -> bool:
    """unicode_cpt_is_han."""
    return any(first <= cpt <= last for first, last in _HAN)


def _kimi_k2(piece: str) -> list[int]:
    """unicode_regex_split_custom_kimi_k2, step for step: Han runs, letter words (Han excluded) with
    an optional lead character and contraction, numbers in threes, punctuation runs, whitespace."""
    cpts = [ord(ch) for ch in piece]
    size = len(cpts)
    out_of_range = -1

    def cpt(i: int) -> int:
        return cpts[i] if i < size else out_of_range

    def fl(i: int) -> int:
        if i >= size:
            return 0
        return CATEGORY[cpts[i]] | (_WS if cpts[i] in WHITESPACE else 0) | _IN

    def letter(i: int) -> bool:
        return bool(fl(i) & LETTER) and not _is_han(cpt(i))

    lengths: list[int] = []
    previous = 0

    def add(end: int) -> None:
        nonlocal previous
        if end > previous:
            lengths.append(end - previous)
        previous = end

    pos = 0
    while pos < size:
        c, f = cpts[pos], fl(pos)
        if _is_han(c):
            while pos < size and _is_han(cpts[pos]):
                pos += 1
            add(pos)
            continue
        leads = not (c in _CR_LF or f & (LETTER | NUMBER))
        if letter(pos) or (leads and letter(pos + 1)):
            if leads:
                pos += 1
            has_letters = False
            while letter(pos):
                has_letters = True
                pos += 1
            if has_letters or (not leads and letter(pos)):
                if not has_letters:
                    pos += 1
                while letter(pos):
                    pos += 1
                if cpt(pos) == 0x27 and pos + 1 < size:  # (?:'s|'t|'re|'ve|'m|'ll|'d)
                    following = data.LOWERCASE.get(cpt(pos + 1), cpt(pos + 1))
                    if following in b"stmd":
                        pos += 2
                    elif pos + 2 < size:
                        after = data.LOWERCASE.get(cpt(pos + 2), cpt(pos + 2))
                        if (following, after) in ((0x72, 0x65), (0x76, 0x65), (0x6C, 0x6C)):
                            pos += 3
                add(pos)
                continue
            if leads:
                pos -= 1
        if f & NUMBER:
            start = pos
            while fl(pos) & NUMBER:
                pos += 1
                if pos - start >= 3:
                    add(pos)
                    start = pos
            add(pos)
            continue
        f2 = fl(pos + 1) if c == 0x20 else f
        if not f2 & (_WS | LETTER | NUMBER) and f2:
            pos += c == 0x20
            while not f2 & (_WS | LETTER | NUMBER) and f2:
                pos += 1
                f2 = fl(pos)
            while cpt(pos) in _CR_LF:
                pos += 1
            add(pos)
            continue
        spaces = last_newline = 0
        while fl(pos + spaces) & _WS:
            if cpt(pos + spaces) in _CR_LF:
                last_newline = pos + spaces + 1
            spaces += 1
        if last_newline:
            pos = last_newline
        elif spaces > 1 and cpt(pos + spaces) != out_of_range:
            pos += spaces - 1
        elif spaces:
            pos += spaces
        else:
            pos += 1
        add(pos)
    return lengths


# Regexes llama.cpp does not run as regexes but dispatches to hand-written splitters
# (unicode_regex_split_custom); the others of that list (gpt2, llama3, qwen2, qwen35, newlines)
# are the same as their regexes.
CUSTOM = {
    "\\p{Han}+": _kimi_k2,
    "\\p{AFMoE_digits}": _afmoe_digits,
    "\\d{1,3}(?=(?:\\d{3})*\\b)": _afmoe_digits,  # tiny_aya: "TODO: revisit", llama.cpp runs afmoe's
}


def split(text: str, exprs: list[str], classes: Classes = LLAMA_CLASSES) -> list[str]:
    """The words llama.cpp's pre-tokenizer makes of `text` (a str of code points, surrogates allowed).

    unicode_regex_split_stl: each regex cuts every piece the previous one made into its matches and
    the gaps between them. The regex runs on the piece as llama.cpp sees it (collapsed, or with
    non-ASCII whitespace as 0x0B: one character per code point either way, and the piece itself
    when it is ASCII), and the words are cut from the piece at the same offsets.
    """
    ascii_text = classes.ascii_as_is and text.isascii()
    pieces = [text]
    for expr in exprs:
        custom = CUSTOM.get(expr)
        if custom is not None:
            out_custom: list[str] = []
            for piece in pieces:
                ends = list(accumulate(custom(piece)))
                out_custom += map(piece.__getitem__, map(slice, [0, *ends[:-1]], ends))
            pieces = out_custom
            continue
        pattern, wants_collapsed = compile_expr(expr)
        table = classes.collapse if wants_collapsed else classes.plain
        out: list[str] = []
        for piece in pieces:
            subject = piece if ascii_text else piece.translate(table)
            matches = pattern.findall(subject)  # the patterns have no capturing groups
            lengths = list(map(len, matches))
            if sum(lengths) == len(piece):  # the matches tile the piece: no gaps (the usual case)
                if ascii_text:
                    out += matches
                    continue
            else:
                lengths = _split_stl(subject, pattern)
            ends = list(accumulate(lengths))
            out += map(piece.__getitem__, map(slice, [0, *ends[:-1]], ends))
        pieces = out
    return pieces


def _split_stl(subject: str, pattern: re.Pattern[str]) -> list[int]:
    """The lengths of the matches and of the gaps between them, in order."""
    out: list[int] = []
    position = 0
    for match in pattern.finditer(subject):
        if match.start() > position:
            out.append(match.start() - position)
        out.append(match.end() - match.start())
        position = match.end()
    if position < len(subject):
        out.append(len(subject) - position)
    return out
