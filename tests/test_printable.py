"""`core.printable`: text from a port or a file, made one printable line that says exactly what it held."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tokconf.core.printable import LIMIT, escape_unprintable, printable

# What a terminal would act on or hide, and what it cannot encode: each as the escape Python's repr writes.
HOSTILE = {
    "\x1b[2K": "\\x1b[2K",  # ANSI: erase the line
    "\r": "\\r",
    "\n": "\\n",
    "\t": "\\t",
    "\x00": "\\x00",
    "\x7f": "\\x7f",  # DEL
    "\x85": "\\x85",  # C1: NEXT LINE
    "\x9b": "\\x9b",  # C1: CSI, the one-byte ESC [
    "\u2028": "\\u2028",  # LINE SEPARATOR
    "\u202e": "\\u202e",  # RIGHT-TO-LEFT OVERRIDE
    "\u2066": "\\u2066",  # LEFT-TO-RIGHT ISOLATE
    "\u200f": "\\u200f",  # RIGHT-TO-LEFT MARK
    "\ud800": "\\ud800",  # a lone surrogate: UTF-8 cannot encode it
    "\u0378": "\\u0378",  # unassigned
    "\u00a0": "\\xa0",  # a space that is not U+0020
    "\U000e0001": "\\U000e0001",  # LANGUAGE TAG: a format character beyond the BMP
    "\\": "\\\\",  # a backslash: no escape can be forged
}


@pytest.mark.parametrize(("raw", "shown"), HOSTILE.items())
def test_what_a_terminal_would_not_show_as_itself_is_its_escape(raw: str, shown: str) -> None:
    assert printable(f"a{raw}b") == f"a{shown}b"


def test_printable_text_is_kept_as_it_is() -> None:
    text = "gpt-2 [plain] fuzz/0042: error — ValueError: 'é' 中文 🙂 (x) <b> `code` ~ |"
    assert printable(text) == text == escape_unprintable(text)


def test_a_reason_imitating_a_verdict_line_stays_on_its_line() -> None:
    assert printable("later\nPASS: 2719 passed; coverage 2719/2722") == "later\\nPASS: 2719 passed; coverage 2719/2722"


def test_a_long_text_is_cut_saying_how_long_it_was() -> None:
    assert printable("x" * (LIMIT + 1)) == "x" * LIMIT + f"… ({LIMIT + 1} characters)"
    assert printable("\x1b" * 4, limit=2) == "\\x1b\\x1b… (4 characters)"
    assert printable("x" * (LIMIT + 1), limit=None) == "x" * (LIMIT + 1)


def test_escape_unprintable_keeps_backslashes_and_is_idempotent_on_printable_text() -> None:
    assert escape_unprintable("'\\xff' \x1b\n") == "'\\xff' \\x1b\\n"
    shown = printable("a\\b\x1b\ud800")
    assert escape_unprintable(shown) == shown


def _read_back(shown: str) -> str:
    """The text a printable form was made of: Python's own reading of its escapes."""
    return shown.encode("ascii", "backslashreplace").decode("unicode_escape")


@given(st.text(st.characters(exclude_categories=()) | st.sampled_from(sorted(set("".join(HOSTILE))))))  # surrogates too
def test_any_text_becomes_one_printable_line_that_reads_back_as_it_was(text: str) -> None:
    """Printable, one line, and exactly the text: two texts never look alike, so none can pose as another."""
    shown = printable(text, limit=None)
    assert shown.isprintable() and "\n" not in shown
    assert _read_back(shown) == text


def test_a_ports_reason_is_kept_bounded() -> None:
    """A reason is kept for every case it was given for: megabytes of it per input are cut when they
    come in (a Python port's exception, a program's answer), never only when shown."""
    from tokconf.core.outcome import Refusal
    from tokconf.core.printable import KEPT, kept
    from tokconf.implementations.base import Unsupported, VocabInfo
    from tokconf.implementations.python import PythonImplementation

    class Verbose:
        def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
            raise Unsupported("x" * 10_000_000)

    session = PythonImplementation("verbose", lambda path: Verbose()).open(VocabInfo(Path("v.gguf"), "bpe", None, None))
    [answer] = session.encode_many([(b"ab", False, False)])
    assert isinstance(answer, Refusal) and len(answer.reason) < KEPT + 40
    assert answer.reason.endswith("(10000000 characters)")
    assert kept("short") == "short"
