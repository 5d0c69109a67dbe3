"""What every stretch of published builds answers, for `tokconf identify`: made by `tokconf upgrade
--data FILE` from real builds' answers, never written by hand.

A stretch is the builds between two change points of a walk (tokconf.history.walk): they all answer
alike. Only answers that some stretch gives otherwise than the recordings are stored (the rest are
the recordings' own), each as the distinct answers and one character per stretch saying which: `0` the
recording's answer, `1` the first stored answer, and so on. Ids are stored as a list, a refusal as the
index of its reason in `refusals`, facts, pieces and detokenized text as the probe's text
(tokconf.history.bisect.probe). The file names the recordings it was made from (each vocab file's sha256) and
the sdist of every build it probed, so identify refuses to compare against other recordings, and a
reader can fetch the same builds. "Each vocab" is its file's sha256, a digest of its cases (ids and
inputs: another corpus or fuzz seed reusing the case ids is other recordings) and whether its decoding
was asked.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import TokconfError
from ..core.files import atomic_write
from ..core.outcome import Refusal
from ..recording.format import Recording
from .bisect.probe import ITEMS, Answer, Answers, Item, Key, cases_digest, same
from .walk import Walk

FORMAT = 2  # 2: the recordings' cases digest and decoded vocabs (identify refuses other inputs)
BUNDLED = "b9093-b11434.json.gz"  # the bundled data: every shipped and synthetic recording over b9093..b11434
DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"  # stretch characters: at most 35 stored answers per outcome


@dataclass(frozen=True)
class Stretch:
    first: int
    last: int
    builds: tuple[int, ...]  # the published builds in it

    def label(self) -> str:
        return f"b{self.first}" if self.first == self.last else f"b{self.first}..b{self.last}"


@dataclass(frozen=True)
class MadeFrom:
    """The recordings a history's answers are answers to."""

    build: int
    vocabs: dict[str, str]  # vocab name -> the sha256 of the vocab file the builds were asked with
    cases: dict[str, str]  # vocab name -> tokconf.history.bisect.probe.cases_digest of its cases
    decoded: frozenset[str]  # the vocabs whose decoding (pieces, detokenized text) was asked too

    def refusal(self, recording: Recording, decoding: bool) -> str | None:
        """Why `recording` is not one of these (None: it is), for identify's error."""
        name = recording.vocab_name
        if name not in self.vocabs:
            return f"it holds no answers for {name} (made from other vocabularies, or with --vocab)"
        if recording.build != self.build:
            return f"{name} is a recording of b{recording.build}, the history's are of b{self.build}"
        if self.vocabs.get(name) != recording.vocab_sha256:
            return f"{name}'s vocab file is not the one the history's builds were asked with"
        if self.cases.get(name) != cases_digest((c.id, c.data) for c in recording.cases):
            return f"{name}'s cases (ids and inputs) are not the ones the history's builds were asked"
        if decoding and name not in self.decoded:
            return f"{name} has a decoding file, but the history's builds were not asked its decoding"
        return None


@dataclass(frozen=True)
class History:
    """The stored answers of every stretch, and what they were made from."""

    command: str  # the command that made the file
    made_from: MadeFrom
    builds: tuple[int, ...]  # the published builds covered, ascending
    stretches: tuple[Stretch, ...]
    sdists: dict[int, str]  # every probed build -> its sdist sha256
    outcomes: dict[Key, tuple[Answer | None, ...]]  # per stretch; None: the recording's outcome

    def answer(self, stretch: int, key: Key, recorded: Answer) -> Answer:
        stored = self.outcomes.get(key)
        value = None if stored is None else stored[stretch]
        return recorded if value is None else value


def from_walk(walk: Walk, recorded: Answers, made_from: MadeFrom, command: str, sdists: dict[int, str]) -> History:
    """The stretches of a walk and what each answers, kept where it differs from what the recordings
    hold (`recorded`: tokconf.history.bisect.probe.decoded)."""
    stretches = tuple(
        Stretch(first, last, tuple(b for b in walk.builds if first <= b <= last)) for first, last in walk.stretches
    )
    representatives = [first for first, _ in walk.stretches]  # each stretch's first build was probed
    outcomes: dict[Key, tuple[Answer | None, ...]] = {}
    for key, held in recorded.items():
        answers = [walk.outcome(build, key) for build in representatives]
        if any(answer is None for answer in answers):
            continue  # not selected for the walk, or not asked (a case some build gives no ids to decode)
        kept = tuple(None if same(answer, held) else answer for answer in answers)
        if any(answer is not None for answer in kept):
            outcomes[key] = kept
    return History(
        command=command,
        made_from=made_from,
        builds=tuple(walk.builds),
        stretches=stretches,
        sdists=dict(sorted(sdists.items())),
        outcomes=outcomes,
    )


def _encode(history: History) -> dict[str, Any]:
    refusals: list[str] = []
    table: dict[str, dict[str, dict[str, list[Any]]]] = {}
    for (vocab, case, mode), answers in sorted(history.outcomes.items()):
        distinct: list[Answer] = []
        marks = ""
        for answer in answers:
            if answer is None:
                marks += "0"
                continue
            if answer not in distinct:
                distinct.append(answer)
            if len(distinct) >= len(DIGITS):
                raise TokconfError(
                    f"{vocab} {case} {mode} answers {len(distinct)} ways over the walk: a history holds at most "
                    f"{len(DIGITS) - 1}",
                    "walk a shorter range of builds (--from, --to)",
                )
            marks += DIGITS[distinct.index(answer) + 1]
        stored: list[Any] = [marks]
        for answer in distinct:
            if isinstance(answer, Refusal):
                if answer.reason not in refusals:
                    refusals.append(answer.reason)
                stored.append(refusals.index(answer.reason))
            else:
                stored.append(answer)
        table.setdefault(vocab, {}).setdefault(case, {})[mode] = stored
    return {
        "format": FORMAT,
        "command": history.command,
        "recordings": {
            "build": history.made_from.build,
            "vocabs": dict(sorted(history.made_from.vocabs.items())),
            "cases": dict(sorted(history.made_from.cases.items())),
            "decoded": sorted(history.made_from.decoded),
        },
        "builds": list(history.builds),
        "stretches": [[s.first, s.last] for s in history.stretches],
        "sdists": {f"b{b}": h for b, h in history.sdists.items()},
        "refusals": refusals,
        "outcomes": table,
    }


def write(path: Path, history: History) -> None:
    """Deterministic bytes (no time in the gzip header) for the same answers."""
    text = json.dumps(_encode(history), separators=(",", ":"), sort_keys=True) + "\n"
    atomic_write(path, gzip.compress(text.encode(), mtime=0), "build history")


def read(path: Path | None = None) -> History:
    """The history at `path`, or the bundled one."""
    where = str(path) if path is not None else f"the bundled {BUNDLED}"
    try:
        raw = path.read_bytes() if path is not None else resources.files(__package__).joinpath(BUNDLED).read_bytes()
        doc = json.loads(gzip.decompress(raw))
        return _decode(doc)
    except (OSError, ValueError, KeyError, TypeError, IndexError, EOFError) as error:
        raise TokconfError(
            f"cannot read the build history {where}: {error}",
            "make it again with `tokconf upgrade --from N --to M --data FILE`",
        ) from None


def _item(name: str) -> Item:
    for item in ITEMS:
        if item == name:
            return item
    raise ValueError(f"item {name!r}")


def _answer(value: object, refusals: list[str]) -> Answer:
    if isinstance(value, str):
        return value  # facts, a pieces digest or a detokenized text
    if isinstance(value, int):
        return Refusal(refusals[value])
    if not isinstance(value, list):
        raise ValueError(f"an answer {value!r}")
    return [int(i) for i in value]


def _decode(doc: dict[str, Any]) -> History:
    if doc["format"] != FORMAT:
        raise ValueError(f"format {doc['format']}, this tokconf reads {FORMAT}")
    builds = tuple(int(b) for b in doc["builds"])
    if not builds or not doc["stretches"]:
        raise ValueError("no builds or no stretches")
    stretches = tuple(
        Stretch(int(first), int(last), tuple(b for b in builds if first <= b <= last))
        for first, last in doc["stretches"]
    )
    refusals = [str(r) for r in doc["refusals"]]
    outcomes: dict[Key, tuple[Answer | None, ...]] = {}
    for vocab, cases in doc["outcomes"].items():
        for case, modes in cases.items():
            for mode, (marks, *distinct) in modes.items():
                if len(marks) != len(stretches):
                    raise ValueError(f"{vocab} {case} {mode}: {len(marks)} stretches, not {len(stretches)}")
                values = [_answer(v, refusals) for v in distinct]
                outcomes[vocab, case, _item(mode)] = tuple(
                    None if m == "0" else values[DIGITS.index(m) - 1] for m in marks
                )
    recordings = doc["recordings"]
    return History(
        command=str(doc["command"]),
        made_from=MadeFrom(
            build=int(recordings["build"]),
            vocabs={str(k): str(v) for k, v in recordings["vocabs"].items()},
            cases={str(k): str(v) for k, v in recordings["cases"].items()},
            decoded=frozenset(str(v) for v in recordings["decoded"]),
        ),
        builds=builds,
        stretches=stretches,
        sdists={int(b.removeprefix("b")): str(h) for b, h in doc["sdists"].items()},
        outcomes=outcomes,
    )
