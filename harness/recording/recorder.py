"""`tokconf record`: drive the pinned llama.cpp over the corpus, llama.cpp's tests, the vocab's special
tokens and seeded fuzz, in every mode, and write one recording per vocabulary; then its decoding
(`tokconf.recording.decoding_recorder`). Progress is journaled (`tokconf.recording.journal`), so an interrupted
run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path

from .. import __version__
from ..builds.build import Build
from ..builds.vocabs import vocab_name
from ..core.errors import TokconfError
from ..core.facts import (
    CorpusSample,
    FuzzProvenance,
    LlamaCppProvenance,
    Provenance,
    SynthProvenance,
    VocabFacts,
    VocabProvenance,
    refused_facts,
)
from ..core.files import sha256_file
from ..core.outcome import LOAD, MODES, Refusal
from ..corpus.files import Case, CorpusFile
from ..corpus.generator import GENERATOR_VERSION, fuzz_strings
from ..corpus.upstream import upstream_cases
from ..corpus.vocab_cases import vocab_cases
from ..oracles.libllama_client import LibllamaOracle, VocabRefused
from ..oracles.probe import LibraryInfo
from ..synth.files import synth_provenance
from ..synth.recipes import BY_NAME
from .decoding_recorder import record_decoding
from .format import RecordedCase, Recording, write
from .journal import Journal

JOURNAL_CHUNK = 512  # cases asked for (in every mode), and journaled, at a time


@dataclass(frozen=True)
class Plan:
    """Everything that decides a recording's content, shared by all vocabs of one run."""

    build: Build
    corpus: tuple[CorpusFile, ...]
    seed: int
    fuzz_count: int
    out_dir: Path
    decoding: bool = True  # also write each recording's decoding (record_decoding)
    sample: CorpusSample | None = None  # a fixed sample of the corpus (synthetic vocabs), else all of it
    library: LibraryInfo | None = None  # a local llama.cpp's own word on itself (tokconf.oracles.probe)


class LocalLlamaCppProvenance(LlamaCppProvenance):
    """`provenance.llama_cpp` of a recording made with a llama.cpp of the user's own (`record --llama`):
    exactly which library answered (docs/recording-format.md). `sha256` is the library's, `commit`
    its checkout's HEAD."""

    dirty: bool | None
    content: str | None
    library: str
    header: str
    version: str | None
    build_info: str | None
    system_info: str | None


def llama_cpp_provenance(build: Build, library: LibraryInfo | None) -> LlamaCppProvenance:
    """`provenance.llama_cpp`: the build's source, and for a local llama.cpp what identifies it."""
    source = build.source
    origin: LlamaCppProvenance = {
        "build": build.build,
        "source": source.kind,
        "origin": source.origin,
        "sha256": source.sha256,
        "commit": source.commit,
    }
    if not source.is_local:
        return origin
    if library is None or source.library is None or source.header is None:  # a caller's mistake, never a user's
        raise ValueError(f"the local llama.cpp {source.origin} was not probed (Plan.library): no provenance")
    local: LocalLlamaCppProvenance = {
        **origin,
        "dirty": source.dirty,
        "content": source.content,
        "library": source.library,
        "header": source.header,
        "version": library.version,
        "build_info": library.build_info,
        "system_info": library.system_info,
    }
    return local


def provenance(
    plan: Plan, vocab: Path, vocab_sha: str, facts: VocabFacts, synthetic: SynthProvenance | None
) -> Provenance:
    """Where a recording's answers came from: the build, the vocab file (and the recipe that made a
    synthetic one), the inputs' sources."""
    inp = vocab.with_name(vocab.name + ".inp")
    fuzz: FuzzProvenance = {"seed": plan.seed, "generator": GENERATOR_VERSION, "count": plan.fuzz_count}
    vocab_provenance: VocabProvenance = {
        "name": vocab_name(vocab),
        "file": vocab.name,
        "sha256": vocab_sha,
        "model": facts["model"],
        "pre": facts["pre"],
    }
    if synthetic is not None:
        vocab_provenance["synthetic"] = synthetic
    origin: Provenance = {
        "llama_cpp": llama_cpp_provenance(plan.build, plan.library),
        "backend": "libllama (vocab_only, in a crash-isolated worker)",
        "vocab": vocab_provenance,
        "corpus": {f.path.name: f.sha256 for f in plan.corpus},
        "upstream_tests": {inp.name: sha256_file(inp)} if inp.is_file() else {},
        "fuzz": fuzz,
        "harness": __version__,
        "modes": {m: {"add_special": a, "parse_special": p} for m, (a, p) in MODES.items()},
    }
    if plan.sample is not None:
        origin["corpus_sample"] = plan.sample
    return origin


def all_cases(plan: Plan, vocab: Path, facts: VocabFacts) -> list[Case]:
    """Corpus, llama.cpp's tests, the vocab's own special-token cases, then fuzz: in that order."""
    cases = [case for corpus_file in plan.corpus for case in _sampled(corpus_file.cases, plan.sample)]
    cases += upstream_cases(vocab)
    cases += vocab_cases(facts)
    cases += _fuzz_cases(plan.seed, plan.fuzz_count)
    return cases


@cache
def _fuzz_cases(seed: int, count: int) -> tuple[Case, ...]:
    """The fuzz cases, made once per process: every vocab of a run has the same (2,000 take 0.3 s)."""
    return tuple(Case(f"fuzz/{i:04d}", data) for i, data in enumerate(fuzz_strings(seed, count)))


def _sampled(cases: Sequence[Case], sample: CorpusSample | None) -> list[Case]:
    if sample is None:
        return list(cases)
    return [case for case in cases if len(case.data) <= sample["max_bytes"]][:: sample["every"]]


def record_vocab(plan: Plan, vocab: Path) -> Path:
    """Record one vocabulary into `<out_dir>/<name>.yaml`; resumes from its journal if one is there."""
    _require_writable(plan.out_dir)
    if not vocab.is_file():
        raise TokconfError(f"vocab file {vocab} does not exist", "`tokconf llama info` lists the shipped vocabs")
    name = vocab_name(vocab)
    out = plan.out_dir / f"{name}.yaml"
    started = time.monotonic()
    vocab_sha = sha256_file(vocab)
    synthetic = synth_provenance(vocab, vocab_sha)
    try:
        oracle = LibllamaOracle(plan.build, vocab)
    except VocabRefused as load_error:
        return _record_refusal(plan, vocab, vocab_sha, synthetic, load_error.reason, out)
    with oracle:
        facts = oracle.facts()
        origin = provenance(plan, vocab, vocab_sha, facts, synthetic)
        cases = all_cases(plan, vocab, facts)
        key_source = json.dumps([origin, [c.id for c in cases]], sort_keys=True)
        key = hashlib.sha256(key_source.encode() + b"".join(c.data for c in cases)).hexdigest()
        journal = Journal(plan.out_dir / f".{name}.journal", key)
        resumed = len(journal.done)
        try:
            pending = [i for i in range(len(cases)) if i not in journal.done]
            for start in range(0, len(pending), JOURNAL_CHUNK):
                chunk = pending[start : start + JOURNAL_CHUNK]
                requests = [(cases[i].data, *MODES[m]) for i in chunk for m in MODES]
                answers = iter(oracle.tokenize_many(requests))
                journal.add([(i, {m: next(answers) for m in MODES}) for i in chunk])
        except BaseException:
            journal.close()
            raise
        recorded = [RecordedCase(case.id, case.data, journal.done[i], case.why) for i, case in enumerate(cases)]
        crashes, restarts = oracle.crashes, oracle.restarts
    recording = Recording(origin, facts, recorded)
    write(out, recording)
    journal.finish()
    if plan.decoding and (synthetic is None or BY_NAME[synthetic["recipe"]].decoding):
        record_decoding(out, recording, vocab.parent, plan.build)
    refused = sum(isinstance(o, Refusal) for c in recorded for o in c.outcomes.values())
    seconds = time.monotonic() - started
    note = f", {resumed} cases resumed from the journal" if resumed else ""
    print(
        f"{name}: {len(recorded)} cases x {len(MODES)} modes in {seconds:.1f} s "
        f"({refused} refusals, {crashes} crashes, {restarts} worker restarts{note}) -> {out}",
        file=sys.stderr,
        flush=True,
    )
    return out


def _record_refusal(
    plan: Plan, vocab: Path, vocab_sha: str, synthetic: SynthProvenance | None, reason: str, out: Path
) -> Path:
    """A vocabulary llama.cpp refuses to load, recorded as that refusal: every case, every mode."""
    facts = refused_facts(reason)
    refusal = Refusal(f"{LOAD}{reason}")
    cases = all_cases(plan, vocab, facts)
    recorded = [RecordedCase(case.id, case.data, dict.fromkeys(MODES, refusal), case.why) for case in cases]
    write(out, Recording(provenance(plan, vocab, vocab_sha, facts, synthetic), facts, recorded))
    label = plan.build.source.label()
    print(f"{vocab_name(vocab)}: llama.cpp {label} refuses to load it ({reason}) -> {out}", file=sys.stderr)
    return out


def _require_writable(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / ".tokconf-write-test"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise TokconfError(f"output folder {folder} is not writable: {error.strerror}", "pass --out") from None


def record(plan: Plan, vocabs: list[Path], jobs: int) -> list[Path]:
    """Record several vocabularies, `jobs` at a time (one recorder process and one worker each)."""
    _require_writable(plan.out_dir)
    return in_parallel(partial(record_vocab, plan), vocabs, jobs)


def in_parallel(work: Callable[[Path], Path], items: list[Path], jobs: int) -> list[Path]:
    """`work` on each item, `jobs` processes at a time (each with its own llama.cpp worker)."""
    if jobs <= 1 or len(items) <= 1:
        return [work(item) for item in items]
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(work, items))
