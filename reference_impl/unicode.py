"""Code points and their classes exactly as llama.cpp b11192 sees them (src/unicode.cpp).

- `decode` is `unicode_cpts_from_utf8`: lead bytes decide the length, continuation bytes are only
  checked for their top bits, so overlong forms (`C0 AF` is `/`) and surrogates decode; anything
  else costs one byte and yields U+FFFD. A value above U+10FFFF (`F4 90 80 80` is 0x110000) decodes
  too, but llama.cpp's BPE and WPM tokenizers then call `unicode_cpt_to_utf8` on it, which throws,
  and the process aborts: here `decode` raises `InvalidCodepoint`.
- `flags` is `unicode_cpt_flags_from_cpt` over the build's own tables (`unicode_data_b11192`), not
  Python's `unicodedata`, whose Unicode version differs.
"""

from __future__ import annotations

from tokconf_reference import unicode_data_b11192 as data
from tokconf_reference.errors import LlamaAborts

UNDEFINED, NUMBER, LETTER, SEPARATOR, ACCENT_MARK, PUNCTUATION, SYMBOL, CONTROL = (1 << i for i in range(8))
MAX_CODEPOINTS = 0x110000
REPLACEMENT = 0xFFFD


class InvalidCodepoint(LlamaAborts, ValueError):
    """llama.cpp aborts here (`std::invalid_argument: invalid codepoint`); a port must refuse the input."""


def _category_table() -> bytes:
    parts = []
    for (start, flags), (end, _) in zip(data.RANGES_FLAGS, data.RANGES_FLAGS[1:], strict=False):
        parts.append(bytes([flags & 0xFF]) * (end - start))
    table = b"".join(parts)
    assert len(table) == MAX_CODEPOINTS, "unicode_ranges_flags must end at 0x110000"
    return table


CATEGORY = _category_table()
WHITESPACE = data.WHITESPACE


def flags(cpt: int) -> int:
    """The category flags of a code point (`UNDEFINED` beyond the table, as llama.cpp answers)."""
    return CATEGORY[cpt] if cpt < MAX_CODEPOINTS else UNDEFINED


def is_whitespace(cpt: int) -> bool:
    return cpt in WHITESPACE


def codepoints(text: bytes) -> list[int]:
    """unicode_cpts_from_utf8: the code points, an invalid sequence's lead byte as U+FFFD, a 4-byte
    sequence above U+10FFFF as its value (what the tokenizers that never classify it, PLaMo-2's, use)."""
    try:
        return [ord(c) for c in text.decode("utf-8")]
    except UnicodeDecodeError:
        return _decode_lenient(text)


def decode(text: bytes) -> str:
    """The code points as a str; a code point above U+10FFFF (which Python cannot hold) is the abort."""
    try:
        return text.decode("utf-8")
    except UnicodeDecodeError:
        cpts = _decode_lenient(text)
    if any(c >= MAX_CODEPOINTS for c in cpts):
        raise InvalidCodepoint(f"invalid codepoint 0x{max(cpts):X} (llama.cpp b11192 aborts on it)")
    return "".join(map(chr, cpts))


def _decode_lenient(text: bytes) -> list[int]:
    out: list[int] = []
    pos, size = 0, len(text)
    while pos < size:
        lead = text[pos]
        if lead < 0x80:
            out.append(lead)
            pos += 1
            continue
        if lead & 0x40 and not lead & 0x20:
            length, value = 2, lead & 0x1F
        elif lead & 0x40 and lead & 0x20 and not lead & 0x10:
            length, value = 3, lead & 0x0F
        elif lead & 0x40 and lead & 0x20 and lead & 0x10 and not lead & 0x08:
            length, value = 4, lead & 0x07
        else:  # a continuation byte, or F8-FF
            out.append(REPLACEMENT)
            pos += 1
            continue
        tail = text[pos + 1 : pos + length]
        if len(tail) < length - 1 or any(b & 0xC0 != 0x80 for b in tail):
            out.append(REPLACEMENT)
            pos += 1
            continue
        for b in tail:
            value = (value << 6) | (b & 0x3F)
        out.append(value)
        pos += length
    return out
