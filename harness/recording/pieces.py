"""The pieces of a recording's vocabulary, for reports: what each token id decodes to, as
`llama_token_to_piece(special=true)` gives it (through the reference tokenizer, which is token-identical
to llama.cpp), or the GGUF's token texts where the reference does not read the vocabulary."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.render import PieceLookup, visible


@lru_cache(maxsize=4)
def _decoder(vocab: Path) -> Any:
    """The reference tokenizer of a vocab, for its pieces (loaded once per vocab, and imported only when
    a mismatch is shown). None where the reference does not read the vocab: its GGUF token texts are
    shown instead."""
    from tokconf_reference import Tokenizer, UnsupportedVocab
    from tokconf_reference.gguf_reader import GGUFError

    try:
        return Tokenizer.from_gguf(vocab)
    except (UnsupportedVocab, GGUFError, OSError):
        return None


@lru_cache(maxsize=4)
def _token_texts(vocab: Path) -> list[str]:
    """Token texts as the GGUF file stores them (`Ġ` for a space in GPT-2 byte-level vocabs)."""
    from tokconf_reference.gguf_reader import read_tokenizer_fields

    tokens: list[str] = read_tokenizer_fields(vocab)["tokenizer.ggml.tokens"]
    return tokens


def pieces_of(vocab: Path | None) -> PieceLookup:
    """A vocab file's piece lookup: whitespace made visible (`'·the'`, not the byte-level `'Ġthe'`);
    "" for every id when the file is not at hand. The file is read on the first lookup."""

    def piece(token: int) -> str:
        if vocab is None:
            return ""
        decoder = _decoder(vocab)
        if decoder is not None:
            if not 0 <= token < decoder.n_tokens:
                return "<out of range>"
            return f"'{visible(decoder.token_to_piece(token, True), 40)}'"
        texts = _token_texts(vocab)
        return repr(texts[token]) if 0 <= token < len(texts) else "<out of range>"

    return piece
