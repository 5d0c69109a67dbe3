"""Which published llama.cpp builds tokenize exactly like an implementation (`tokconf identify`).

The implementation is asked every case of the recordings (or of `--vocab`) in every mode. A stretch of
builds (tokconf.history.data) expects, for each outcome, its stored answer where it has one, else the
recording's; the stretches it agrees with on every outcome are its builds. Agreement is a check's: equal
ids, or a refusal where llama.cpp refuses; an error (the port broke) agrees with nothing; an input it
declines as a class tokconf verifies (or a whole mode it does not do) is left out and counted, one it
declines for a reason of its own agrees with nothing (it could hide any difference).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..checking.engine import parsed_only_with_parse_special, verified
from ..core.errors import TokconfError
from ..core.outcome import LOAD, MODES, DeclineContext, InputClass, Outcome, Refusal, RefusalKind, Request
from ..implementations.base import Broken, Decoder, Implementation, LoadRefused, Unsupported, VocabInfo
from ..recording.decoding import PIECE_KINDS, Decoding
from ..recording.format import Recording
from .bisect.probe import VOCAB_WIDE, Answer, Answers, Key, ProbeSet, decoded, detokenized, pieces_of, same
from .data import History, Stretch


def agrees(answer: Answer, expected: Answer) -> bool:
    return _answered(answer) and same(answer, expected)


def _answered(answer: Answer) -> bool:
    """Not an error of the implementation's own (which agrees with nothing)."""
    return not (isinstance(answer, Refusal) and answer.kind is RefusalKind.BROKEN)


def _places(answer: Answer) -> bool:
    """An answer that can place it: not an error of its own, nor its process dying (a death agrees with
    a build that aborts there, but dying on every input says nothing of which build it is like)."""
    return _answered(answer) and not (isinstance(answer, Refusal) and answer.kind is RefusalKind.DIED)


@dataclass
class Identification:
    """What an implementation answered and which stretches it agrees with."""

    history: History
    probes: ProbeSet
    answers: Answers  # what it answered, declines left out
    recorded: Answers  # the recordings' outcomes for the same keys
    declined: int = 0
    declined_vocabs: list[str] = field(default_factory=list)
    unloaded: dict[str, str] = field(default_factory=dict)  # vocab -> why it refused to load it (LoadRefused)
    mismatches: list[int] = field(default_factory=list)  # per stretch: outcomes it answers otherwise

    @property
    def ranges(self) -> list[tuple[Stretch, Stretch]]:
        """Runs of neighbouring stretches it agrees with, as (first stretch, last stretch)."""
        runs: list[tuple[Stretch, Stretch]] = []
        previous = -2
        for index, stretch in enumerate(self.history.stretches):
            if self.mismatches[index]:
                continue
            if index == previous + 1:
                runs[-1] = (runs[-1][0], stretch)
            else:
                runs.append((stretch, stretch))
            previous = index
        return runs

    @property
    def nearest(self) -> Stretch:
        best = min(range(len(self.mismatches)), key=lambda i: (self.mismatches[i], -i))
        return self.history.stretches[best]

    def versus(self, stretch: int | None) -> list[Key]:
        """The outcomes it answers otherwise than a stretch (None: than the recordings)."""

        def expected(key: Key) -> Answer:
            recorded = self.recorded[key]
            return recorded if stretch is None else self.history.answer(stretch, key, recorded)

        return sorted(key for key, answer in self.answers.items() if not agrees(answer, expected(key)))

    def load_refusals(self, keys: list[Key]) -> dict[str, WholeRefusal]:
        """The vocabularies among `keys` that one side did not load, the other did: the implementation
        raised LoadRefused for it (`unloaded`) where the recorded build loaded it, or the recording holds
        llama.cpp's load refusal for every key where the implementation answered each (an error or a death
        of its own is no loading: those keys stay samples). Said once, where a sample of its shortest
        inputs would show the same refusal line after line and leave the vocabularies with other
        differences out (an older binding refuses dozens of newer pre names)."""
        by_vocab: dict[str, list[Key]] = {}
        for key in keys:
            by_vocab.setdefault(key[0], []).append(key)
        found: dict[str, WholeRefusal] = {}
        for vocab, its_keys in by_vocab.items():
            recorded = _one_load_refusal([self.recorded[key] for key in its_keys])
            if vocab in self.unloaded and recorded is None:
                found[vocab] = WholeRefusal(True, self.unloaded[vocab], len(its_keys))
            elif recorded is not None and all(_places(self.answers[key]) for key in its_keys):
                found[vocab] = WholeRefusal(False, recorded, len(its_keys))
        return found


@dataclass(frozen=True)
class WholeRefusal:
    """A vocabulary one side refused to load: `by_it` (the implementation refused, the recorded build
    loaded it; else the other way round), llama.cpp's `reason`, and how many answers differ for it."""

    by_it: bool
    reason: str
    answers: int


def _one_load_refusal(answers: list[Answer]) -> str | None:
    """The reason, when every answer is the same load refusal (as a recording or the history holds
    llama.cpp's: a probe's `load:` answer)."""
    reasons = {a.reason if isinstance(a, Refusal) and a.reason.startswith(LOAD) else None for a in answers}
    reason = reasons.pop() if len(reasons) == 1 else None
    return reason.removeprefix(LOAD) if reason is not None else None


def identify(
    impl: Implementation,
    history: History,
    recordings: list[Recording],
    probes: ProbeSet,
    decodings: Mapping[str, Decoding | None],
) -> Identification:
    """Ask `impl` every case of `recordings` (their vocab files are `probes`') and match the stretches;
    where it has a decoder and the recording a decoding (`decodings`, by vocab), its pieces and
    detokenized text too, so a change point where only those changed bounds a range as well."""
    for recording in recordings:
        why = history.made_from.refusal(recording, decodings.get(recording.vocab_name) is not None)
        if why is not None:
            raise TokconfError(
                f"the build history was made from other recordings: {why}",
                "identify against the bundled recordings, or make a history of yours: tokconf upgrade --data",
            )
    found = Identification(history, probes, {}, {})
    by_name = {r.vocab_name: r for r in recordings}
    for name, path, cases in probes.vocabs:
        recording = by_name[name]
        recorded = decoded(recording, decodings.get(name))
        requests = [(data, *MODES[mode]) for _, data in cases for mode in MODES]
        keys: list[Key] = [(name, case_id, mode) for case_id, _ in cases for mode in MODES]
        info = VocabInfo.of(path, name, recording.vocab_sha256, recording.facts)
        answered: Answers
        try:
            session = impl.open(info)
        except LoadRefused as refused:
            answered = dict.fromkeys(keys, Refusal(f"{LOAD}{refused}"))
            found.unloaded[name] = str(refused)
        except Unsupported:
            found.declined_vocabs.append(name)
            continue
        except Broken as broken:  # agrees with no build, as in a check (an error, never a pass)
            answered = dict.fromkeys(keys, Refusal(str(broken), RefusalKind.BROKEN))
        else:
            try:
                outcomes = session.encode_many(requests, _aborting(history, keys, recorded))
                context = DeclineContext(parsed_only_with_parse_special(recording.facts), session.max_input_bytes)
                judged = [
                    verified(outcome, request, context) for outcome, request in zip(outcomes, requests, strict=True)
                ]
                whole = _whole_modes(judged, requests, context)
                answered = {key: _judged_decline(answer, whole) for key, answer in zip(keys, judged, strict=True)}
                decoder = session.decoder()
                if decoder is not None and decodings.get(name) is not None:
                    answered.update(_decoding(decoder, name, answered))
            finally:
                session.close()
        for key, answer in answered.items():  # decoding: of the cases it gave ids, if it decodes at all
            if isinstance(answer, Refusal) and answer.kind is RefusalKind.UNSUPPORTED:
                found.declined += 1
            elif key in recorded:
                found.answers[key] = answer
                found.recorded[key] = recorded[key]
    if not any(_places(answer) for answer in found.answers.values()):
        why, what_to_do = _nothing(found)
        raise TokconfError(f"nothing to identify {impl.name} by: {why}", what_to_do)
    found.mismatches = [len(found.versus(index)) for index in range(len(history.stretches))]
    return found


def _whole_modes(answers: list[Outcome], requests: list[Request], context: DeclineContext) -> frozenset[InputClass]:
    """The mode classes (`parse-special`, `add-special`) the port declined on every request they fit: a
    mode it does not do. Declining some of them only could be declining exactly what it gets wrong."""
    return frozenset(
        cls
        for cls in (InputClass.PARSE_SPECIAL, InputClass.ADD_SPECIAL)
        if all(
            isinstance(answer, Refusal) and answer.declined is cls
            for answer, request in zip(answers, requests, strict=True)
            if cls.fits(request, context)
        )
    )


def _judged_decline(answer: Outcome, whole: frozenset[InputClass]) -> Outcome:
    """A decline as identify counts it (its class checked on the input first, `verified`): one of a
    class tokconf verifies, or of a whole mode the port does not do (`whole`), is left out and counted;
    any other (`other`, or a mode class declined on some of its requests only) could hide a difference,
    so it agrees with no build, as it counts against coverage in a check (an error that keeps the class
    it was declined as, so identify can say "declined every input" rather than "broke")."""
    if not isinstance(answer, Refusal) or answer.kind is not RefusalKind.UNSUPPORTED:
        return answer
    if answer.declined is not None and (answer.declined.grantable or answer.declined in whole):
        return answer
    return Refusal(f"declined for a reason of its own: {answer.reason}", RefusalKind.BROKEN, answer.declined)


def _aborting(history: History, keys: list[Key], recorded: Answers) -> frozenset[int]:
    """The requests some build of the history aborts on (the recording's or a stretch's refusal): a
    binding whose process dies there agrees with that build, as in a check (tokconf.checking.engine)."""
    return frozenset(
        index
        for index, key in enumerate(keys)
        if isinstance(recorded.get(key), Refusal)
        or any(isinstance(answer, Refusal) for answer in history.outcomes.get(key, ()))
    )


def _nothing(found: Identification) -> tuple[str, str]:
    """Why no answer can place it (everything declined, or broken: the first reason), and what to do."""
    errors = [a for a in found.answers.values() if isinstance(a, Refusal) and not _places(a)]
    if errors and all(error.declined is not None for error in errors):  # each a decline `_judged_decline` refused
        return f"it declined every input it was asked ({errors[0].reason})", (
            "declines for a reason of its own (input_class other) say nothing of which build it is like: "
            "identify it where it answers"
        )
    broken = [error for error in errors if error.kind is not RefusalKind.DIED]
    if errors and not broken:
        return f"its process died on every input it was asked ({errors[0].reason})", "fix that, then identify it again"
    if errors:
        return (
            f"it broke on every vocabulary it was asked ({broken[0].reason})",
            "fix that error, then identify it again",
        )
    parts = [f"{found.declined} inputs declined"] if found.declined else []
    parts += [f"declined whole: {', '.join(found.declined_vocabs)}"] if found.declined_vocabs else []
    return "; ".join(parts) or "no case was asked", (
        "identify it on vocabularies and inputs it tokenizes (without --vocab: every bundled one)"
    )


def _decoding(decoder: Decoder, name: str, answered: Answers) -> Answers:
    """Its pieces and detokenized text, as a probe asks llama.cpp's; a decoder that breaks answers a
    broken refusal for each, which agrees with no build."""
    try:
        return {**pieces_of(decoder, name), **detokenized(decoder, name, answered)}
    except Exception as error:  # the implementation's own code: anything it raises is its fault
        broken = Refusal(f"decoding: {type(error).__name__}: {error}", RefusalKind.BROKEN)
        return dict.fromkeys([(name, VOCAB_WIDE, kind) for kind in PIECE_KINDS], broken)
