"""A mutation campaign: each mutant of the schemata library checked against the bundled recordings.

Each mutant is an implementation like any llama.cpp (`tokconf.implementations.llama_cpp`, one worker
per vocabulary, crash-isolated), judged by the check engine (`check_recording`), with its number in
`TOKCONF_MUTANT` for the workers it starts. What makes 300 mutants fit in an hour on 2 cores:

- **selection by coverage**: a mutant is asked only of the vocabularies whose coverage run reached one
  of its lines (tokconf.strength.coverage); a table mutant, of those that reached the functions that
  read the tables, and of their cases holding a code point it changes (`changed_text`): the tables are
  read a code point at a time, so no other input sees it (every kill of the first full campaign's table
  mutants was by such a case). Another vocabulary runs none of its code, so cannot see it. A mutant no
  vocabulary reaches is `unreached`: a survivor, and a gap in coverage.
- **ordering**: cases in three tiers, llama.cpp's own test inputs (`llama.cpp/*`), the rest but the
  fuzz strings (facts and decoding with them), then the fuzz strings; within a tier, the cases that
  killed earlier mutants of this campaign first.
- **stopping early**: a mutant is asked no more once its score is known in every tier and THIN
  problems were found (so a thin kill, under THIN, is told apart); usually a few cases.
- **a time limit** per mutant, from llama.cpp's own time on the same vocabularies (the campaign's
  first step runs mutant 0, the library unchanged, over every vocabulary, which must pass them all),
  and a stall limit (no answer for a while, from llama.cpp's time on the vocabulary being checked): a
  mutant past either is killed, as a hang (`timeout`), and counted apart. Each mutant runs in a forked
  process of its own, killed with its workers then. A batch of answers that never comes (the worker's
  own time limit) settles it the same way at once: a hang's thinness is not measured, and asking on
  would cost a time limit per problem.

The outcome of each mutant is appended to a journal, one JSON line, so a killed campaign resumes
where it stopped; `--shard i/n` runs every n-th mutant from the i-th, each shard with its own journal,
and `merge` reads them all (tokconf.strength.report).
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import enum
import fcntl
import hashlib
import json
import os
import re
import select
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..builds.build import Build
from ..checking.contract import DECODE, FACTS, Verdict
from ..checking.engine import CaseResult, Selection, Stop, check_recording
from ..core.errors import TokconfError
from ..core.files import atomic_write
from ..core.outcome import Refusal
from ..implementations.llama_cpp import Limits, LlamaCppImplementation
from ..recording.decoding import Decoding, load_for
from ..recording.format import RecordedCase, Recording, load, recording_files
from ..synth.files import recorded_vocab
from .coverage import LineHits, all_hits
from .mutants import UNICODE, Mutant, Operator
from .schemata import ENVIRONMENT

THIN = 10  # a mutant killed by fewer problems than this is thin: it hangs by a thread
ANSWER_TIMEOUT = 10.0  # seconds for one batch of answers (llama.cpp takes milliseconds)
LIMIT_FACTOR, LIMIT_SLACK = 4.0, 60.0  # a mutant's time limit: this many times llama.cpp's own, plus this
# A mutant is also a hang when nothing comes from it for this long: a chunk of answers, or a vocabulary's
# facts and decoding (this many times llama.cpp's longest vocabulary among those it reaches, plus the slack).
STALL_FACTOR, STALL_SLACK = 2.0, 15.0
PR_SET_PDEATHSIG = 1  # linux/prctl.h
CHUNKED = Stop(maxfail=sys.maxsize)  # asks in chunks, so breaking out after a kill leaves the rest unasked
# The functions that read unicode-data.cpp's tables: a vocabulary reaching none of them cannot see a table mutant.
TABLE_READERS = ("unicode_cpt_flags_array", "unicode_tolower", "unicode_cpts_normalize_nfd")


class Tier(enum.IntEnum):
    """Which part of the recordings a check belongs to; each tier's score is its and the ones before."""

    LLAMA_CPP = 0  # llama.cpp's own test inputs (models/*.inp): what its test-tokenizer-0 checks
    RECORDED = 1  # the corpus and special texts, the facts and the decoding
    FUZZ = 2  # the seeded fuzz strings

    @property
    def title(self) -> str:
        return ("llama.cpp's test inputs alone", "the recordings without fuzz", "the whole recordings")[self]


def tier_of(section: str, case: str) -> Tier:
    if section in (FACTS, DECODE):
        return Tier.RECORDED
    if case.startswith("llama.cpp/"):
        return Tier.LLAMA_CPP
    return Tier.FUZZ if case.startswith("fuzz/") else Tier.RECORDED


class Status(enum.Enum):
    KILLED = "killed"  # a check failed: ids, facts or decoding differ, or it crashed where llama.cpp did not
    TIMEOUT = "timeout"  # past its time limit: it hangs where llama.cpp does not (killed, counted apart)
    SURVIVED = "survived"  # every check of every vocabulary reaching it passed
    UNREACHED = "unreached"  # no bundled vocabulary runs its code


@dataclass
class Outcome:
    """What the campaign found of one mutant (a journal line)."""

    key: str
    number: int
    status: Status
    kills: int = 0  # problems found, up to THIN (a decoding check counts each differing piece or text)
    killed_by: list[int] = field(default_factory=list)  # the first tier whose checks kill it (empty: none)
    first: str = ""  # the first problem: vocab/section/case
    how: str = ""  # failed, crash or hang (the first problem's kind)
    killers: list[str] = field(default_factory=list)  # vocab/section/case of the problems found
    vocabs: list[str] = field(default_factory=list)  # the vocabularies reaching it
    seconds: float = 0.0
    hung_in: str = ""  # a `timeout`'s: the vocabulary it was being checked on when its time ran out

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Outcome:
        return cls(**{**data, "status": Status(data["status"])})

    def killed_in(self, tier: Tier) -> bool:
        """Whether the checks of `tier` and the ones before kill it. A hang the stall limit stopped is placed by
        the problems found before it, and with none counts in the last tier alone (which input hung is not
        known); one a batch's time limit found is placed by the case it was reported on (the cases are asked
        tier by tier)."""
        if self.killed_by and self.killed_by[0] <= tier:
            return True
        return self.status is Status.TIMEOUT and tier is Tier.FUZZ


@dataclass
class Recordings:
    """The bundled recordings and decodings, loaded once, by vocabulary name."""

    recordings: dict[str, Recording]
    decodings: dict[str, Decoding | None]
    vocabs: dict[str, Path]

    @classmethod
    def load(cls, paths: list[Path]) -> Recordings:
        recordings, decodings, vocabs = {}, {}, {}
        for path in recording_files(paths):
            recording = load(path)
            name = recording.vocab_name
            recordings[name] = recording
            decodings[name] = load_for(path)
            vocabs[name] = recorded_vocab(recording.provenance["vocab"], recording.build, None)
        return cls(recordings, decodings, vocabs)


def function_lines(source: str, name: str) -> range:
    """The lines of the function `name` defined in `source` (a unicode.cpp), its head to its closing brace."""
    found = re.search(rf"^[^\n;]*\b{name}\([^)]*\)\s*\{{", source, re.M)
    if found is None:
        raise TokconfError(f"no function {name} in unicode.cpp", "the table readers moved: update TABLE_READERS")
    first = source.count("\n", 0, found.end()) + 1
    end = source.find("\n}", found.end())
    return range(first, source.count("\n", 0, end) + 3)


def changed_text(mutant: Mutant) -> frozenset[str] | None:
    """The characters whose table entry a table mutant changes: only an input holding one can see it
    (unicode_cpt_flags_from_cpt, unicode_tolower and the NFD lookup in unicode.cpp each read one code
    point's entry). None for any other mutant, and for one changing U+FFFD or a surrogate, which
    llama.cpp also reads from bytes that are not UTF-8 (unicode_cpts_from_utf8): every input may."""
    if mutant.operator is not Operator.TABLE or any(cp == 0xFFFD or 0xD800 <= cp <= 0xDFFF for cp in mutant.codepoints):
        return None
    return frozenset(map(chr, mutant.codepoints))


def ordered(recording: Recording, mutant: Mutant, learned: Counter[str]) -> Recording:
    """`recording` with the cases `mutant` is asked, in the campaign's order (the module's docstring);
    `learned`: how many earlier mutants each case killed."""
    changed = changed_text(mutant)
    kept = [
        (index, case) for index, case in enumerate(recording.cases)
        if changed is None or not changed.isdisjoint(case.data.decode("utf-8", errors="replace"))
    ]  # fmt: skip

    def rank(item: tuple[int, RecordedCase]) -> tuple[int, int, int]:
        index, case = item
        return tier_of("plain", case.id), -learned[case.id], index

    return dataclasses.replace(recording, cases=[case for _, case in sorted(kept, key=rank)])


def reaching(mutant: Mutant, hits: dict[str, LineHits], table_lines: frozenset[int]) -> list[str]:
    """The vocabularies whose coverage reached the mutant's lines (a line gcov does not count as code is
    taken by the code line before it)."""
    if mutant.operator is Operator.TABLE:
        return [name for name, hit in hits.items() if hit.lines.get(UNICODE, frozenset()) & table_lines]
    reached = []
    for name, hit in hits.items():
        code = hit.code.get(mutant.file, frozenset())
        wanted = {mutant.line} & code or {max((c for c in code if c <= mutant.line), default=mutant.line)}
        if wanted & hit.lines.get(mutant.file, frozenset()):
            reached.append(name)
    return reached


class Campaign:
    """A campaign over one schemata library's mutants, in the work folder (`work/campaign/`)."""

    def __init__(self, work: Path, build: Build, recordings: Recordings, pinned: Path,
                 hits: dict[str, LineHits] | None = None) -> None:  # fmt: skip
        """`hits`: each vocabulary's coverage (default: the coverage run's in `work`)."""
        self.work = work
        self.build = build
        self.data = recordings
        self.hits = {name: hit for name, hit in (hits or all_hits(work)).items() if name in recordings.recordings}
        missing = sorted(set(recordings.recordings) - set(self.hits))
        if missing:
            raise TokconfError(f"no coverage of {', '.join(missing[:5])}", f"tokconf strength coverage --work {work}")
        unicode = (pinned / UNICODE).read_text(encoding="utf-8")
        self.table_lines = frozenset(line for name in TABLE_READERS for line in function_lines(unicode, name))
        self.learned: dict[str, Counter[str]] = {}  # vocab -> case id -> kills seen in this process
        self.with_llama_cases = frozenset(
            name for name, recording in recordings.recordings.items()
            if any(tier_of("plain", case.id) is Tier.LLAMA_CPP for case in recording.cases)
        )  # fmt: skip
        self.baseline: dict[str, float] = {}

    # -- the baseline: mutant 0 must pass everything

    def run_baseline(self, progress: Callable[[str], None]) -> None:
        """Mutant 0 (the library unchanged) over every vocabulary: each must pass, and its seconds set the
        time limits. Kept in `campaign/baseline.json`."""
        path = self.work / "campaign" / "baseline.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        with (path.parent / "baseline.lock").open("a") as lock:  # shards started together: one runs it
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not path.is_file():
                self._baseline(path, progress)
        self.baseline = json.loads(path.read_text(encoding="utf-8"))

    def _baseline(self, path: Path, progress: Callable[[str], None]) -> None:
        os.environ[ENVIRONMENT] = "0"
        impl = self._implementation()
        baseline: dict[str, float] = {}
        for name in sorted(self.data.recordings):
            started = time.monotonic()
            problems = [r for r in self._check(impl, name, None) if r.verdict.is_problem]
            if problems:
                first = problems[0]
                raise TokconfError(
                    f"the schemata library with no mutant fails {name}: {first.section} {first.case}: {first.reason}",
                    "the schemata changed llama.cpp: report it",
                )
            baseline[name] = round(time.monotonic() - started, 3)
            progress(f"baseline {name}: {baseline[name]:.1f} s")
        atomic_write(path, json.dumps(baseline, indent=1, sort_keys=True))

    def _implementation(self) -> LlamaCppImplementation:
        return LlamaCppImplementation(self.build, "schemata", limits=Limits(timeout=ANSWER_TIMEOUT))

    def _check(self, impl: LlamaCppImplementation, name: str, recording: Recording | None) -> Iterator[CaseResult]:
        return check_recording(recording or self.data.recordings[name], impl, self.data.vocabs[name], Selection(),
                               None, self.data.decodings[name], CHUNKED)  # fmt: skip

    # -- one mutant

    def ordered(self, name: str, mutant: Mutant) -> Recording:
        return ordered(self.data.recordings[name], mutant, self.learned.get(name, Counter()))

    def run_mutant(self, number: int, mutant: Mutant, report: Callable[[dict[str, Any]], None]) -> Outcome:
        """Check one mutant (in this process: `run` forks one for it), `report`ing each problem found."""
        started = time.monotonic()
        vocabs = reaching(mutant, self.hits, self.table_lines)
        outcome = Outcome(mutant.key, number, Status.SURVIVED, vocabs=vocabs)
        if not vocabs:
            outcome.status = Status.UNREACHED
            return outcome
        os.environ[ENVIRONMENT] = str(number)
        impl = self._implementation()
        first_kill: Tier | None = None

        def needed(tier: Tier) -> bool:
            return outcome.kills < THIN or first_kill is None or first_kill > tier

        # the vocabularies with llama.cpp's own inputs first: a kill there settles every tier at once
        def first(vocab: str) -> tuple[bool, float, int]:  # then the quickest: most mutants die in any of them
            learned = sum(self.learned.get(vocab, Counter()).values())
            return vocab not in self.with_llama_cases, self.baseline.get(vocab, 0.0), -learned

        order = sorted(vocabs, key=first)
        for name in order:
            if not needed(Tier.LLAMA_CPP) or outcome.status is Status.TIMEOUT:
                break
            if not needed(Tier.RECORDED) and name not in self.with_llama_cases:
                continue
            results = self._check(impl, name, self.ordered(name, mutant))
            report({"vocab": name})
            try:
                for index, result in enumerate(results):
                    if index % 256 == 0:
                        report({"tick": index})
                    tier = tier_of(result.section, result.case)
                    if not needed(tier):
                        break
                    if not result.verdict.is_problem:
                        continue
                    where, how = f"{name}/{result.section}/{result.case}", _how(result)
                    outcome.kills += max(1, result.differing)
                    if len(outcome.killers) < THIN:
                        outcome.killers.append(where)
                    if first_kill is None or tier < first_kill:
                        first_kill = tier
                    if not outcome.first:
                        outcome.first, outcome.how = where, how
                    report({"kill": where, "tier": int(tier), "how": how})
                    if how == "hang":  # settled (the module's docstring): a hang, in this vocabulary
                        outcome.status, outcome.hung_in = Status.TIMEOUT, name
                        break
            finally:
                with contextlib.suppress(Exception):
                    results.close()  # type: ignore[attr-defined]
        if first_kill is not None:
            if outcome.status is not Status.TIMEOUT:
                outcome.status = Status.KILLED
            outcome.killed_by = [int(first_kill)]
            outcome.kills = min(outcome.kills, THIN)
        outcome.seconds = round(time.monotonic() - started, 3)
        return outcome

    def limit(self, vocabs: list[str]) -> float:
        return LIMIT_FACTOR * sum(self.baseline.get(v, 10.0) for v in vocabs) + LIMIT_SLACK

    def stall(self, vocabs: list[str]) -> float:
        """How long a mutant may go unheard while checking any of `vocabs`: before it names the vocabulary it
        checks, the slowest of those reaching it; after, that one's (a hang in a quick vocabulary is then
        told in seconds, not in the time the slowest would take: 43 hangs cost 3,228 s of one campaign)."""
        return STALL_FACTOR * max((self.baseline.get(v, 10.0) for v in vocabs), default=0.0) + STALL_SLACK

    # -- the campaign

    def run(self, chosen: list[tuple[int, Mutant]], journal: Path, progress: Callable[[str], None]) -> list[Outcome]:
        """Every chosen mutant not in a journal of the folder yet, each in a forked process under its time limit,
        its outcome appended to `journal`."""
        # every journal beside this one: a mutant another shard (or an earlier split) checked is not run again
        done = {o.key: o for path in sorted(journal.parent.glob("journal-*.jsonl")) for o in read_journal(path)}
        done.update((o.key, o) for o in read_journal(journal))
        for outcome in done.values():
            self._learn(outcome)
        journal.parent.mkdir(parents=True, exist_ok=True)
        if journal.is_file() and not journal.read_bytes().endswith(b"\n") and journal.stat().st_size:
            with journal.open("a", encoding="utf-8") as handle:  # a line a kill cut short stays alone, dropped
                handle.write("\n")
        for index, (number, mutant) in enumerate(chosen, 1):
            if mutant.key in done:
                continue
            outcome = self._forked(number, mutant)
            self._learn(outcome)
            with journal.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(outcome.to_json()) + "\n")
            done[mutant.key] = outcome
            progress(f"[{index}/{len(chosen)}] {mutant.key}: {outcome.status.value}"
                     f"{f' in {outcome.hung_in}' if outcome.hung_in else ''}"
                     f"{f' ({outcome.kills} problems, first {outcome.first})' if outcome.kills else ''}"
                     f" {outcome.seconds:.1f} s")  # fmt: skip
        return [done[m.key] for _, m in chosen]

    def _learn(self, outcome: Outcome) -> None:
        """Cases that killed a mutant go first for the next ones (vocab names hold no `/`)."""
        for where in outcome.killers:
            vocab, _, case = where.split("/", 2)
            self.learned.setdefault(vocab, Counter())[case] += 1

    def _forked(self, number: int, mutant: Mutant) -> Outcome:
        """Run the mutant in a forked child (its own process group, so its workers go with it), reading its
        problems as they come; past the time limit it is killed and the mutant is a `timeout`."""
        vocabs = reaching(mutant, self.hits, self.table_lines)
        limit, stall = self.limit(vocabs), self.stall(vocabs)
        read, write = os.pipe()
        started = time.monotonic()
        child = os.fork()
        if child == 0:
            os.close(read)
            os.setpgid(0, 0)
            # dies with the campaign (Linux's PR_SET_PDEATHSIG): a killed campaign leaves no mutant running
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            out = os.fdopen(write, "w")

            def report(line: dict[str, Any]) -> None:
                out.write(json.dumps(line) + "\n")
                out.flush()

            try:
                report({"done": self.run_mutant(number, mutant, report).to_json()})
            except BaseException as error:
                report({"broke": f"{type(error).__name__}: {error}"})
            finally:
                out.close()
                os._exit(0)
        os.close(write)
        lines: list[dict[str, Any]] = []
        buffer = b""
        checking = ""  # the vocabulary the child said it checks
        with os.fdopen(read, "rb") as pipe:
            heard = started
            while True:
                now = time.monotonic()
                left = min(limit - (now - started), stall - (now - heard))
                ready, _, _ = select.select([pipe], [], [], max(0.0, left))
                if not ready:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(child, signal.SIGKILL)
                    break
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    break
                heard = time.monotonic()
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                heard_now = [json.loads(line) for line in complete if line]
                lines += heard_now
                for line in heard_now:
                    if "vocab" in line:
                        checking = line["vocab"]
                        stall = self.stall([checking])
        os.waitpid(child, 0)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child, signal.SIGKILL)  # workers the child left behind
        for line in lines:
            if "done" in line:
                return Outcome.from_json(line["done"])
            if "broke" in line:
                raise TokconfError(f"checking mutant {mutant.key} broke: {line['broke']}", "report it")
        kills = [line for line in lines if "kill" in line]
        return Outcome(
            mutant.key, number, Status.TIMEOUT, kills=min(len(kills), THIN),
            killed_by=[min(k["tier"] for k in kills)] if kills else [], first=kills[0]["kill"] if kills else "",
            how="hang", killers=[k["kill"] for k in kills[:THIN]], vocabs=vocabs,
            seconds=round(time.monotonic() - started, 3), hung_in=checking,
        )  # fmt: skip


def _how(result: CaseResult) -> str:
    actual = result.actual
    if isinstance(actual, Refusal):
        return "hang" if actual.reason.startswith("hang") else "crash"
    return "error" if result.verdict is Verdict.ERROR else "failed"


def read_journal(path: Path) -> list[Outcome]:
    """The outcomes a journal holds (a line cut short by a kill is dropped: that mutant runs again)."""
    if not path.is_file():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError, TypeError, KeyError):
            found.append(Outcome.from_json(json.loads(line)))
    return found


# -- choosing the mutants

MODELS = (("plamo2", "plamo-2"), ("hybriddna", "hybriddna"), ("whitespace", "whitespace"), ("spm", "spm"),
          ("bpe", "bpe"), ("wpm", "wpm"), ("ugm", "ugm"), ("xcda", "ugm"), ("rwkv", "rwkv"))  # fmt: skip


def region(mutant: Mutant) -> str:
    """The part of the tokenizer a mutant is in: a tokenizer model's own code (by the struct its
    function belongs to), `unicode`, `tables`, or `shared` (loading, special tokens, (de)tokenize)."""
    if mutant.operator is Operator.TABLE:
        return "tables"
    if mutant.operator is Operator.PATTERN:
        return "bpe"
    if mutant.file == UNICODE:
        return "unicode"
    owner = mutant.function.split("::")[0].lower()
    return next((model for word, model in MODELS if word in owner), "shared")


def sample(mutants: dict[int, Mutant], size: int | None) -> list[tuple[int, Mutant]]:
    """`size` mutants (all when None), the same every time: round-robin over regions, each region's
    mutants in the order of the sha256 of their keys, so every region is represented."""
    items = sorted(mutants.items())
    if size is None or size >= len(items):
        return items
    groups: dict[str, list[tuple[int, Mutant]]] = {}
    for number, mutant in items:
        groups.setdefault(region(mutant), []).append((number, mutant))
    for members in groups.values():
        members.sort(key=lambda item: hashlib.sha256(item[1].key.encode()).hexdigest())
    chosen: list[tuple[int, Mutant]] = []
    while len(chosen) < size:
        for name in sorted(groups):
            if groups[name] and len(chosen) < size:
                chosen.append(groups[name].pop(0))
    return sorted(chosen)


def run_order(mutants: dict[int, Mutant]) -> list[tuple[int, Mutant]]:
    """The order a campaign checks its mutants in: by the sha256 of their keys, so one stopped early (or a
    shard) has checked an even sample of every region, file and operator, the same every time."""
    return sorted(mutants.items(), key=lambda item: hashlib.sha256(item[1].key.encode()).hexdigest())


def shard(chosen: list[tuple[int, Mutant]], index: int, count: int) -> list[tuple[int, Mutant]]:
    """Shard `index` of `count` (from 1): every count-th mutant from the index-th."""
    if not 1 <= index <= count:
        raise TokconfError(f"--shard {index}/{count}: no such shard", "give i/n with 1 <= i <= n")
    return chosen[index - 1 :: count]


def journal_path(work: Path, index: int, count: int) -> Path:
    return work / "campaign" / f"journal-{index}-of-{count}.jsonl"
