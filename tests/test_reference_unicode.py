"""The reference's Unicode layer: llama.cpp's tables and its lenient UTF-8 decoding."""

from __future__ import annotations

import pytest
from tokconf_reference.unicode import (
    LETTER,
    NUMBER,
    PUNCTUATION,
    REPLACEMENT,
    SYMBOL,
    UNDEFINED,
    InvalidCodepoint,
    decode,
    flags,
    is_whitespace,
)

# The White_Space set the corpus covers; llama.cpp's table has exactly these 25.
WHITESPACE = [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
              0x202F, 0x205F, 0x3000]  # fmt: skip


def test_whitespace_is_llama_cpps_set() -> None:
    assert [c for c in range(0x110000) if is_whitespace(c)] == WHITESPACE


@pytest.mark.parametrize(
    ("char", "expected"),
    [("A", LETTER), ("é", LETTER), ("漢", LETTER), ("7", NUMBER), ("٣", NUMBER), ("½", NUMBER), ("!", PUNCTUATION),
     ("$", SYMBOL), ("😀", SYMBOL), ("\U0001d400", LETTER)],
)  # fmt: skip
def test_categories_come_from_the_build_tables(char: str, expected: int) -> None:
    assert flags(ord(char)) & 0xFF == expected
    assert flags(0x110000) == UNDEFINED


@pytest.mark.parametrize(
    ("data", "cpts"),
    [
        (b"Hello", [72, 101, 108, 108, 111]),
        ("é漢😀".encode(), [0xE9, 0x6F22, 0x1F600]),
        (b"\xc0\xaf", [0x2F]),  # overlong '/' decodes (the qwen2 recording gives '/' for it)
        (b"\xed\xa0\x80", [0xD800]),  # a surrogate decodes
        (b"\x80", [REPLACEMENT]),
        (b"a\xc3", [0x61, REPLACEMENT]),
        (b"\xe2\x82", [REPLACEMENT, REPLACEMENT]),
        (b"\xf8\x88\x80\x80\x80", [REPLACEMENT] * 5),
        (b"\xff\xfe", [REPLACEMENT, REPLACEMENT]),
    ],
)
def test_decoding_follows_unicode_cpts_from_utf8(data: bytes, cpts: list[int]) -> None:
    assert decode(data) == "".join(map(chr, cpts))


def test_a_code_point_above_the_last_is_the_abort() -> None:
    assert decode(b"\xf4\x8f\xbf\xbf") == "\U0010ffff"
    with pytest.raises(InvalidCodepoint, match="0x110000"):
        decode(b"a\xf4\x90\x80\x80")
