"""The reference's PLaMo-2 tokenizer against the live llama.cpp, on a PLaMo-2 vocabulary written as
llama.cpp's converter writes one (`_set_vocab_plamo`: `<|plamo:…|>` control tokens, 256 `<0xXX>`
byte tokens, scored pieces in plain text, `[PADn]` unused). No PLaMo-2 vocabulary ships with
llama.cpp; this one takes its pieces and scores from llama-spm's (`▁` read as a space), so ties,
multi-byte text and byte fallback all occur."""

from __future__ import annotations

from pathlib import Path

import pytest
from gguf import GGUFReader, GGUFWriter
from tokconf.builds.build import Build
from tokconf.core.files import CORPUS
from tokconf.core.outcome import MODES
from tokconf.corpus.files import load_corpus
from tokconf.corpus.generator import fuzz_strings
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.gguf_reader import GGUFError
from tokconf_reference.tokenizer import Tokenizer

SIZE = 9000
CONTROL = ["<|plamo:unk|>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>", "<|plamo:op|>"]


def plamo2_vocab(path: Path, spm: Path, skip_byte: int | None = None) -> Path:
    reader = GGUFReader(spm)
    texts = [bytes(reader.fields["tokenizer.ggml.tokens"].parts[i]).decode() for i in
             reader.fields["tokenizer.ggml.tokens"].data]  # fmt: skip
    scores = [float(reader.fields["tokenizer.ggml.scores"].parts[i][0]) for i in
              reader.fields["tokenizer.ggml.scores"].data]  # fmt: skip
    types = [int(reader.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in
             reader.fields["tokenizer.ggml.token_type"].data]  # fmt: skip
    tokens, token_scores, token_types = list(CONTROL), [0.0] * 5, [2, 3, 3, 3, 3]
    for byte in range(256):
        if byte != skip_byte:
            tokens.append(f"<0x{byte:02X}>")
            token_scores.append(0.0)
            token_types.append(6)
    seen = set(tokens)
    for text, score, kind in zip(texts, scores, types, strict=True):
        piece = text.replace("\u2581", " ")
        if kind == 1 and piece not in seen and len(tokens) < SIZE - 100:
            seen.add(piece)
            tokens.append(piece)
            token_scores.append(float(round(score / 1000)))  # few values: ties, which the table order decides
            token_types.append(1)
    for i in range(1, SIZE - len(tokens) + 1):
        tokens.append(f"[PAD{i}]")
        token_scores.append(-1000.0)
        token_types.append(5)
    writer = GGUFWriter(str(path), "plamo2")
    writer.add_tokenizer_model("plamo2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(token_scores)
    writer.add_token_types(token_types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_pad_token_id(3)
    writer.add_unk_token_id(0)
    writer.add_eot_token_id(4)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def vocab(llama_build: Build, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("plamo2")
    return plamo2_vocab(folder / "plamo2.gguf", llama_build.models_dir / "ggml-vocab-llama-spm.gguf")


def test_every_mode_is_token_identical_to_llama_cpp(llama_build: Build, vocab: Path) -> None:
    reference = Tokenizer.from_gguf(vocab)
    cases = [c.data for f in load_corpus([CORPUS]) for c in f.cases[::3] if len(c.data) < 3000]
    # above U+10FFFF: PLaMo-2 never classifies code points, so llama.cpp falls back to its bytes, no abort
    extra = [
        b"\xf4\x90\x80\x80",
        b"\xef\xbb\xbfHello",
        b"<|plamo:bos|>Hi<|plamo:op|>",
        b"[PAD3]",
        b"\xff\xc3(",
        b"",
        b" \n ",
    ]
    texts = cases + extra + list(fuzz_strings(9, 500))
    with LibllamaOracle(llama_build, vocab) as oracle:
        for mode, (add_special, parse_special) in MODES.items():
            expected = oracle.tokenize_many([(t, add_special, parse_special) for t in texts])
            actual = [reference.encode(t, add_special, parse_special) for t in texts]  # no abort: see below
            wrong = [(t, e, a) for t, e, a in zip(texts, expected, actual, strict=True) if e != a]
            assert not wrong, (mode, len(wrong), wrong[:3])
        assert oracle.tokenize(b"Hello", True, True) == reference.encode(b"Hello")  # b11192 adds no BOS here
        for special in (False, True):
            assert oracle.pieces(special) == [reference.token_to_piece(t, special) for t in range(SIZE)]
        ids = reference.encode("Grüße <|plamo:op|> 世界 \u2603".encode(), parse_special=True)
        assert oracle.detokenize(ids) == reference.decode(ids)


def test_a_missing_byte_token_is_refused_as_llama_cpp_refuses_it(llama_build: Build, tmp_path: Path) -> None:
    path = plamo2_vocab(tmp_path / "holes.gguf", llama_build.models_dir / "ggml-vocab-llama-spm.gguf", 0x41)
    with pytest.raises(GGUFError, match="byte token <0x41> is not set"):
        Tokenizer.from_gguf(path)
    with pytest.raises(Exception, match="could not load"):
        LibllamaOracle(llama_build, path).facts()
