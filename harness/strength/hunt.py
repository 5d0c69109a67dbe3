"""An input that kills a surviving mutant: searched against the mutant, the live pinned build the oracle.

For each vocabulary reaching the mutant, candidate inputs are asked of both in every mode (and the
oracle's `bos` ids detokenized by both in every decoding setting): first, for a table mutant, each
code point it changes in a few contexts (alone, beside letters, spaces, digits and itself); then the
fuzz generator's inputs (tokconf.fuzz.generator, the vocabulary's own words and special texts mixed
with hostile pieces), seeded by the mutant's key, so a search is the same every time. The first
difference found is made minimal (tokconf.core.shrink) and returned, to be added to the corpus with
its reason (corpora/strength.yaml) and recorded.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..builds.build import Build
from ..core.outcome import MODES, Outcome
from ..core.shrink import ddmin, units
from ..fuzz.generator import InputGenerator, sample_words
from ..oracles.libllama_client import LibllamaOracle
from ..recording.decoding import DETOKENIZE
from .mutants import Mutant
from .schemata import ENVIRONMENT

BATCH = 2000  # candidates per round
CONTEXTS = ("{}", "a{}", "{}a", " {}", "{} ", "{}{}", "1{}1", "A{}b", "{} b", "\n{}\n", "x{}y z")


@dataclass(frozen=True)
class Found:
    """An input on which the mutant answers otherwise than llama.cpp: in `mode`, or in decoding."""

    vocab: str
    data: bytes
    mode: str  # a Mode, or `decode`
    expected: Outcome | bytes
    actual: Outcome | bytes


def _oracle(build: Build, vocab: Path, mutant: int) -> LibllamaOracle:
    os.environ[ENVIRONMENT] = str(mutant)
    try:
        return LibllamaOracle(build, vocab, timeout=20.0)
    finally:
        os.environ.pop(ENVIRONMENT, None)


def candidates(mutant: Mutant, words: list[bytes], specials: list[bytes], rounds: int) -> list[list[bytes]]:
    """The rounds of inputs to try, the code point contexts first."""
    found = []
    if mutant.codepoints:
        changed = mutant.codepoints[:64]
        found.append([c.format(chr(cp)).encode("utf-8", "surrogatepass") for cp in changed for c in CONTEXTS])
    generator = InputGenerator(f"tokconf strength hunt {mutant.key}", words, specials)
    found += [generator.batch(BATCH) for _ in range(rounds)]
    return found


def _differs(
    mutant: LibllamaOracle, oracle: LibllamaOracle, inputs: list[bytes]
) -> tuple[bytes, str, Outcome | bytes, Outcome | bytes] | None:
    for mode, (add, parse) in MODES.items():
        requests = [(data, add, parse) for data in inputs]
        for data, want, got in zip(inputs, oracle.tokenize_many(requests), mutant.tokenize_many(requests), strict=True):
            if want != got:
                return data, mode, want, got
    asked = [(data, ids) for data, ids in zip(inputs, oracle.tokenize_many([(d, *MODES["bos"]) for d in inputs]),
                                              strict=True) if isinstance(ids, list)]  # fmt: skip
    for remove, unparse in DETOKENIZE.values():
        texts = [(ids, remove, unparse) for _, ids in asked]
        for (data, _), text, mutated in zip(asked, oracle.detokenize_many(texts), mutant.detokenize_many(texts),
                                            strict=True):  # fmt: skip
            if text != mutated:
                return data, "decode", text, mutated
    return None


def hunt(number: int, mutant: Mutant, schemata: Build, pinned: Build, vocabs: dict[str, Path],
         rounds: int, progress: Callable[[str], None]) -> Found | None:  # fmt: skip
    """The first input, made minimal, on which mutant `number` of the schemata library and the pinned
    build differ, on one of `vocabs`; None when none of the candidates shows one."""
    for name, path in vocabs.items():
        with _oracle(schemata, path, number) as wrong, _oracle(pinned, path, 0) as right:
            facts = right.facts()
            words = sample_words(right.pieces(True))
            specials = [t for t in facts.get("special_texts", {}).values() if t]
            for index, batch in enumerate(candidates(mutant, words, specials, rounds)):
                found = _differs(wrong, right, batch)
                progress(f"{name}: round {index + 1}: {'found' if found else 'nothing'}")
                if found is None:
                    continue
                data, mode, _, _ = found

                def fails(tries: list[bytes], mode: str = mode) -> list[bool]:
                    if mode == "decode":
                        return [_differs(wrong, right, [t]) is not None for t in tries]
                    add, parse = MODES[mode]  # type: ignore[index]
                    want = right.tokenize_many([(t, add, parse) for t in tries])
                    got = wrong.tokenize_many([(t, add, parse) for t in tries])
                    return [w != g for w, g in zip(want, got, strict=True)]

                small, _ = ddmin(units(data), fails)
                again = _differs(wrong, right, [small]) or found
                return Found(name, again[0], again[1], again[2], again[3])
    return None
