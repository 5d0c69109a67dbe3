"""Mutated vocabulary files: the reference's loader raises only typed errors, in bounded time.

hypothesis mutates a real vocab file (cuts, bit flips, hostile lengths, type swaps, arrays of
arrays); every load must succeed or raise `GGUFError`, `UnsupportedVocab`, `MissingSpecialToken`
or `CharsmapError`, never another exception, and never take long."""

from __future__ import annotations

import contextlib
import struct
import time
from pathlib import Path

import pytest
from gguf import GGUFWriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.llama.build import Build
from reference_impl.gguf_reader import GGUFError, read_tokenizer_fields
from reference_impl.tokenizer import MissingSpecialToken, Tokenizer, UnsupportedVocab
from reference_impl.ugm import CharsmapError

TYPED = (GGUFError, UnsupportedVocab, MissingSpecialToken, CharsmapError)


@pytest.fixture(scope="module")
def original(llama_build: Build) -> bytes:
    return (llama_build.models_dir / "ggml-vocab-bert-bge.gguf").read_bytes()


def _load(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "mutated.gguf"
    path.write_bytes(data)
    started = time.monotonic()
    with contextlib.suppress(*TYPED):
        Tokenizer.from_gguf(path)
    assert time.monotonic() - started < 10


mutation = st.one_of(
    st.tuples(st.just("cut"), st.integers(0, 1 << 22)),
    st.tuples(st.just("flip"), st.integers(0, 4096), st.integers(0, 7)),
    st.tuples(st.just("length"), st.integers(0, 4096), st.sampled_from([0, 1, 1 << 31, (1 << 63) - 1, (1 << 64) - 1])),
    st.tuples(st.just("type"), st.integers(0, 4096), st.integers(0, 13)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(mutation)
def test_a_mutated_vocab_is_loaded_or_refused_with_a_typed_error(
    original: bytes, tmp_path_factory: pytest.TempPathFactory, change: tuple[object, ...]
) -> None:
    data = bytearray(original)
    kind, at = change[0], int(change[1])  # type: ignore[call-overload]
    at = min(at, len(data) - 8)
    if kind == "cut":
        data = data[:at]
    elif kind == "flip":
        data[at] ^= 1 << int(change[2])  # type: ignore[call-overload]
    elif kind == "length":
        data[at : at + 8] = struct.pack("<Q", int(change[2]))  # type: ignore[call-overload]
    else:
        data[at : at + 4] = struct.pack("<I", int(change[2]))  # type: ignore[call-overload]
    _load(tmp_path_factory.mktemp("m"), bytes(data))


def test_arrays_of_arrays_and_wrong_types_are_refused_as_llama_cpp_refuses(tmp_path: Path, original: bytes) -> None:
    path = tmp_path / "nested.gguf"
    writer = GGUFWriter(str(path), "bert")
    writer.add_array("tokenizer.ggml.nested", [[1, 2], [3]])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with pytest.raises(GGUFError, match="invalid element type 9"):
        Tokenizer.from_gguf(path)
    source = tmp_path / "orig.gguf"
    source.write_bytes(original)
    fields = read_tokenizer_fields(source)
    flagged = tmp_path / "flag.gguf"
    writer = GGUFWriter(str(flagged), "bert")
    for key, value in fields.items():
        if key == "general.architecture":
            continue
        if isinstance(value, list):
            writer.add_array(key, value)
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)
    writer.add_string("tokenizer.ggml.add_bos_token", "no")  # llama.cpp's typed get_key refuses a string
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    with pytest.raises(GGUFError, match="add_bos_token is str, not a bool"):
        Tokenizer.from_gguf(flagged)
