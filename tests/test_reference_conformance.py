"""The reference tokenizer against every bundled recording and its decoding: zero mismatches.

Every shipped vocabulary type is supported, so every verdict must be "passed": an unsupported
vocab can never pass silently.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from harness.checking import check_recording
from harness.decoding import load_for
from harness.impls import resolve
from harness.recording import load, recording_files

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


@pytest.mark.parametrize("name", [p.stem for p in recording_files([BUNDLED])])
def test_reference_matches_llama_cpp(name: str, llama_build: object) -> None:
    recording = load(BUNDLED / f"{name}.yaml")
    vocab = llama_build.models_dir / recording.provenance["vocab"]["file"]  # type: ignore[attr-defined]
    decoding = load_for(BUNDLED / f"{name}.yaml")
    results = list(check_recording(recording, resolve("reference", 10.0), vocab, decoding=decoding))
    verdicts = Counter(r.verdict for r in results)
    problems = [f"{r.mode} {r.case}: {r.reason}" for r in results if r.verdict != "passed"][:5]
    assert not problems, problems
    assert verdicts["passed"] == 3 * len(recording.cases) + 5 + 4  # every case in 3 modes, 5 facts, 4 decodings
