"""The reference's `test` tokenizer model (llama.cpp's LLAMA_VOCAB_TYPE_TEST: 5-byte chunks hashed to
ids, pieces in hex) against the live llama.cpp, on a vocabulary with control and user-defined tokens
so the special-token cut runs before the hashing."""

from __future__ import annotations

from pathlib import Path

from gguf import GGUFWriter
from tokconf.builds.build import Build
from tokconf.core.outcome import MODES
from tokconf.corpus.generator import fuzz_strings
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.tokenizer import Tokenizer

SIZE = 1009  # a prime, so the hash's remainders vary


def vocab_of_the_test_model(path: Path) -> Path:
    tokens = ["<s>", "</s>", "<|user|>"] + [f"t{i}" for i in range(3, SIZE)]
    writer = GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("test")
    writer.add_token_list(tokens)
    writer.add_token_types([3, 3, 4] + [1] * (SIZE - 3))
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def test_every_mode_and_piece_is_llama_cpps(llama_build: Build, tmp_path: Path) -> None:
    path = vocab_of_the_test_model(tmp_path / "test.gguf")
    reference = Tokenizer.from_gguf(path)
    texts = [b"", b"abcd", b"abcde", b"abcdef", b"<s>hello</s>", b"x<|user|>y", b"\xff\xfe\xfd", *fuzz_strings(3, 400)]
    with LibllamaOracle(llama_build, path) as oracle:
        for mode, (add_special, parse_special) in MODES.items():
            expected = oracle.tokenize_many([(t, add_special, parse_special) for t in texts])
            actual = [reference.encode(t, add_special, parse_special) for t in texts]
            assert expected == actual, mode
        for special in (False, True):
            assert oracle.pieces(special) == [reference.token_to_piece(t, special) for t in range(SIZE)]
        ids = reference.encode(b"<s>some text<|user|>more", True, True)
        assert oracle.detokenize(ids) == reference.decode(ids)
        assert oracle.detokenize(ids, True, True) == reference.decode(ids, True, True)
