"""How many token ids llama.cpp can answer for an input: the bound every answer is held to.

An answer is kept until its vocabulary is judged (and a failed one until the report), so an answer
of 200,000 ids to every input (a port gone wrong, or a hostile one) once took every byte of memory
and ended the run in a MemoryError with no verdict. No answer llama.cpp gives is that long:
`llama_vocab::impl::tokenize` (src/llama-vocab.cpp) turns an input byte into at most three tokens
where it falls back to bytes (an invalid UTF-8 byte becomes U+FFFD, whose three UTF-8 bytes are three
byte tokens under SPM's and PLaMo-2's byte fallback and BPE's byte-level encoding), before its prefix
(`add_space_prefix`, the dummy `▁`) and the special tokens `add_special` adds (BOS, EOS, CLS, SEP).
WPM's NFD and UGM's normalization can make one character several (U+FDFA, 3 bytes, is 18 code points
under NFKC: 50 of them are 202 ids with nomic-bert-moe's vocabulary, 1.35 a byte). In every bundled
recording (b11192's and b11434's, 951,759 answers) the most is 3 ids a byte plus 2 (plamo2's five
invalid bytes: 16 ids with BOS), so `IDS_PER_BYTE` × bytes + `IDS_EXTRA` leaves room
(tests/test_bounds.py holds every bundled recording to it). A vocabulary made to break it (a UGM
charsmap mapping one byte to a long text) would make llama.cpp's own answer that case's error: a
recording says so in the case's reason, never a MemoryError.

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
