"""The GGUF header reader: exact values, tensors untouched, and a typed error for every broken file."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGUFWriter
from tokconf_reference.gguf_reader import GGUFError, GGUFValueType, read_tokenizer_fields

TOKENS = ["<s>", "</s>", "a", "b", "ab", "Ġ", "é", "\U0001f600"]


def _write(path: Path) -> Path:
    writer = GGUFWriter(str(path), "llama")
    writer.add_string("tokenizer.ggml.model", "gpt2")
    writer.add_string("tokenizer.ggml.pre", "qwen2")
    writer.add_array("tokenizer.ggml.tokens", TOKENS)
    writer.add_array("tokenizer.ggml.token_type", [3, 3, 1, 1, 1, 1, 1, 1])
    writer.add_array("tokenizer.ggml.merges", ["a b"])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0])
    writer.add_uint32("tokenizer.ggml.bos_token_id", 0)
    writer.add_bool("tokenizer.ggml.add_bos_token", True)
    writer.add_array("general.unrelated_strings", ["x" * 10] * 3)
    writer.add_uint64("general.unrelated_number", 7)
    writer.add_tensor("t", np.zeros((4, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_reads_exactly_the_tokenizer_keys(tmp_path: Path) -> None:
    fields = read_tokenizer_fields(_write(tmp_path / "v.gguf"))
    assert fields["tokenizer.ggml.tokens"] == TOKENS
    assert fields["tokenizer.ggml.token_type"] == [3, 3, 1, 1, 1, 1, 1, 1]
    assert fields["tokenizer.ggml.merges"] == ["a b"]
    assert fields["tokenizer.ggml.scores"][1] == -1.5
    assert fields["tokenizer.ggml.bos_token_id"] == 0 and fields["tokenizer.ggml.add_bos_token"] is True
    assert fields["general.architecture"] == "llama"
    assert not any(key.startswith("general.unrelated") for key in fields)


def test_every_truncation_is_a_typed_error(tmp_path: Path) -> None:
    whole = _write(tmp_path / "v.gguf").read_bytes()
    last_key = b"general.unrelated_number"
    kv_end = whole.index(last_key) + len(last_key) + 4 + 8  # its type and its u64 value end the key/values
    cut = tmp_path / "cut.gguf"
    for size in range(0, kv_end):
        cut.write_bytes(whole[:size])
        with pytest.raises(GGUFError):
            read_tokenizer_fields(cut)
    cut.write_bytes(whole[:kv_end])  # the tensor section is never read
    assert read_tokenizer_fields(cut)["tokenizer.ggml.tokens"] == TOKENS


def test_hostile_counts_do_not_allocate(tmp_path: Path) -> None:
    header = b"GGUF" + struct.pack("<IQQ", 3, 0, 1)
    key = b"tokenizer.ggml.tokens"
    hostile = header + struct.pack("<Q", len(key)) + key + struct.pack("<IIQ", 9, 8, 1 << 60)
    path = tmp_path / "hostile.gguf"
    path.write_bytes(hostile)
    with pytest.raises(GGUFError, match="1152921504606846976 strings"):
        read_tokenizer_fields(path)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1 << 62))
    with pytest.raises(GGUFError, match="key/value pairs"):
        read_tokenizer_fields(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"GGML" + bytes(20), "not a GGUF file"),
        (b"GGUF" + struct.pack("<IQQ", 99, 0, 0), "GGUF version 99 is not supported"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 77), "unknown"),
    ],
)
def test_malformed_headers_are_named(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(GGUFError, match=message):
        read_tokenizer_fields(path)


def test_the_value_types_are_the_gguf_packages() -> None:
    """The reader's own copy of GGUF's value types (it does not import `gguf`, for its start-up time)
    names and numbers them as the `gguf` package does, and the reference does not import `gguf`."""
    assert {t.name: t.value for t in GGUFValueType} == {t.name: t.value for t in gguf.GGUFValueType}
    run = subprocess.run(
        [sys.executable, "-c", "import sys, tokconf_reference; print('gguf' in sys.modules, 'numpy' in sys.modules)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert run.stdout.split() == ["False", "False"]
