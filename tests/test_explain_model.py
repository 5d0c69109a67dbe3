"""The explainer's model replays several pre-tokenizer switches at once: memvanta's scanner (its sdist's
src/llama_model.cpp, `pretokenize_gpt2`) keeps a whitespace run before a word whole and ends a run of
symbols before a contraction, two faults of one port. A second `Resplit` replayed with the first must
change the regexes the first left, not llama.cpp's own (issue 48)."""

from __future__ import annotations

import copy

import tokconf
from tokconf.checking.explain import Kind
from tokconf.checking.explain.kinds import SPLIT_RULES, Resplit, Stage
from tokconf.checking.explain.model import Mutants
from tokconf_reference import Tokenizer


def _rule(name: str) -> Resplit:
    (rule,) = [r for r in SPLIT_RULES if r.name == name]
    return Resplit(Kind.PRETOKENIZER_SPLIT, Stage.TOKENIZER, rule=rule, pre="gpt-2")


def test_two_split_rules_replayed_together_both_hold() -> None:
    gpt2_reference = Tokenizer.from_gguf(tokconf.vocab_path("gpt-2"))
    both = [_rule("no-lookahead"), _rule("digits-one")]
    backend = Mutants(gpt2_reference).backend(both)
    assert backend is not None
    port = copy.copy(gpt2_reference)
    port._recent = {}
    port.encoder = copy.copy(gpt2_reference.encoder)
    port.encoder.cache = {}
    regexes = gpt2_reference.encoder.regexes
    for mechanism in both:
        regexes = mechanism.rule.regexes(regexes)
    port.encoder.regexes = regexes
    text = b"x  a 1234"  # `  a`: the run kept whole; ` 1234`: one digit at a time
    (answer,) = backend([(text, False, False)])
    assert answer == list(port.encode(text, False, False)) != list(gpt2_reference.encode(text, False, False))
