"""`tokconf record --backend cli --sample K`: the two oracle backends must agree.

The default backend calls llama_tokenize through cffi in a worker; `llama-tokenize` is llama.cpp's
own program around the same function (via common_tokenize). A sample of K cases per vocab, in every
mode llama-tokenize can express, is run through both; any difference is a bug in our binding, our
framing or our flags, and is reported case by case.

`--save FILE` keeps llama-tokenize's answers (`Evidence`, JSON): what the program said, with the
build and the vocab files it said it for. The bundled recordings come with theirs
(`recordings/b11192/llama-tokenize.crosscheck.json`): the tests compare the live worker with it on
every shipped vocab, and reproduce it live on two, since llama-tokenize reloads the vocabulary for
every input (gemma-4 takes 1.3 s an input, 15 s for its sample).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from ..builds.build import Build
from ..builds.vocabs import vocab_name
from ..core.errors import TokconfError
from ..core.files import atomic_write, sha256_file
from ..core.outcome import MODES, Mode, Outcome, Refusal, RefusalKind, outcome_fields, outcome_from_fields
from ..corpus.files import Case
from ..corpus.generator import SplitMix64
from ..oracles.libllama_client import LibllamaOracle
from ..oracles.llama_tokenize import CliOracle
from .recorder import Plan, all_cases

SCHEMA = "tokconf-crosscheck/1"


@dataclass(frozen=True)
class Disagreement:
    vocab: str
    case: str
    mode: Mode
    libllama: Outcome
    cli: Outcome


@dataclass(frozen=True)
class Answer:
    """llama-tokenize's answer to one sampled case in one mode."""

    case: str
    mode: Mode
    outcome: Outcome


@dataclass(frozen=True)
class CrossCheck:
    """One vocab's cross-check: every answer llama-tokenize gave, and where the worker differs."""

    vocab: Path
    answers: list[Answer]
    disagreements: list[Disagreement]


@dataclass(frozen=True)
class VocabAnswers:
    file: str
    sha256: str
    answers: list[Answer]


@dataclass(frozen=True)
class Evidence:
    """A saved cross-check: llama-tokenize's answers at one build, for K sampled cases per vocab."""

    build: int
    build_sha256: str
    sample: int
    seed: int
    vocabs: dict[str, VocabAnswers]


def sample(cases: list[Case], k: int, seed: int) -> list[Case]:
    """K distinct cases spread deterministically over the list, always including the first (a draw
    that repeats one is drawn again: falcon's sample once held 3)."""
    rng = SplitMix64(seed)
    picked = {0}
    while len(picked) < min(k, len(cases)):
        picked.add(rng.below(len(cases)))
    return [cases[i] for i in sorted(picked)]


def _same(a: Outcome, b: Outcome) -> bool:
    """Two backends agree: the same ids, or both refused (their reasons are each process's own words).
    A BROKEN answer (a hang, an answer over the bound) is no refusal of llama.cpp's: it agrees with nothing."""
    if isinstance(a, Refusal) or isinstance(b, Refusal):
        refused = isinstance(a, Refusal) and isinstance(b, Refusal)
        return refused and RefusalKind.BROKEN not in (a.kind, b.kind)  # type: ignore[union-attr]
    return a == b


def compare(vocab: str, answers: list[Answer], libllama: list[Outcome]) -> list[Disagreement]:
    """Where the worker's outcomes differ from llama-tokenize's answers to the same requests (two
    refusals agree: the programs word an abort differently)."""
    return [
        Disagreement(vocab, answer.case, answer.mode, want, answer.outcome)
        for answer, want in zip(answers, libllama, strict=True)
        if not _same(want, answer.outcome)
    ]


def crosscheck_vocab(plan: Plan, build: Build, vocab: Path, k: int, worker: LibllamaOracle | None = None) -> CrossCheck:
    """Compare the backends on K sampled cases of one vocab. `worker`: the vocab's libllama worker
    when the caller has one open (a large vocab takes a second to load), else one is started."""
    with nullcontext(worker) if worker is not None else LibllamaOracle(build, vocab) as oracle:
        facts = oracle.facts()
        cases = sample(all_cases(plan, vocab, facts), k, plan.seed)
        cli = CliOracle(build, vocab, add_bos=facts["add_bos"])
        asked = [(case, mode) for case in cases for mode in MODES if cli.expresses(*MODES[mode])]
        expected = oracle.tokenize_many([(case.data, *MODES[mode]) for case, mode in asked])
    # One llama-tokenize process per input, most of it loading the vocab: run them side by side.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        actual = list(pool.map(lambda pair: cli.tokenize(pair[0].data, *MODES[pair[1]]), asked))
    answers = [Answer(case.id, mode, got) for (case, mode), got in zip(asked, actual, strict=True)]
    return CrossCheck(vocab, answers, compare(vocab_name(vocab), answers, expected))


def save(path: Path, build: Build, k: int, seed: int, checks: list[CrossCheck]) -> None:
    """Write llama-tokenize's answers as `Evidence`: JSON, one answer a line (ids as a list, a
    refusal as {"error": reason}), so a re-run's diff shows the answers that changed."""
    head = {
        "schema": SCHEMA,
        "program": "llama-tokenize",
        "llama_cpp": {"build": build.build, "sha256": build.source.sha256},
        "sample": k,
        "seed": seed,
    }
    vocabs = []
    for check in checks:
        answers = ",\n".join(
            "   " + json.dumps({"case": a.case, "mode": a.mode, **outcome_fields(a.outcome)}, ensure_ascii=False)
            for a in check.answers
        )
        where = json.dumps({"file": check.vocab.name, "sha256": sha256_file(check.vocab)})[1:-1]
        vocabs.append(f'  {json.dumps(vocab_name(check.vocab))}: {{{where}, "answers": [\n{answers}\n  ]}}')
    text = json.dumps(head, ensure_ascii=False)[:-1] + ', "vocabs": {\n' + ",\n".join(vocabs) + "\n}}\n"
    again = _evidence(path, text)  # read back before anything is replaced, as a recording is
    if [again.vocabs[vocab_name(check.vocab)].answers for check in checks] != [check.answers for check in checks]:
        raise TokconfError(f"{path}: the answers do not read back identically; nothing was written")
    atomic_write(path, text, "cross-check answers")


def load_evidence(path: Path) -> Evidence:
    """A saved cross-check, every field checked: a damaged file is refused with its path."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TokconfError(f"{path}: cannot read: {error.strerror}", "give the file --save wrote") from None
    return _evidence(path, text)


def _evidence(path: Path, text: str) -> Evidence:
    try:
        document = json.loads(text)
        if document["schema"] != SCHEMA:
            raise ValueError(f"schema {document['schema']!r}, not {SCHEMA!r}")
        vocabs = {name: _vocab_answers(node) for name, node in document["vocabs"].items()}
        build = document["llama_cpp"]
        evidence = Evidence(build["build"], build["sha256"], document["sample"], document["seed"], vocabs)
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise TokconfError(
            f"{path}: not a tokconf cross-check file ({type(error).__name__}: {error})",
            "restore it from git or write it again with `tokconf record --backend cli --save FILE`",
        ) from None
    if not all(isinstance(v, int) for v in (evidence.build, evidence.sample, evidence.seed)):
        raise TokconfError(f"{path}: build, sample and seed must be integers", "restore it from git")
    return evidence


def _vocab_answers(node: dict[str, Any]) -> VocabAnswers:
    answers = []
    for item in node["answers"]:
        if item["mode"] not in get_args(Mode):
            raise ValueError(f"unknown mode {item['mode']!r}")
        try:
            outcome = outcome_from_fields(item)
        except ValueError as error:
            raise ValueError(f"case {item['case']!r}: {error}") from None
        answers.append(Answer(str(item["case"]), item["mode"], outcome))
    return VocabAnswers(str(node["file"]), str(node["sha256"]), answers)
