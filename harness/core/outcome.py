"""What a tokenizer answered for one input in one mode: token ids, or a refusal of a typed kind.

The three modes are the `add_special`/`parse_special` pairs every recording holds, as
`llama_tokenize` takes them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from .facts import is_token_id

Mode = Literal["plain", "special", "bos"]

# mode -> (add_special, parse_special)
MODES: dict[Mode, tuple[bool, bool]] = {
    "plain": (False, False),  # llama.cpp's own tests/test-tokenizer-0 setting
    "special": (False, True),
    "bos": (True, True),  # llama-tokenize's default for vocabs that add BOS
}

Request = tuple[bytes, bool, bool]  # data, add_special, parse_special: one input to any tokenizer


def is_utf8(data: bytes) -> bool:
    """Whether an input is valid UTF-8 (about 9% of every recording's inputs are not, on purpose)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class RefusalKind(enum.Enum):
    """Why no ids came back, which decides the verdict (`tokconf.checking.engine.judge`)."""

    REFUSED = "refused"  # the tokenizer declined the input: llama.cpp aborted or hung, a port raised
    UNSUPPORTED = "unsupported"  # the implementation cannot be given this input at all: counted, never judged
    BROKEN = "broken"  # the implementation broke (crashed, hung, spoke garbage): an error, never a pass


@dataclass(frozen=True)
class Refusal:
    """No ids: `reason` is stable text (a recording stores only the reasons of llama.cpp's refusals)."""

    reason: str
    kind: RefusalKind = RefusalKind.REFUSED


Outcome = list[int] | Refusal


def ids_from_text(text: str) -> list[int]:
    """Ids written as llama.cpp's `.out` files write them, `9707 1879`: ASCII decimal digits, one space
    between ids ('' for none). A ValueError for anything else: `int()` alone would also take `-5`,
    `1_5496`, `+3`, Arabic-Indic or fullwidth digits and surrounding whitespace."""
    if not text:
        return []
    if text.encode("utf-8", "surrogatepass").translate(None, b"0123456789 "):  # what is left is no digit
        raise ValueError("ids are ASCII decimal digits separated by single spaces")
    return list(map(int, text.split(" ")))  # a doubled, leading or trailing space gives '': a ValueError


def render_outcome(outcome: Outcome) -> str:
    """One outcome on one line, as every report shows it: `1 2 3`, `(no ids)` or `refused: reason`."""
    if isinstance(outcome, Refusal):
        return f"{outcome.kind.value}: {outcome.reason}"
    return " ".join(map(str, outcome)) or "(no ids)"


def outcome_fields(outcome: Outcome) -> dict[str, Any]:
    """An outcome as JSON fields: `{"ids": [...]}`, or `{"error": reason}` for a refusal (the form of
    `tokconf export`'s lines and of saved cross-check answers)."""
    return {"error": outcome.reason} if isinstance(outcome, Refusal) else {"ids": outcome}


def outcome_from_fields(node: dict[str, Any]) -> Outcome:
    """The inverse of `outcome_fields`; a ValueError for anything else (a bool, a float or a negative
    number is no id)."""
    if isinstance(node.get("error"), str):
        return Refusal(node["error"])
    ids = node.get("ids")
    if isinstance(ids, list) and all(is_token_id(i) for i in ids):
        return ids
    raise ValueError("an outcome is a list of integer ids or an error")
