"""llama.cpp's own tokenizer test files, `models/ggml-vocab-*.gguf.inp` and `.out`.

They are parsed exactly as tests/test-tokenizer-0.cpp parses them: inputs split on
`\\n__ggml_vocab_test__\\n`, one output line of space-separated ids per input. The recorder imports
the inputs as cases `llama.cpp/NNNN` and a test holds the recorded `plain` ids (add_special=false,
parse_special=false, the setting test-tokenizer-0 uses) to the `.out` lines. Beside a vocab of the
user's (`tokconf record --vocab my.gguf`) they are files from elsewhere: read within the corpus cap, and
one that is no regular file is refused naming it (`read_bounded`), never a hang or a MemoryError.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import TokconfError
from ..core.files import FileKind, read_bounded
from .files import Case

SEPARATOR = b"\n__ggml_vocab_test__\n"


def split_inputs(raw: bytes) -> list[bytes]:
    """The inputs of an .inp file, split as test-tokenizer-0.cpp does (no empty tail after a final separator)."""
    inputs = raw.split(SEPARATOR)
    return inputs[:-1] if inputs[-1] == b"" else inputs


def read_expected(out_file: Path) -> list[list[int]]:
    """The id lists of an .out file, one per line of space-separated decimal ids."""
    lines = read_bounded(out_file, FileKind.CORPUS).splitlines()
    for number, line in enumerate(lines, 1):
        if not all(token.isdigit() and len(token) <= 10 for token in line.split()):
            raise TokconfError(f"{out_file}:{number}: not a line of token ids", "the llama.cpp tree is damaged")
    return [[int(token) for token in line.split()] for line in lines]


def _there(path: Path) -> bool:
    """Whether a file is there at all: a link to nowhere, or a FIFO, is there (and refused when read)."""
    return path.exists() or path.is_symlink()


def upstream_cases(vocab: Path) -> list[Case]:
    """The cases of the `.inp` file beside a vocab, or none when llama.cpp ships none for it."""
    inp = vocab.with_name(vocab.name + ".inp")
    if not _there(inp):
        return []
    inputs = split_inputs(read_bounded(inp, FileKind.CORPUS))
    out = vocab.with_name(vocab.name + ".out")
    if _there(out) and len(read_expected(out)) != len(inputs):
        raise TokconfError(f"{inp} and {out} have different numbers of tests", "the llama.cpp tree is damaged")
    why = f"llama.cpp's own test input ({inp.name})"
    return [Case(f"llama.cpp/{i:04d}", data, why) for i, data in enumerate(inputs)]
