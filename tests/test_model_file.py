"""A full model file (tokenizer keys and tensor data) is recorded and checked like a vocab-only file,
by reading only the tokenizer keys: the first thing a port author records is their model. What loading
one costs against its vocab-only file is measured by benchmarks/model_file.py."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from gguf import GGUFReader
from tokconf.builds.build import Build
from tokconf.cli.main import main
from tokconf.core.files import BUNDLED_RECORDINGS
from tokconf.recording.format import load

TENSOR_BYTES = 256 << 20  # 256 MiB of weights: a small model's worth
CORPUS = """theme: t
description: a small corpus for tests
cases:
- {id: hello, text: "Hello world", why: prose}
- {id: ideographic, text: "a\\u3000b", why: a whitespace class ports get wrong}
"""


def with_tensors(vocab: Path, out: Path) -> Path:
    """The vocab file with one F32 tensor of TENSOR_BYTES after its key/values, as a model file has:
    the header's tensor count is 1, the tensor's info follows the key/values, its data is aligned."""
    reader = GGUFReader(vocab)
    kv_end = max(f.offset + sum(p.nbytes for p in f.parts) for f in reader.fields.values())
    raw = vocab.read_bytes()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", raw)
    assert n_tensors == 0
    name = b"token_embd.weight"
    info = struct.pack("<Q", len(name)) + name + struct.pack("<IQQIQ", 2, 1024, TENSOR_BYTES // 4096, 0, 0)
    head = struct.pack("<4sIQQ", magic, version, 1, n_kv) + raw[24:kv_end] + info
    head += b"\0" * (-len(head) % 32)  # general.alignment's default
    with out.open("wb") as handle:
        handle.write(head)
        handle.truncate(len(head) + TENSOR_BYTES)  # zeros, written sparse
    return out


def test_a_model_file_with_tensors_is_recorded_and_checked(
    llama_build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    vocab = llama_build.models_dir / "ggml-vocab-llama-spm.gguf"  # 32,000 tokens: its decoding is quick
    model = with_tensors(vocab, tmp_path / "my-model.gguf")
    assert model.stat().st_size > TENSOR_BYTES
    assert GGUFReader(model).tensors[0].name == "token_embd.weight"  # a well-formed model file
    (tmp_path / "c.yaml").write_text(CORPUS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["record", "--vocab", str(model), "--corpus", "c.yaml", "--fuzz-count", "20"]) == 0
    out = tmp_path / "recordings" / "b11192"
    assert sorted(p.name for p in out.iterdir()) == ["my-model.decoding.yaml", "my-model.yaml"]
    recorded = load(out / "my-model.yaml")
    assert recorded.provenance["vocab"]["file"] == "my-model.gguf" and recorded.facts["model"] == "llama"
    hello = next(c for c in recorded.cases if c.id == "c/hello")
    bundled = next(c for c in load(BUNDLED_RECORDINGS / "llama-spm.yaml").cases if c.id == "edge/hello-world")
    assert hello.outcomes == bundled.outcomes  # what the vocab-only file answered
    check = ["check", "--recordings", str(out), "--vocab-dir", str(tmp_path)]
    assert main([*check, "--impl", "reference"]) == 0
    assert main([*check, "--impl", "llama.cpp@11192"]) == 0
