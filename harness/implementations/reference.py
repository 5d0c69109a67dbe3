"""`reference`: the bundled pure-Python reference tokenizer (`tokconf_reference`), under the verdict contract.

`tokconf_reference` stands alone and knows nothing of tokconf, so this adapter speaks the contract for
it: a vocabulary the reference cannot read or llama.cpp refuses to load (`GGUFError`,
`UnsupportedVocab`, ...) is declined with `Unsupported`, and an input llama.cpp aborts on
(`tokconf_reference.errors.LlamaAborts`) is `Refused`. Anything else it raises is a bug, and an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokconf_reference import Tokenizer, UnsupportedVocab
from tokconf_reference.errors import LlamaAborts
from tokconf_reference.gguf_reader import GGUFError
from tokconf_reference.ugm import CharsmapError

from .base import Refused, Unsupported

# What `Tokenizer.from_gguf` raises for a file it does not tokenize, each where llama.cpp refuses the
# file too or the reference names what it does not implement (tests/test_hostile_gguf.py: every load
# ends in one of these or succeeds).
DECLINED = (GGUFError, UnsupportedVocab, CharsmapError, LlamaAborts)


class ReferencePort:
    """The reference's `Tokenizer`, whose refusals are tokconf's `Refused`; every other attribute (facts,
    decoding) is the tokenizer's own."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer

    def encode(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        try:
            return self.tokenizer.encode(data, add_special, parse_special)
        except LlamaAborts as why:
            raise Refused(str(why)) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tokenizer, name)


def from_gguf(path: Path) -> ReferencePort:
    """The `reference` entry point (`tokconf.implementations`)."""
    try:
        return ReferencePort(Tokenizer.from_gguf(path))
    except DECLINED as why:
        raise Unsupported(f"the reference does not load {Path(path).name}: {why}") from None
