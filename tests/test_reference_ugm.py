"""Rules of the reference Unigram (UGM) tokenizer in isolation, on small synthetic `t5` vocabularies.

Each expected answer is asserted for the reference and for llama.cpp itself (the live oracle loads
the same synthetic file), so the rules below are llama.cpp's, not our reading of them.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from gguf import GGUFValueType, GGUFWriter
from tokconf.builds.build import Build
from tokconf.oracles.libllama_client import LibllamaOracle
from tokconf_reference.tokenizer import Tokenizer
from tokconf_reference.ugm import CharsmapError

# id: text, score, GGUF type (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused)
VOCAB = [
    ("<pad>", 0.0, 3), ("</s>", 0.0, 3), ("<unk>", 0.0, 2),  # 0-2
    ("▁", -2.0, 1), ("a", -3.0, 1), ("b", -3.0, 1), ("ab", -5.0, 1), ("▁ab", -4.5, 1),  # 3-7
    ("▁a", -2.5, 1), ("c", -20.0, 1), ("[U]", -50.0, 4), ("x", -1.0, 1), ("bc", -1.0, 5),  # 8-12
]  # fmt: skip


def _charsmap() -> bytes:
    """A two-key XCDA built by hand: "A" -> "a", "AB" -> "x" (entries: BASE<<10 | LEAF<<8 | LCHECK)."""
    entries = [0] * 256  # room for every byte's first step
    entries[0] = 1 << 10  # root, BASE 1
    entries[1 ^ 0x41] = (1 << 10) | (1 << 8) | 0x41  # "A": a leaf; its value node is 64 ^ 1 = 65
    entries[65] = (1 << 31) | 0  # value: replacement at offset 0 ("a")
    entries[65 ^ 0x42] = (7 << 10) | (1 << 8) | 0x42  # "AB": a leaf; value node 3 ^ 7 = 4
    entries[4] = (1 << 31) | 2  # value: replacement at offset 2 ("x")
    blob = struct.pack(f"<{len(entries)}I", *entries)
    return struct.pack("<I", len(blob)) + blob + b"a\0x\0"


def _vocab(tmp_path: Path, charsmap: bytes | None = None, **flags: bool) -> Path:
    path = tmp_path / "ugm.gguf"
    writer = GGUFWriter(str(path), "t5")
    writer.add_string("tokenizer.ggml.model", "t5")
    writer.add_array("tokenizer.ggml.tokens", [text for text, _, _ in VOCAB])
    writer.add_array("tokenizer.ggml.scores", [score for _, score, _ in VOCAB])
    writer.add_array("tokenizer.ggml.token_type", [kind for _, _, kind in VOCAB])
    writer.add_uint32("tokenizer.ggml.unknown_token_id", 2)
    writer.add_uint32("tokenizer.ggml.eos_token_id", 1)
    if charsmap is not None:
        key = "tokenizer.ggml.precompiled_charsmap"
        writer.add_key_value(key, list(charsmap), GGUFValueType.ARRAY, sub_type=GGUFValueType.UINT8)
    for key, value in flags.items():
        writer.add_bool(f"tokenizer.ggml.{key}", value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return path


def _agree(build: Build, path: Path, cases: list[tuple[bytes, list[int]]], add_special: bool = False) -> None:
    tok = Tokenizer.from_gguf(path)
    with LibllamaOracle(build, path) as oracle:
        for text, expected in cases:
            assert tok.encode(text, add_special) == expected, text
            assert oracle.tokenize(text, add_special, False) == expected, text


def test_viterbi_takes_the_best_sum_and_collapses_unknown_runs(tmp_path: Path, llama_build: Build) -> None:
    _agree(llama_build, _vocab(tmp_path), [
        (b"ab", [6]),  # "ab" (-5.0) beats "a"+"b" (-6.0)
        (b"ac", [4, 9]),  # "c" costs -20 but beats the unknown token (min normal score - 10 = -30)
        (b"abc", [4, 12]),  # "bc" is UNUSED, yet a candidate: a + bc (-4) beats ab + c (-25)
        (b"zzz", [2]),  # three unknown code points are one <unk>
        (b"azzb", [4, 2, 5]),
        (b"[U]a", [10, 4]),  # user-defined: score 0, whatever the file says
        (b"a b", [4, 3, 5]),  # no space prefix: the space is "▁"
    ])  # fmt: skip


def test_space_prefix_and_extra_whitespace(tmp_path: Path, llama_build: Build) -> None:
    _agree(llama_build, _vocab(tmp_path, add_space_prefix=True), [
        (b"ab", [7]),  # "▁ab"
        (b"  a", [3, 3, 8]),  # leading spaces stay; the prefix goes right before the word
        (b"a  ", [8, 3, 3]),
        (b"", []),
    ])  # fmt: skip
    _agree(llama_build, _vocab(tmp_path, remove_extra_whitespaces=True), [
        (b"  a   b  ", [8, 3, 5]),  # every run becomes one "▁" before its word; the trailing run goes
    ])  # fmt: skip


def test_eos_is_added_and_bos_is_not(tmp_path: Path, llama_build: Build) -> None:
    _agree(llama_build, _vocab(tmp_path), [(b"x", [11, 1])], add_special=True)


def test_charsmap_replaces_the_longest_key(tmp_path: Path, llama_build: Build) -> None:
    _agree(llama_build, _vocab(tmp_path, _charsmap()), [
        (b"A", [4]),  # "A" -> "a"
        (b"AB", [11]),  # the longer key wins: "AB" -> "x"
        (b"AAB", [4, 11]),
        (b"\xff", [2]),  # invalid UTF-8 becomes U+FFFD, which no token covers
    ])  # fmt: skip


def test_a_charsmap_pointing_outside_itself_is_an_error(tmp_path: Path) -> None:
    blob = _charsmap()
    with pytest.raises(CharsmapError, match="out of array bounds"):
        Tokenizer.from_gguf(_vocab(tmp_path, blob[:4] + blob[4:-4]))  # replacements cut off
