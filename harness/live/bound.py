"""How many token ids llama.cpp can answer for an input: the bound every answer is held to.

An answer is kept until its vocabulary is judged (and a failed one until the report), so an answer
of 200,000 ids to every input (a port gone wrong, or a hostile one) once took every byte of memory
and ended the run in a MemoryError with no verdict. No answer llama.cpp gives is that long:
`llama_vocab::impl::tokenize` (src/llama-vocab.cpp) turns each input byte into at most three tokens
(an invalid UTF-8 byte becomes U+FFFD, whose three UTF-8 bytes are three byte tokens under SPM's and
PLaMo-2's byte fallback and BPE's byte-level encoding; WPM's NFD and UGM's normalization add a few
code points where they add any), before its prefix (`add_space_prefix`, the dummy `▁`) and the
special tokens `add_special` adds (BOS, EOS, CLS, SEP). In every bundled recording (b11192's and
b11434's, 951,759 answers) the most is 3 ids a byte plus 2 (plamo2's five invalid bytes: 16 ids with
BOS), so `IDS_PER_BYTE` × bytes + `IDS_EXTRA` leaves room (tests/test_bounds.py holds every bundled
recording to it).

An answer over the bound is that case's error naming it, in every front end: a Python port's (in
process, or in its worker), a `cmd:` program's, and llama.cpp's own worker, which never copies more
than the bound out of llama_tokenize (it reads the count llama.cpp says it needs, and stops there).
"""

from __future__ import annotations

IDS_PER_BYTE = 4
IDS_EXTRA = 8


def max_ids(size: int) -> int:
    """The most ids an answer to a `size`-byte input may hold."""
    return IDS_PER_BYTE * size + IDS_EXTRA


def over_bound(answered: int | str, size: int) -> str:
    """The error of an answer of `answered` ids (a count, or "more than N") to a `size`-byte input."""
    return (
        f"answered {answered} ids for a {size}-byte input: llama.cpp answers at most {max_ids(size)} "
        f"({IDS_PER_BYTE} × bytes + {IDS_EXTRA}), so the answer was not kept"
    )
