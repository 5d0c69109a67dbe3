"""What a tokenizer answered for one input in one mode: token ids, or a refusal of a typed kind.

The three modes are the `add_special`/`parse_special` pairs every recording holds, as
`llama_tokenize` takes them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal

from .facts import are_token_ids

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


LOAD = "load: "  # the reason's prefix of a vocabulary llama.cpp did not load, held for each of its cases


class RefusalKind(enum.Enum):
    """Why no ids came back, which decides the verdict (`tokconf.checking.engine.judge`)."""

    REFUSED = "refused"  # the tokenizer declined the input: llama.cpp aborted or hung, a port raised
    UNSUPPORTED = "unsupported"  # the implementation cannot be given this input at all: counted, never judged
    BROKEN = "broken"  # the implementation broke (hung, spoke garbage, raised): an error, never a pass
    # Its process ended on this input (exited, or killed by a signal: a binding whose llama.cpp aborts
    # takes its process with it). Where llama.cpp aborts too (the recording holds its abort) that is
    # agreement; anywhere else an error, as BROKEN is.
    DIED = "died"
    # It says the llama.cpp it wraps aborted on this input and it caught that (`{"aborted": reason}`):
    # judged as a refusal, and a failure named as an abort where llama.cpp gave ids.
    ABORTED = "aborted"


MIN_DECLARED_LIMIT = 1024  # the smallest input length limit (bytes) a port may declare: a lower one declines text


class InputClass(enum.Enum):
    """What an implementation may say it cannot be given (docs/line-protocol.md, `tokconf.Unsupported`'s
    `input_class`). tokconf checks every class but `other` on the request itself: a decline whose
    class does not fit is an error.

    A decline counts against coverage unless the command that runs the check grants its class
    (`--allow-decline`, `tokconf.checking.contract.Gate`): the port says what it declines, the gate's
    owner what may be left out. Only the *grantable* classes can be granted, each a property of one
    input that tokconf verifies on it (not UTF-8, NUL, a special token's text with parse_special
    off, past the port's declared length). `parse-special` and `add-special` fit every request of
    a mode, so a port could decline under them any subset of a mode's inputs (those it gets wrong),
    as unverified as `other` (which fits anything): none of the three is grantable. A port that
    cannot do a mode claims the others (`--claim`); a share of unverified declines is allowed only
    by `--min-coverage`."""

    INVALID_UTF8 = "invalid-utf8"  # the input is not valid UTF-8 (a port whose API takes strings)
    NUL = "nul"  # the input holds a NUL byte (a port on C strings)
    SPECIAL_TEXT = "special-text"  # parse_special off and the input holds a special token's text
    TOO_LONG = "too-long"  # the input is longer than the byte limit the port declared
    PARSE_SPECIAL = "parse-special"  # requests with parse_special true
    ADD_SPECIAL = "add-special"  # requests with add_special true
    OTHER = "other"  # any input, for a reason of the port's own: not verified

    @property
    def grantable(self) -> bool:
        """Whether a command may grant it, so that its declines leave coverage whole (see the class)."""
        return self in (InputClass.INVALID_UTF8, InputClass.NUL, InputClass.SPECIAL_TEXT, InputClass.TOO_LONG)

    def fits(self, request: Request, context: DeclineContext) -> bool:
        """Whether the input is of this class, as tokconf can tell from the input alone."""
        data, add_special, parse_special = request
        if self is InputClass.INVALID_UTF8:
            return not is_utf8(data)
        if self is InputClass.NUL:
            return b"\x00" in data
        if self is InputClass.SPECIAL_TEXT:
            return not parse_special and any(text in data for text in context.special_texts)
        if self is InputClass.TOO_LONG:
            return context.max_bytes is not None and len(data) > context.max_bytes
        if self is InputClass.PARSE_SPECIAL:
            return parse_special
        if self is InputClass.ADD_SPECIAL:
            return add_special
        return True

    @classmethod
    def named(cls, name: object) -> InputClass | None:
        return next((c for c in cls if c.value == name), None)

    @classmethod
    def of_input(cls, data: bytes) -> InputClass:
        """The class a decline that names none is counted under: a property of the input that needs no
        declaring (not UTF-8, holds NUL), or else `other`."""
        if not is_utf8(data):
            return cls.INVALID_UTF8
        return cls.NUL if b"\x00" in data else cls.OTHER


@dataclass(frozen=True)
class DeclineContext:
    """What verifying a decline needs beyond the input: the texts llama.cpp cuts out only with
    parse_special (`tokenizer_st_partition` skips CONTROL and UNKNOWN tokens without it, and cuts
    USER_DEFINED ones always: a port must handle those), and the input length limit the implementation
    declared."""

    special_texts: frozenset[bytes] = frozenset()
    max_bytes: int | None = None


@dataclass(frozen=True)
class Refusal:
    """No ids: `reason` is stable text (a recording stores only the reasons of llama.cpp's refusals).
    An unsupported answer carries the class of input it declined (`declined`)."""

    reason: str
    kind: RefusalKind = RefusalKind.REFUSED
    declined: InputClass | None = None


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
    if isinstance(ids, list) and are_token_ids(ids):
        return ids
    raise ValueError("an outcome is a list of integer ids or an error")
