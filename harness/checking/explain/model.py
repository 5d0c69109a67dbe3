"""Replaying mechanisms: what a port with these deviations from llama.cpp would answer.

`Judge` is llama.cpp's answer for any input: the recorded answers first (every case the check ran,
reused), then the reference tokenizer where the recording is of the reference's own build, else the
live llama.cpp of the recording's build (crash-isolated), never the implementation under test.

`Model.predict` replays a set of mechanisms: the input ones on the input, then llama.cpp's answer
(or, with tokenizer mechanisms, the reference tokenizer with those differences, a "mutant"), then
the output ones on the ids, and the verdict ones over all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ...core.outcome import MODES, Mode, Outcome, Refusal, Request
from .kinds import (
    Kind,
    Mechanism,
    MergesIgnored,
    Reclassed,
    Refusing,
    Resplit,
    SpecialsCut,
    Stage,
)

Backend = Callable[[list[Request]], list[Outcome]]
KEPT_MUTANTS = 16  # mutant tokenizers kept (each with its own word cache)


class Judge:
    """llama.cpp's answers, asked once per distinct request."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.known: dict[Request, Outcome] = {}

    def remember(self, request: Request, outcome: Outcome) -> None:
        self.known[request] = outcome

    def answers(self, requests: Sequence[Request]) -> list[Outcome]:
        missing = list(dict.fromkeys(r for r in requests if r not in self.known))
        if missing:
            for request, outcome in zip(missing, self.backend(missing), strict=True):
                self.known[request] = outcome
        return [self.known[r] for r in requests]


def reference_backend(tokenizer: Any) -> Backend:
    """The reference tokenizer as a judge; its `LlamaAborts` are llama.cpp's aborts: refusals."""
    from reference_impl.errors import LlamaAborts

    def answers(requests: list[Request]) -> list[Outcome]:
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                out.append(tokenizer.encode(data, add_special, parse_special))
            except LlamaAborts as refusal:
                out.append(Refusal(str(refusal)))
        return out

    return answers


class Mutants:
    """The reference tokenizer with a port's tokenizer-stage deviations, one per combination used."""

    def __init__(self, reference: Any) -> None:
        self.reference = reference  # a reference_impl.Tokenizer, or None where it cannot read the vocab
        self.made: dict[str, Backend] = {}  # by the mechanisms' parameters, the most recent last

    @property
    def is_bpe(self) -> bool:
        from reference_impl.bpe import BytePairEncoder

        return self.reference is not None and isinstance(self.reference.encoder, BytePairEncoder)

    def backend(self, mechanisms: Sequence[Mechanism]) -> Backend | None:
        """A judge for the mutant, or None where the reference cannot carry these deviations."""
        if self.reference is None:
            return None
        key = repr(sorted(map(repr, mechanisms)))  # a mechanism that grew is another mutant
        backend = self.made.pop(key, None)
        if backend is None:
            mutant = self._mutate(mechanisms)
            if mutant is None:
                return None
            backend = reference_backend(mutant)
            if len(self.made) >= KEPT_MUTANTS:
                del self.made[next(iter(self.made))]  # the least recently used
        self.made[key] = backend
        return backend

    def _mutate(self, mechanisms: Sequence[Mechanism]) -> Any:
        from reference_impl.pretokenize import reclassified

        mutant = copy.copy(self.reference)
        mutant._recent = {}  # the fragment cache holds the unchanged tokenizer's ids
        encoder_changes: dict[str, Any] = {}
        flips: dict[int, bool] = {}
        for mechanism in sorted(mechanisms, key=repr):  # the same mutant whatever the order
            if isinstance(mechanism, SpecialsCut):
                mutant.cut, mutant.cut_rank = dict(mutant.cut), dict(mutant.cut_rank)
                mutant.any_special, mutant.by_head = dict(mutant.any_special), dict(mutant.by_head)
                parse = mechanism.parse_special
                if mechanism.kind is Kind.SPECIAL_NOT_PARSED:
                    tokens = [t for t in mutant.cut[parse] if t not in mechanism.tokens]
                else:  # a token llama.cpp made normal (phi-3's `</s>`) has no special text yet
                    mutant.special_bytes = {**mutant.special_bytes, **mechanism.tokens}
                    added = set(mutant.cut[parse]) | set(mechanism.tokens)
                    tokens = sorted(added, key=lambda t: -len(mutant.special_bytes[t]))  # cut longest first
                mutant.index_cut(parse, tokens)
            elif not self.is_bpe:
                return None
            elif isinstance(mechanism, Reclassed):  # both directions' flips in one table
                flips |= mechanism.flips
                encoder_changes["classes"] = reclassified(flips)
            elif isinstance(mechanism, Resplit):
                encoder_changes["regexes"] = mechanism.rule.regexes(self.reference.encoder.regexes)
            elif isinstance(mechanism, MergesIgnored):
                encoder_changes["ignore_merges"] = mechanism.ignore
        if encoder_changes:
            mutant.encoder = copy.copy(self.reference.encoder)
            mutant.encoder.cache = {}
            for name, value in encoder_changes.items():
                setattr(mutant.encoder, name, value)
        return mutant


class Model:
    """Predicts a port's answers from llama.cpp's and a set of mechanisms."""

    def __init__(self, judge: Judge, mutants: Mutants) -> None:
        self.judge = judge
        self.mutants = mutants

    def predict_many(
        self, mechanisms: Sequence[Mechanism], inputs: Sequence[bytes], mode: Mode
    ) -> list[Outcome | None]:
        """The answers of a port with these deviations, in one mode; None where they cannot be
        replayed (a tokenizer deviation on a vocabulary the reference cannot carry)."""
        flags = MODES[mode]
        staged = sorted(mechanisms, key=lambda m: m.stage.value)
        transformed = list(inputs)
        for mechanism in staged:
            if mechanism.stage is Stage.INPUT:
                transformed = [mechanism.transform(d) for d in transformed]
        tokenizer = [m for m in staged if m.stage is Stage.TOKENIZER]
        requests = [(d, *flags) for d in transformed]
        if tokenizer:
            backend = self.mutants.backend(tokenizer)
            if backend is None:
                return [None] * len(inputs)
            answers = backend(requests)
        else:
            answers = self.judge.answers(requests)
        out: list[Outcome | None] = []
        for data, answer in zip(inputs, answers, strict=True):
            for mechanism in staged:
                if isinstance(mechanism, Refusing) and mechanism.refuses(data):
                    answer = Refusal(mechanism.label())
                elif isinstance(answer, list) and mechanism.stage is Stage.OUTPUT and mechanism.applies(data, mode):
                    answer = mechanism.apply(answer)  # a BOS added only in the modes it was seen in
            out.append(answer)
        return out

    def predict(self, mechanisms: Sequence[Mechanism], data: bytes, mode: Mode) -> Outcome | None:
        return self.predict_many(mechanisms, [data], mode)[0]
