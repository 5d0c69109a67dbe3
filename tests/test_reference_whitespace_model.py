"""The reference's `whitespace` tokenizer model (llm_tokenizer_whitespace_session: byte-pair encoding
of the runs between whitespace, lowercased unless the pre name is `whitespace` or the vocab says not
to) against the live llama.cpp, on gpt-2's vocabulary under that model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gguf import GGUFWriter
from tokconf.builds.build import Build
from tokconf.core.files import CORPUS
from tokconf.core.outcome import MODES
from tokconf.corpus.files import load_corpus
from tokconf.corpus.generator import fuzz_strings
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.gguf_reader import read_tokenizer_fields
from tokconf_reference.tokenizer import Tokenizer
from tokconf_reference.unicode import InvalidCodepoint


def whitespace_vocab(path: Path, fields: dict[str, Any], pre: str, lowercase: bool | None) -> Path:
    writer = GGUFWriter(str(path), "gpt2")
    writer.add_string("tokenizer.ggml.model", "whitespace")
    writer.add_string("tokenizer.ggml.pre", pre)
    writer.add_array("tokenizer.ggml.tokens", fields["tokenizer.ggml.tokens"])
    writer.add_array("tokenizer.ggml.token_type", fields["tokenizer.ggml.token_type"])
    writer.add_array("tokenizer.ggml.merges", fields["tokenizer.ggml.merges"])
    writer.add_uint32("tokenizer.ggml.eos_token_id", fields["tokenizer.ggml.eos_token_id"])
    if lowercase is not None:
        writer.add_bool("tokenizer.ggml.normalizer.lowercase", lowercase)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def _answer(reference: Tokenizer, text: bytes, add_special: bool, parse_special: bool) -> list[int] | str:
    try:
        return reference.encode(text, add_special, parse_special)
    except InvalidCodepoint:  # llama.cpp aborts: its answer is a refusal
        return "abort"


@pytest.mark.parametrize(("pre", "lowercase"), [("gpt-2", None), ("whitespace", None), ("gpt-2", False)])
def test_every_mode_is_token_identical_to_llama_cpp(
    llama_build: Build, tmp_path: Path, pre: str, lowercase: bool | None
) -> None:
    fields = read_tokenizer_fields(llama_build.models_dir / "ggml-vocab-gpt-2.gguf")
    path = whitespace_vocab(tmp_path / "ws.gguf", fields, pre, lowercase)
    reference = Tokenizer.from_gguf(path)
    cases = [c.data for f in load_corpus([CORPUS]) for c in f.cases[::5] if len(c.data) < 3000]
    texts = ["Hello WORLD\u3000Été\n\tX".encode(), *cases, *fuzz_strings(5, 300)]
    with LibllamaOracle(llama_build, path) as oracle:
        for mode, (add_special, parse_special) in MODES.items():
            expected = [o if isinstance(o, list) else "abort" for o in
                        oracle.tokenize_many([(t, add_special, parse_special) for t in texts])]  # fmt: skip
            actual = [_answer(reference, t, add_special, parse_special) for t in texts]
            wrong = [(t, e, a) for t, e, a in zip(texts, expected, actual, strict=True) if e != a]
            assert not wrong, (mode, len(wrong), wrong[:3])
