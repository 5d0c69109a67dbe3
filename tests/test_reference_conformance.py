"""The reference tokenizer against every bundled recording of a shipped vocabulary and its decoding:
zero mismatches (the synthetic ones: tests/test_synth.py).

Every shipped vocabulary type is supported, so every verdict must be "passed": an unsupported
vocab can never pass silently.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import check_recording
from tokconf.core.facts import Fact
from tokconf.implementations.resolve import resolve
from tokconf.recording.decoding import load_for
from tokconf.recording.format import load, recording_files

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


@pytest.mark.conformance
@pytest.mark.parametrize("name", [p.stem for p in recording_files([BUNDLED]) if p.parent == BUNDLED])
def test_reference_matches_llama_cpp(name: str, llama_build: Build) -> None:
    recording = load(BUNDLED / f"{name}.yaml")
    vocab = llama_build.models_dir / recording.provenance["vocab"]["file"]
    decoding = load_for(BUNDLED / f"{name}.yaml")
    results = list(check_recording(recording, resolve("reference", None), vocab, decoding=decoding))
    verdicts = Counter(r.verdict for r in results)
    problems = [f"{r.section} {r.case}: {r.reason}" for r in results if r.verdict is not Verdict.PASSED][:5]
    assert not problems, problems
    assert verdicts[Verdict.PASSED] == 3 * len(recording.cases) + len(Fact) + 4  # 3 modes, the facts, 4 decodings
