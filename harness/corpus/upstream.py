"""llama.cpp's own tokenizer test files, `models/ggml-vocab-*.gguf.inp` and `.out`.

They are parsed exactly as tests/test-tokenizer-0.cpp parses them: inputs split on
`\\n__ggml_vocab_test__\\n`, one output line of space-separated ids per input. The recorder imports
the inputs as cases `llama.cpp/NNNN` and a test holds the recorded `plain` ids (add_special=false,
parse_special=false, the setting test-tokenizer-0 uses) to the `.out` lines.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import TokconfError
from .files import Case

SEPARATOR = b"\n__ggml_vocab_test__\n"


def split_inputs(raw: bytes) -> list[bytes]:
    """The inputs of an .inp file, split as test-tokenizer-0.cpp does (no empty tail after a final separator)."""
    inputs = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt < 0:
            inputs.append(raw[pos:])
            break
        inputs.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    return inputs


def read_expected(out_file: Path) -> list[list[int]]:
    """The id lists of an .out file, one per line."""
    lines = out_file.read_text(encoding="utf-8").splitlines()
    return [[int(tok) for tok in line.split()] for line in lines]


def upstream_cases(vocab: Path) -> list[Case]:
    """The cases of the `.inp` file beside a vocab, or none when llama.cpp ships none for it."""
    inp = vocab.with_name(vocab.name + ".inp")
    if not inp.is_file():
        return []
    inputs = split_inputs(inp.read_bytes())
    out = vocab.with_name(vocab.name + ".out")
    if out.is_file() and len(read_expected(out)) != len(inputs):
        raise TokconfError(f"{inp} and {out} have different numbers of tests", "the llama.cpp tree is damaged")
    why = f"llama.cpp's own test input ({inp.name})"
    return [Case(f"llama.cpp/{i:04d}", data, why) for i, data in enumerate(inputs)]
