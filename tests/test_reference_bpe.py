"""Rules of the reference BPE in isolation, on small synthetic GGUF vocabularies written with `gguf`."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf import GGUFWriter
from tokconf.builds.build import Build
from tokconf.core.errors import TokconfError
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.gguf_reader import GGUFError
from tokconf_reference.tokenizer import Tokenizer, UnsupportedVocab
from tokconf_reference.unicode import InvalidCodepoint

# GPT-2 byte map: " " is "Ġ", "\n" is "Ċ".
TOKENS = ["a", "b", "c", "ab", "abc", "Ġ", "Ġa", "<|im_end|>", "[USR]", "<s>", "1", "2", "3", "12", "Ċ"]
TYPES = [1, 1, 1, 1, 1, 1, 1, 1, 4, 3, 1, 1, 1, 1, 1]
MERGES = ["a b", "ab c", "Ġ a", "1 2"]


def _vocab(tmp_path: Path, pre: str | None = "gpt-2", model: str = "gpt2", **extra: object) -> Path:
    path = tmp_path / "v.gguf"
    writer = GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", model)
    if pre is not None:
        writer.add_string("tokenizer.ggml.pre", pre)
    writer.add_array("tokenizer.ggml.tokens", TOKENS)
    writer.add_array("tokenizer.ggml.token_type", TYPES)
    writer.add_array("tokenizer.ggml.merges", MERGES)
    writer.add_uint32("tokenizer.ggml.bos_token_id", 9)
    writer.add_uint32("tokenizer.ggml.eos_token_id", 7)
    for key, value in extra.items():
        writer.add_bool(f"tokenizer.ggml.{key}", bool(value))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def test_merges_by_rank_and_leading_space(tmp_path: Path) -> None:
    tok = Tokenizer.from_gguf(_vocab(tmp_path))
    assert tok.encode(b"abc") == [4]  # a+b (rank 0), then ab+c (rank 1)
    assert tok.encode(b" a") == [6]  # "Ġa": the space belongs to the word
    assert tok.encode(b"cab") == [2, 3]


def test_digits_by_pre_tokenizer(tmp_path: Path) -> None:
    assert Tokenizer.from_gguf(_vocab(tmp_path, "gpt-2")).encode(b"123") == [13, 12]  # one piece "123"
    assert Tokenizer.from_gguf(_vocab(tmp_path, "qwen2")).encode(b"123") == [10, 11, 12]  # \p{N}: one by one


def test_special_tokens_user_defined_always_control_only_when_parsed(tmp_path: Path) -> None:
    tok = Tokenizer.from_gguf(_vocab(tmp_path))
    assert tok.encode(b"a[USR]b") == [0, 8, 1]  # user-defined: cut out even without parse_special
    assert tok.encode(b"<s>", parse_special=True) == [9]
    assert 9 not in tok.encode(b"<s>")


def test_end_of_generation_texts_become_control(tmp_path: Path) -> None:
    tok = Tokenizer.from_gguf(_vocab(tmp_path))
    assert tok.eog_ids == [7]
    assert tok.encode(b"<|im_end|>", parse_special=True) == [7]  # NORMAL in the file, CONTROL by its text


def test_bos_and_eos_follow_the_flags(tmp_path: Path) -> None:
    tok = Tokenizer.from_gguf(_vocab(tmp_path, add_bos_token=True, add_eos_token=True))
    assert tok.encode(b"a", add_special=True) == [9, 0, 7]
    assert Tokenizer.from_gguf(_vocab(tmp_path, "llama-bpe")).add_bos  # the llama3 family adds BOS by default
    assert not Tokenizer.from_gguf(_vocab(tmp_path, "gpt-2")).add_bos


def test_code_points_above_unicode_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidCodepoint):
        Tokenizer.from_gguf(_vocab(tmp_path)).encode(bytes.fromhex("f4908080"))


def test_unsupported_models_and_pre_tokenizers_are_named(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedVocab, match=r"tokenizer model 'none': llama\.cpp cannot tokenize"):
        Tokenizer.from_gguf(_vocab(tmp_path, model="none"))
    with pytest.raises(UnsupportedVocab, match=r"tokenizer model 'sentencepiece2' is not one llama\.cpp"):
        Tokenizer.from_gguf(_vocab(tmp_path, model="sentencepiece2"))
    text = b"x <dna>ACGTAC</dna>"  # hybriddna without its <dna>, </dna>, <oov> tokens: plain BPE, as llama.cpp
    dna = Tokenizer.from_gguf(_vocab(tmp_path, model="hybriddna"))
    assert dna.encode(text) == Tokenizer.from_gguf(_vocab(tmp_path)).encode(text)
    with pytest.raises(UnsupportedVocab, match="pre-tokenizer 'tekken-v9'"):  # a name llama.cpp does not know
        Tokenizer.from_gguf(_vocab(tmp_path, "tekken-v9"))


def test_a_repeated_merge_keeps_its_first_rank_as_llama_cpp(tmp_path: Path, llama_build: Build) -> None:
    path = tmp_path / "dup.gguf"
    writer = GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_string("tokenizer.ggml.pre", "gpt-2")
    writer.add_array("tokenizer.ggml.tokens", ["a", "b", "c", "ab", "bc"])
    writer.add_array("tokenizer.ggml.token_type", [1] * 5)
    writer.add_array("tokenizer.ggml.merges", ["a b", "b c", "a b"])  # bpe_ranks.emplace: rank 0 stays
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with LibllamaOracle(llama_build, path) as oracle:
        assert oracle.tokenize(b"abc", False, False) == [3, 2]  # ab + c, not a + bc
    assert Tokenizer.from_gguf(path).encode(b"abc") == [3, 2]


def test_a_vocabulary_without_merges_is_refused_as_llama_cpp_refuses_it(tmp_path: Path, llama_build: Build) -> None:
    path = tmp_path / "nomerges.gguf"
    writer = GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_array("tokenizer.ggml.tokens", ["a"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with pytest.raises(GGUFError, match="cannot find tokenizer merges"):
        Tokenizer.from_gguf(path)
    with pytest.raises(TokconfError, match="could not load"), LibllamaOracle(llama_build, path) as oracle:
        oracle.facts()
