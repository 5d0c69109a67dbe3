"""The interleaving check's sample (tokconf.checking.interleave.sample): which cases a port is asked
again with every vocabulary loaded in one process."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokconf.checking.interleave import FOCUS, SPREAD, sample
from tokconf.core.outcome import MODES
from tokconf.recordings.format import load

B11192 = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


@pytest.mark.parametrize("name", ["gpt-2", "deepseek-llm", "command-r"])
def test_the_sample_holds_the_first_cases_with_a_special_tokens_text(name: str) -> None:
    """Besides the spread and the longest cases, the first FOCUS cases (in the recording's order) that
    hold any special token's text, as a plain search of every text in every case finds them; these
    vocabularies have 1 to 2,400 such texts."""
    recording = load(B11192 / f"{name}.yaml")
    replay = sample(recording, Path("unused.gguf"), [(mode, case.id) for case in recording.cases for mode in MODES])
    assert replay is not None
    chosen = {case.id for case, _ in replay.cases}
    texts = [text for text in recording.facts["special_texts"].values() if text]
    holding = [case.id for case in recording.cases if any(text in case.data for text in texts)]
    assert len(holding) > FOCUS
    assert set(holding[:FOCUS]) <= chosen
    assert len(chosen) <= SPREAD + 2 * FOCUS
    assert {mode for _, mode in replay.cases} == set(MODES)
