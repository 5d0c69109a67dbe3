"""Text for people: inputs with their whitespace visible, code points, and the window of ids around the
first divergence, each id with its piece. Every report (check, diff, fuzz, explain) renders with these.
The pieces come from a lookup the caller gives (`tokconf.recording.pieces`): nothing here reads a
vocabulary."""

from __future__ import annotations

from collections.abc import Callable, Sequence

PieceLookup = Callable[[int], str]  # a token id to its piece as shown ('·the'), "" when unknown

# Every Unicode White_Space character (and CRLF as a unit), in a fixed order: the seeded generator
# draws from this tuple by index, so its order is part of `GENERATOR_VERSION`.
WHITESPACE = (
    "\t", "\n", "\x0b", "\x0c", "\r", " ", "\x85", "\xa0", "\u1680", "\u2000", "\u2001", "\u2002",
    "\u2003", "\u2004", "\u2005", "\u2006", "\u2007", "\u2008", "\u2009", "\u200a", "\u2028",
    "\u2029", "\u202f", "\u205f", "\u3000", "\r\n",
)  # fmt: skip

VISIBLE = {" ": "·", "\t": "→", "\n": "↵", "\r": "←", "\x0b": "⇣", "\x0c": "⇟"}
# Shown as <U+XXXX>: every other Unicode whitespace, and the zero-width and format characters.
INVISIBLE = set("".join(WHITESPACE)) - set(VISIBLE) | set("\u200b\u200c\u200d\u2060\ufeff\u00ad")


def visible(data: bytes, limit: int = 200) -> str:
    """The input with whitespace and controls made visible, invalid bytes as \\xNN."""
    text = data.decode("utf-8", errors="backslashreplace")
    shown = []
    for ch in text[:limit]:
        if ch in VISIBLE:
            shown.append(VISIBLE[ch])
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in INVISIBLE:
            shown.append(f"<U+{ord(ch):04X}>")
        else:
            shown.append(ch)
    return "".join(shown) + (f"… ({len(data)} bytes)" if len(text) > limit else "")


def code_point_list(data: bytes) -> list[str]:
    """`["U+0048", "U+0069", "\\xFF"]`: each character's code point, each invalid byte as itself."""
    text = data.decode("utf-8", errors="surrogateescape")
    return [f"\\x{ord(c) - 0xDC00:02X}" if 0xDC80 <= ord(c) <= 0xDCFF else f"U+{ord(c):04X}" for c in text]


def code_points(data: bytes, limit: int = 24) -> str:
    """`U+0048 U+0069 \\xFF`, the first `limit` of `code_point_list`."""
    points = code_point_list(data)
    return " ".join(points[:limit]) + (" …" if len(points) > limit else "")


def first_divergence(expected: list[int], actual: list[int]) -> int:
    """The first index where two id lists differ (the shorter length when one is a prefix)."""
    for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
        if a != b:
            return i
    return min(len(expected), len(actual))


def ids_window(ids: list[int], at: int, lookup: PieceLookup, width: int, pieces: Sequence[bytes] | None = None) -> str:
    """The ids within `width` of index `at`, each with its piece, `at` marked with `>`. `pieces`, when
    given, are the ids' own pieces (aligned with `ids`: an implementation's decoding), else `lookup`'s
    (the vocab file's)."""
    window = range(max(0, at - width), min(len(ids), at + width + 1))
    shown = []
    for i in window:
        text = f"'{visible(pieces[i], 40)}'" if pieces is not None else lookup(ids[i])
        shown.append(f"{'>' if i == at else ' '}{ids[i]} {text}".rstrip())
    return "  ".join(shown)
