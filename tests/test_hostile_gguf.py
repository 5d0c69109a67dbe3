"""Mutated vocabulary files: the reference's loader raises only typed errors, with bounded memory.

hypothesis mutates a real vocab file (cuts, bit flips, hostile lengths, type swaps, arrays of
arrays); every load must succeed or raise `GGUFError`, `UnsupportedVocab`, `MissingSpecialToken`
or `CharsmapError`, never another exception, never allocate more than `MEMORY_HEADROOM`, and never
hang. The loads run in one worker process, whose address space is capped (a huge allocation is a
`MemoryError` there) and whose answer has a hang guard: on a shared machine a time limit tight
enough to mean "slow" fails healthy code, so none is asserted.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import resource
import struct
from collections.abc import Iterator
from multiprocessing.pool import Pool
from pathlib import Path

import pytest
from gguf import GGUFWriter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokconf.builds.build import Build
from tokconf_reference.gguf_reader import GGUFError, read_tokenizer_fields
from tokconf_reference.tokenizer import MissingSpecialToken, Tokenizer, UnsupportedVocab
from tokconf_reference.ugm import CharsmapError

TYPED = (GGUFError, UnsupportedVocab, MissingSpecialToken, CharsmapError)
MEMORY_HEADROOM = 1 << 30  # bytes a load may add to the worker's address space (the file is 0.6 MB)
HANG_GUARD = 300  # seconds for one load, which takes well under one: only a hang reaches it


@pytest.fixture(scope="module")
def original(llama_build: Build) -> bytes:
    return (llama_build.models_dir / "ggml-vocab-bert-bge.gguf").read_bytes()


def _cap_memory() -> None:
    """The worker's address space: what it holds with this module (and so the loader) imported, plus
    MEMORY_HEADROOM."""
    with open("/proc/self/status", encoding="ascii") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + MEMORY_HEADROOM, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _load_in_worker(path: str) -> None:
    """One load; an error of another type than TYPED (MemoryError included) goes back to the test."""
    with contextlib.suppress(*TYPED):
        Tokenizer.from_gguf(Path(path))


@pytest.fixture(scope="module")
def worker() -> Iterator[Pool]:
    with multiprocessing.get_context("spawn").Pool(1, initializer=_cap_memory) as pool:
        yield pool


def test_the_workers_memory_cap_holds(worker: Pool) -> None:
    with pytest.raises(MemoryError):
        worker.apply(bytearray, (2 * MEMORY_HEADROOM,))


def _load(worker: Pool, tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "mutated.gguf"
    path.write_bytes(data)
    try:
        worker.apply_async(_load_in_worker, (str(path),)).get(timeout=HANG_GUARD)
    except multiprocessing.TimeoutError:
        worker.terminate()
        pytest.fail(f"loading a mutated vocab hung (no answer in {HANG_GUARD} s)", pytrace=False)


mutation = st.one_of(
    st.tuples(st.just("cut"), st.integers(0, 1 << 22)),
    st.tuples(st.just("flip"), st.integers(0, 4096), st.integers(0, 7)),
    st.tuples(st.just("length"), st.integers(0, 4096), st.sampled_from([0, 1, 1 << 31, (1 << 63) - 1, (1 << 64) - 1])),
    st.tuples(st.just("type"), st.integers(0, 4096), st.integers(0, 13)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(mutation)
def test_a_mutated_vocab_is_loaded_or_refused_with_a_typed_error(
    original: bytes, worker: Pool, tmp_path_factory: pytest.TempPathFactory, change: tuple[object, ...]
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
    _load(worker, tmp_path_factory.mktemp("m"), bytes(data))


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
