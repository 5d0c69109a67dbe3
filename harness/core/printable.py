"""Text from outside tokconf made safe to show: a port's reasons and exception messages, a program's
standard error, names and case ids read from files.

Such text reaches a terminal, a CI log and the reports. Shown raw, a line break in it starts a line
of its own (`later\\nPASS: 2719 passed` after a real `FAIL:`), an ANSI escape rewrites the screen
(`\\x1b[2K\\x1b[1G` erases the verdict line and writes another), a bidi control reorders what a reader
sees, and a lone surrogate cannot be encoded at all: printing it ends the run with a traceback and no
verdict. So every character a terminal would not show as itself is written as its escape (`\\x1b`,
`\\u202e`, `\\ud800`), the way Python's `repr` writes it.
"""

from __future__ import annotations

LIMIT = 5000  # characters of one text shown: a program's stderr tail in a reason is at most 4096 bytes

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    """One character a terminal would not show as itself, as the escape Python's `repr` writes."""
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escape_unprintable(text: str) -> str:
    """`text` with every character that `str.isprintable` rejects (C0 and C1 controls, ESC, DEL, CR
    and LF, line and paragraph separators, format characters with the bidi controls U+202A-202E and
    U+2066-2069, lone surrogates, unassigned code points, spaces other than U+0020) as its escape.

    Backslashes are kept: this is for text tokconf composed of parts already shown with escapes (an
    input as `core.render.visible` shows it, a token's repr, a command line), where doubling them
    would change what it says. Text that came from outside whole goes through `printable`."""
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(char if char.isprintable() else _escape(char) for char in text)


def printable(text: str, limit: int | None = LIMIT) -> str:
    """Text from outside tokconf as one printable line: every character a terminal would not show as
    itself as its escape (`escape_unprintable`), line breaks included, and each backslash doubled
    (`\\\\`) so that no escape can be forged; cut after `limit` characters (none: never), saying how
    long it was, so that a port's megabyte of exception text costs a line, not a screen."""
    cut = text if limit is None or len(text) <= limit else text[:limit]
    shown = escape_unprintable(cut.replace("\\", "\\\\"))
    return shown if cut is text else f"{shown}… ({len(text)} characters)"


KEPT = 4 * LIMIT  # characters of a port's reason kept at all: 10,000 cases' reasons stay in memory


def kept(text: str) -> str:
    """A port's reason as tokconf keeps it, cut to `KEPT` characters: a reason is kept for every case
    it was given for, so a port answering megabytes of reason per input must not exhaust memory."""
    return text if len(text) <= KEPT else f"{text[:KEPT]}… ({len(text)} characters)"
