"""The reference's RWKV tokenizer against the live llama.cpp, on an RWKV vocabulary written as
llama.cpp's converter writes one (`_set_vocab_rwkv_world`: `<s>` control, each token `repr(bytes)[2:-1]`,
`[PADn]` unused up to the vocab size). No RWKV vocabulary ships with llama.cpp; this one takes its
multi-byte tokens from gpt-2's pieces, so words, UTF-8 and partial UTF-8 sequences all occur."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf import GGUFWriter
from tokconf.builds.build import Build
from tokconf.core.files import CORPUS
from tokconf.core.outcome import MODES
from tokconf.corpus.files import load_corpus
from tokconf.corpus.generator import fuzz_strings
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.rwkv import RwkvLoop, unescape
from tokconf_reference.tokenizer import Tokenizer

SIZE = 6000  # tokens, the last ones `[PADn]`


def rwkv_vocab(path: Path, gpt2: Path, drop_bytes: bytes = b"") -> Path:
    pieces = Tokenizer.from_gguf(gpt2)
    words = sorted({pieces.token_to_piece(t) for t in range(pieces.n_tokens)} - {b""}, key=lambda p: (len(p), p))
    singles = [bytes([b]) for b in range(256) if bytes([b]) not in drop_bytes]
    chosen = singles + [w for w in words if len(w) > 1][: SIZE - 300]
    odd = ["\\xZZ", "\\q", "\\x\u00e9", "tail\\"]  # escapes no converter writes: read as llama.cpp reads them
    tokens = ["<s>"] + [repr(w)[2:-1] for w in chosen] + odd
    types = [3] + [1] * (len(chosen) + len(odd))
    tokens += [f"[PAD{i}]" for i in range(len(tokens), SIZE)]
    types += [5] * (SIZE - len(types))
    writer = GGUFWriter(str(path), "rwkv6")
    writer.add_tokenizer_model("rwkv")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def inputs() -> list[bytes]:
    cases = [c.data for f in load_corpus([CORPUS]) for c in f.cases[::4] if len(c.data) < 4000]
    tricky = [b"<s>", b"a<s>b", b"[PAD5990]", b"[PAD5990", b"\\x41", b'it\'s "quoted"', b"\t\r\n", b"\xff\xfe", b""]
    return cases + tricky + list(fuzz_strings(7, 600))


@pytest.fixture(scope="module")
def vocab(llama_build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return rwkv_vocab(tmp_path_factory.mktemp("rwkv") / "rwkv.gguf", llama_build.models_dir / "ggml-vocab-gpt-2.gguf")


def test_the_unescaping_reads_what_the_converter_writes() -> None:
    for data in (bytes(range(256)), b"it's", b'say "x"', b"both ' and \"", b"\\"):
        assert unescape(repr(data)[2:-1]) == data


def test_every_mode_is_token_identical_to_llama_cpp(llama_build: Build, vocab: Path) -> None:
    reference = Tokenizer.from_gguf(vocab)
    texts = inputs()
    with LibllamaOracle(llama_build, vocab) as oracle:
        facts = oracle.facts()
        assert facts["vocab_type"] == "rwkv" and facts["add_bos"] is False and facts["special_ids"]["bos"] == -1
        for mode, (add_special, parse_special) in MODES.items():
            expected = oracle.tokenize_many([(t, add_special, parse_special) for t in texts])
            actual = [reference.encode(t, add_special, parse_special) for t in texts]
            wrong = [(t, e, a) for t, e, a in zip(texts, expected, actual, strict=True) if e != a]
            assert not wrong, (mode, len(wrong), wrong[:3])
        assert oracle.tokenize(b"<s>", False, False) == [0]  # the control token's text is in the trie too
        for special in (False, True):  # token_to_piece of every id, and a detokenization
            assert oracle.pieces(special) == [reference.token_to_piece(t, special) for t in range(SIZE)]
        ids = reference.encode(b"Hello <s> world \xff [PAD5999]")
        assert oracle.detokenize(ids) == reference.decode(ids)


def test_a_byte_no_token_starts_with_is_the_unknown_id(llama_build: Build, tmp_path: Path) -> None:
    path = rwkv_vocab(tmp_path / "holes.gguf", llama_build.models_dir / "ggml-vocab-gpt-2.gguf", b"\x00\xfe\x07")
    reference = Tokenizer.from_gguf(path)
    with LibllamaOracle(llama_build, path) as oracle:
        for text in (b"\x00", b"a\xfeb", b"\x07\x07"):
            assert reference.encode(text) == oracle.tokenize(text, False, False)
    assert reference.encode(b"a\xfeb")[1] == -1


def test_an_input_llama_cpp_loops_on_is_refused() -> None:
    from tokconf_reference.rwkv import RwkvEncoder

    encoder = RwkvEncoder(["ab", "\\n", "x"], -1)  # "a" starts a token but is none
    assert encoder.encode(b"ab\nx") == [0, 1, 2]
    with pytest.raises(RwkvLoop, match="loops for ever"):
        encoder.encode(b"xac")
