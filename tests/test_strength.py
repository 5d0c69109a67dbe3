"""Mutation testing of the recordings (tokconf.strength): the mutator on a small C++ file (each operator),
its schemata compiled and switched at run time, and, against the pinned build, a killable mutant killed,
an equivalent one surviving, a campaign's shards merging into the unsharded run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import ClassVar

import pytest
from tokconf.core.errors import TokconfError
from tokconf.strength.campaign import THIN, Campaign, Recordings, Status, Tier, journal_path, shard
from tokconf.strength.coverage import LineHits, tree_library
from tokconf.strength.mutants import (
    UNICODE,
    UNICODE_DATA,
    VOCAB,
    Operator,
    _pattern_changes,
    syntax_mutants,
    table_mutants,
)
from tokconf.strength.report import merged, summary
from tokconf.strength.schemata import ENVIRONMENT, build_schemata, schemata_text, write_files

HERE = Path(__file__).parent
SMALL = HERE / "strength" / "small.cpp"


@pytest.fixture
def small_tree(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    shutil.copyfile(SMALL, tmp_path / "src" / "small.cpp")
    return tmp_path


def test_each_syntax_operator_makes_its_mutants_of_a_small_file(small_tree: Path) -> None:
    found = {m.key: m for m in syntax_mutants(small_tree, "src/small.cpp")}
    expected = {
        "small.cpp:6:23:relational:<-><=": "i <= n",
        "small.cpp:10:23:relational:>->>=": "values[i] >= 100",
        "small.cpp:7:44:relational:!=->==": "values[i] == 0",
        "small.cpp:6:28:arithmetic:++->--": "--i",
        "small.cpp:8:19:arithmetic:+=->-=": "found -= 1",
        "small.cpp:18:14:arithmetic:%->/": "v / 2",
        "small.cpp:7:31:logical:&&->||": "values[i] < limit || values[i] != 0",
        "small.cpp:7:13:negate:not": "!(values[i] < limit && values[i] != 0)",
        "small.cpp:10:25:constant:100->101": "101",
        "small.cpp:10:25:constant:100->99": "99",
        "small.cpp:24:30:constant:true->false": "false",
        "small.cpp:8:13:delete:statement": "",
        "small.cpp:11:13:delete:break": "",
        "small.cpp:18:12:return:negated": "!(v % 2 == 0)",
        "small.cpp:14:12:return:->0": "0",
    }
    assert {key: found[key].mutated for key in expected if key in found} == expected
    assert {m.operator for m in found.values()} == set(Operator) - {Operator.PATTERN, Operator.TABLE}
    # the literals of an array's initialiser and the arid printf line have none
    assert not [k for k in found if k.startswith(("small.cpp:28:", "small.cpp:29:"))]
    assert found["small.cpp:11:13:delete:break"].diff(SMALL.read_bytes()).count("\n-") == 1


def test_a_pattern_loses_each_top_level_alternative_and_moves_each_bound() -> None:
    body = r"'s|[|x]|\\p{N}{1,3}|(a|b)|\\|"
    changes = dict(_pattern_changes(body))
    assert changes == {
        "drop-alternative-1": r"[|x]|\\p{N}{1,3}|(a|b)|\\|",
        "drop-alternative-2": r"'s|\\p{N}{1,3}|(a|b)|\\|",
        "drop-alternative-3": r"'s|[|x]|(a|b)|\\|",
        "drop-alternative-4": r"'s|[|x]|\\p{N}{1,3}|\\|",
        "drop-alternative-5": r"'s|[|x]|\\p{N}{1,3}|(a|b)",
        "bound-1-1": r"'s|[|x]|\\p{N}{1,2}|(a|b)|\\|",
        "bound-1+1": r"'s|[|x]|\\p{N}{1,4}|(a|b)|\\|",
    }


def test_table_mutants_change_one_entry_each(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / UNICODE_DATA).write_text(
        "const std::initializer_list<std::pair<uint32_t, uint16_t>> unicode_ranges_flags = {  // start, flags\n"
        "{0x000000, 0x0080},\n{0x000020, 0x0008},\n{0x000021, 0x0020},\n{0x000030, 0x0002},\n{0x110000, 0x0001},\n};\n"
        "const std::unordered_set<uint32_t> unicode_set_whitespace = {\n0x000009,\n0x000020,\n};\n"
        "const std::initializer_list<std::pair<uint32_t, uint32_t>> unicode_map_lowercase = {\n"
        "{0x000041, 0x000061},\n};\n"
        "const std::initializer_list<range_nfd> unicode_ranges_nfd = {  // start, last, nfd\n"
        "{0x0000C0, 0x0000C5, 0x000041},\n};\n",
        encoding="utf-8",
    )
    found = {m.key.split(":", 4)[-1]: m for m in table_mutants(tmp_path, sample=8)}
    source = (tmp_path / UNICODE_DATA).read_bytes()
    changed = {what: m.applied(source).decode().splitlines()[m.line - 1] for what, m in found.items()}
    assert changed == {
        # {0x000020, 0x0008} covers one code point: moving its start would erase it, so it is left alone
        "unicode_ranges_flags:start+1:0x000000": "{0x000001, 0x0080},",
        "unicode_ranges_flags:start+1:0x000021": "{0x000022, 0x0020},",
        "unicode_ranges_flags:start+1:0x000030": "{0x000031, 0x0002},",
        "unicode_set_whitespace:drop:0x000020": "0x000009,",
        "unicode_map_lowercase:identity:0x000041": "{0x000041, 0x000041},",
        "unicode_ranges_nfd:identity:0x0000C0": "{0x0000C0, 0x0000C5, 0x0000C0},",
    }
    assert found["unicode_ranges_nfd:identity:0x0000C0"].codepoints == tuple(range(0xC0, 0xC6))


def _syntax(path: Path) -> str | None:
    done = subprocess.run(["g++", "-std=gnu++17", "-fsyntax-only", "-fdiagnostics-column-unit=byte", str(path)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return None if done.returncode == 0 else done.stderr


def test_schemata_compile_drop_what_cannot_compile_and_switch_at_run_time(small_tree: Path, tmp_path: Path) -> None:
    mutants = syntax_mutants(small_tree, "src/small.cpp")
    numbered = list(enumerate(mutants, 1))
    out = tmp_path / "out"
    (out / "src").mkdir(parents=True)
    stillborn = write_files(small_tree, out, numbered, _syntax)
    # `constexpr int width = 3`: chosen at run time, the constant is no constant
    assert sorted(stillborn) == ["small.cpp:22:27:constant:3->2", "small.cpp:22:27:constant:3->4"]
    text = (out / "src" / "small.cpp").read_text(encoding="utf-8")
    original = SMALL.read_text(encoding="utf-8").splitlines()
    body = text.split("#line 1\n", 1)[1].splitlines()
    assert len(body) == len(original)  # every line keeps its number
    program = tmp_path / "small"
    subprocess.run(["g++", "-std=gnu++17", "-O0", str(out / "src" / "small.cpp"), "-o", str(program)], check=True)
    number = {m.key: n for n, m in numbered}

    def run(key: str | None) -> str:
        env = {**os.environ, ENVIRONMENT: str(number[key] if key else 0)}
        return subprocess.run([str(program)], env=env, capture_output=True, text=True, timeout=30, check=True).stdout

    assert run(None) == "2 1 4\n"
    assert run("small.cpp:11:13:delete:break") == "3 1 4\n"  # the 3 after 200 is counted
    assert run("small.cpp:7:44:relational:!=->==") == "1 1 4\n"
    assert run("small.cpp:8:13:delete:statement") == "0 1 4\n"
    assert run("small.cpp:18:12:return:negated") == "2 0 4\n"
    assert run("small.cpp:24:30:constant:true->false") == "2 1 3\n"
    assert run("small.cpp:7:23:relational:<-><=") == "2 1 4\n"  # no 6 among the values: this input cannot see it


def test_crossing_spans_are_dropped_and_nested_ones_kept(small_tree: Path) -> None:
    mutants = syntax_mutants(small_tree, "src/small.cpp")
    source = SMALL.read_bytes()
    text, _, crossing = schemata_text(source, list(enumerate(mutants, 1)))
    assert crossing == []
    assert text.count(b"TOKCONF_M(") == len(mutants) + 1  # each once, and the macro's definition


# --- against the pinned build: a schemata library of a few mutants, checked on gpt-2 ------------------------

KILLABLE = "llama-vocab.cpp:267:67:relational:>-><"  # llm_bigram_bpe::comparator's tie-break (docs/llama-local.md)
EQUIVALENT = "llama-vocab.cpp:683:39:relational:>=->>"  # right_symbol.next is never 0: symbol 0 is the first
PLAMO_ONLY = "llama-vocab.cpp:1553:27:relational:<->>"  # plamo2's encoder


@pytest.fixture(scope="module")
def few(llama_build: object, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    from tokconf.builds.fetch import source_dir
    from tokconf.strength.campaign import sample
    from tokconf.strength.mutants import all_mutants

    pinned = source_dir(11192)
    every = dict(enumerate(all_mutants(pinned), 1))
    wanted = {KILLABLE, EQUIVALENT, PLAMO_ONLY}
    chosen = [(n, m) for n, m in sample(every, None) if m.key in wanted]
    assert {m.key for _, m in chosen} == wanted
    work = tmp_path_factory.mktemp("strength")
    schemata = build_schemata(pinned, work, chosen, flags=("-O1",))
    return work, pinned, schemata


def _gpt2_hits() -> dict[str, LineHits]:
    every = frozenset(range(1, 5000))
    return {"gpt-2": LineHits({VOCAB: every, UNICODE: every}, {VOCAB: every, UNICODE: every}, {}, {})}


@pytest.mark.long
def test_a_killable_mutant_is_killed_an_equivalent_one_survives_and_shards_merge_as_one_run(few: tuple) -> None:
    work, pinned, schemata = few
    from tokconf.core.files import BUNDLED_RECORDINGS

    recordings = Recordings.load([BUNDLED_RECORDINGS / "gpt-2.yaml"])
    build = tree_library(work / "tree", pinned)
    campaign = Campaign(work, build, recordings, pinned, hits=_gpt2_hits())
    campaign.run_baseline(lambda line: None)  # mutant 0 passes gpt-2, or this raises
    chosen = sorted(schemata.mutants.items())
    whole = {o.key: o for o in campaign.run(chosen, work / "whole.jsonl", lambda line: None)}
    assert whole[KILLABLE].status is Status.KILLED
    assert whole[KILLABLE].kills == THIN  # not thin
    assert whole[KILLABLE].killed_by == [Tier.LLAMA_CPP]  # llama.cpp's own inputs catch it too
    assert whole[EQUIVALENT].status is Status.SURVIVED
    # a line of code reached by gpt-2's coverage: here every line is, so PLAMO_ONLY runs and survives gpt-2
    assert whole[PLAMO_ONLY].status is Status.SURVIVED

    for index in (1, 2):
        fresh = Campaign(work, build, recordings, pinned, hits=_gpt2_hits())
        fresh.run_baseline(lambda line: None)
        fresh.run(shard(chosen, index, 2), journal_path(work, index, 2), lambda line: None)
    sharded = merged((work / "campaign").glob("journal-*.jsonl"))

    def essence(outcome: object) -> tuple:
        return (outcome.status, outcome.kills, outcome.killed_by, outcome.vocabs)  # type: ignore[attr-defined]

    assert {k: essence(o) for k, o in sharded.items()} == {k: essence(o) for k, o in whole.items()}
    figures = summary(schemata.mutants, sharded, {EQUIVALENT: "right_symbol.next is never 0"})
    assert figures["scores"]["counted"] == 2 and figures["survivors"] == [PLAMO_ONLY]
    assert figures["equivalent"] == [EQUIVALENT]


@pytest.mark.long
def test_a_killed_campaign_resumes_from_its_journal(few: tuple) -> None:
    work, pinned, schemata = few
    from tokconf.core.files import BUNDLED_RECORDINGS

    recordings = Recordings.load([BUNDLED_RECORDINGS / "gpt-2.yaml"])
    campaign = Campaign(work, tree_library(work / "tree", pinned), recordings, pinned, hits=_gpt2_hits())
    campaign.run_baseline(lambda line: None)
    journal = work / "resume.jsonl"
    chosen = sorted(schemata.mutants.items())
    first = campaign.run(chosen[:1], journal, lambda line: None)
    with journal.open("a", encoding="utf-8") as handle:
        handle.write('{"key": "cut sh')  # a line a kill cut short: that mutant runs again
    said: list[str] = []
    again = campaign.run(chosen, journal, said.append)
    assert [o.key for o in again][:1] == [first[0].key]
    assert len(said) == len(chosen) - 1  # the first was not run again
    assert len([json.loads(line) for line in journal.read_text().splitlines() if line.endswith("}")]) == len(chosen)


def test_a_shard_out_of_range_is_a_usage_error() -> None:
    with pytest.raises(TokconfError, match="no such shard"):
        shard([], 3, 2)


def test_the_report_scores_each_tier_leaves_out_the_equivalent_and_lists_survivors_and_thin_kills(
    small_tree: Path,
) -> None:
    from tokconf.strength.campaign import Outcome
    from tokconf.strength.report import render

    mutants = dict(enumerate(syntax_mutants(small_tree, "src/small.cpp")[:6], 1))
    keys = [m.key for m in mutants.values()]
    outcomes = {
        keys[0]: Outcome(keys[0], 1, Status.KILLED, kills=THIN, killed_by=[Tier.LLAMA_CPP]),
        keys[1]: Outcome(keys[1], 2, Status.KILLED, kills=3, killed_by=[Tier.RECORDED]),  # thin
        keys[2]: Outcome(keys[2], 3, Status.KILLED, kills=THIN, killed_by=[Tier.FUZZ]),
        keys[3]: Outcome(keys[3], 4, Status.TIMEOUT, kills=0),  # a hang: killed, counted apart
        keys[4]: Outcome(keys[4], 5, Status.SURVIVED, vocabs=["gpt-2"]),  # listed equivalent
        keys[5]: Outcome(keys[5], 6, Status.UNREACHED),  # a gap
    }
    equivalent = {keys[4]: "cannot differ", keys[0]: "wrongly listed"}
    figures = summary(mutants, outcomes, equivalent)
    assert figures["scores"]["counted"] == 5  # six less the one equivalent survivor; the killed listed one counts
    scores = figures["scores"]
    # the hang is not placed in a tier (which input hung is not known): it counts in the whole recordings alone
    assert (scores["llama_cpp"], scores["recorded"], scores["fuzz"]) == (20.0, 40.0, 80.0)
    assert figures["scores"]["timeouts"] == 1
    assert figures["survivors"] == [keys[5]] and figures["thin"] == [keys[1]]
    assert figures["equivalent"] == [keys[4]] and figures["stale_equivalent"] == [keys[0]]
    data = {
        "intro": "", "coverage_intro": "", "summary": figures, "reach": {}, "kills": {keys[1]: 3},
        "diffs": {keys[5]: mutants[6].diff(SMALL.read_bytes())}, "equivalent": equivalent, "coverage": {},
        "by_model": {}, "uncovered": {},
    }  # fmt: skip
    page = render(data)
    assert f"`{keys[5]}`: reached by no vocabulary" in page and f"`{keys[1]}`: 3 checks" in page
    assert "why it survives" not in page and "not in the recordings" not in page
    # a survivor's reviewed reason, and an input found to kill it that is not recorded yet, are shown with it
    data["killers"] = {keys[1]: ["gpt-2/plain/strength/dna-spans", "gpt-2/bos/strength/dna-spans", "gpt-2/plain/x/y"]}
    assert "`strength/dna-spans`: added for it (corpora/strength.yaml)" in render(data)
    data["surviving"] = {keys[5]: "needs a vocabulary with no byte tokens"}
    data["hunted"] = {keys[5]: {"key": keys[5], "vocab": "gpt-2", "mode": "plain", "hex": "6869"}}
    page = render(data)
    assert "why it survives (reviewed: harness/strength/survivors.yaml): needs a vocabulary with no byte tokens" in page
    assert "killed by `hi` (hex 6869) on gpt-2, plain: an input found against the mutant (llama.cpp the" in page
    assert "| the whole recordings | 80.0% |" in page


def test_a_mutant_is_asked_of_the_vocabularies_whose_coverage_reaches_it(small_tree: Path) -> None:
    from tokconf.strength.campaign import function_lines, reaching
    from tokconf.strength.mutants import Mutant, Shape

    source = "static int f() {\n    return 1;\n}\nstatic void unicode_tolower(int c) {\n    use(c);\n}\n"
    readers = frozenset(function_lines(source, "unicode_tolower"))
    assert readers == frozenset({4, 5, 6})
    hits = {
        "reads": LineHits({UNICODE: frozenset({5}), VOCAB: frozenset({10})}, {VOCAB: frozenset({10, 12})}, {}, {}),
        "other": LineHits({UNICODE: frozenset({2}), VOCAB: frozenset({12})}, {VOCAB: frozenset({10, 12})}, {}, {}),
    }
    table = Mutant("t", UNICODE_DATA, 3, 1, Operator.TABLE, "unicode_map_lowercase", 0, 1, Shape.EXPRESSION, "x", (65,))
    assert reaching(table, hits, readers) == ["reads"]
    on_code = Mutant("c", VOCAB, 12, 5, Operator.CONSTANT, "f", 0, 1, Shape.EXPRESSION, "0")
    assert reaching(on_code, hits, readers) == ["other"]
    # line 11 is no code line for gcov (a statement's second line): the code line before it decides
    between = Mutant("b", VOCAB, 11, 5, Operator.CONSTANT, "f", 0, 1, Shape.EXPRESSION, "0")
    assert reaching(between, hits, readers) == ["reads"]


def test_checks_fall_in_tiers_llama_cpps_inputs_the_rest_then_fuzz() -> None:
    from tokconf.strength.campaign import tier_of

    assert tier_of("plain", "llama.cpp/0003") is Tier.LLAMA_CPP
    assert tier_of("bos", "whitespace/u3000") is Tier.RECORDED
    assert tier_of("facts", "eog_ids") is Tier.RECORDED and tier_of("decode", "pieces-plain") is Tier.RECORDED
    assert tier_of("special", "fuzz/0042") is Tier.FUZZ


def test_a_table_mutant_is_asked_only_the_cases_holding_a_code_point_it_changes() -> None:
    """The tables are read a code point at a time, so only those cases can see a table mutant (every kill
    of the first full campaign's table mutants was by one); any other mutant, or one changing U+FFFD
    (which llama.cpp also makes of bytes that are not UTF-8), is asked every case."""
    from collections import Counter

    from tokconf.core.files import recordings_arg
    from tokconf.recording.format import load
    from tokconf.strength.campaign import changed_text, ordered
    from tokconf.strength.mutants import Mutant, Shape

    recording = load(recordings_arg("bundled/gpt-2.yaml"))

    def table(cp: int) -> Mutant:
        return Mutant("t", UNICODE_DATA, 3, 1, Operator.TABLE, "unicode_set_whitespace", 0, 1, Shape.EXPRESSION,
                      "x", (cp,))  # fmt: skip

    assert changed_text(table(0x3000)) == frozenset({"\u3000"})
    asked = ordered(recording, table(0x3000), Counter()).cases
    assert asked and all("\u3000" in case.data.decode("utf-8", errors="replace") for case in asked)
    holding = [c for c in recording.cases if "\u3000".encode() in c.data]
    assert sorted(c.id for c in asked) == sorted(c.id for c in holding) and len(asked) < len(recording.cases)
    for everything in (table(0xFFFD), Mutant("c", VOCAB, 12, 5, Operator.CONSTANT, "f", 0, 1, Shape.EXPRESSION, "0")):
        assert changed_text(everything) is None
        assert len(ordered(recording, everything, Counter()).cases) == len(recording.cases)
    # within a tier, the cases that killed earlier mutants first
    from tokconf.strength.campaign import tier_of

    recorded = [c.id for c in holding if tier_of("plain", c.id) is Tier.RECORDED]
    again = [c.id for c in ordered(recording, table(0x3000), Counter({recorded[-1]: 3})).cases]
    assert [c for c in again if c in recorded] == [recorded[-1], *recorded[:-1]]


class _Scripted(Campaign):
    """A campaign whose checks are scripted (no llama.cpp): `answers` are what each vocabulary's check
    yields, `silent` makes the mutant's own process say which vocabulary it checks and then nothing."""

    answers: ClassVar[list[object]] = []
    asked = 0
    silent = False

    def _implementation(self) -> object:  # type: ignore[override]
        return None

    def _check(self, impl: object, name: str, recording: object) -> object:  # type: ignore[override]
        for answer in self.answers:
            type(self).asked += 1
            yield answer

    def run_mutant(self, number: int, mutant: object, report: object) -> object:  # type: ignore[override]
        if self.silent:
            report({"vocab": "quick"})  # type: ignore[operator]
            import time

            time.sleep(600)
        return super().run_mutant(number, mutant, report)  # type: ignore[arg-type]


def _scripted(tmp_path: Path) -> tuple[_Scripted, object]:
    from tokconf.core.files import recordings_arg
    from tokconf.recording.format import load
    from tokconf.strength.mutants import Mutant, Shape

    pinned = tmp_path / "tree"
    (pinned / "src").mkdir(parents=True)
    readers = "".join(f"static void {n}(int c) {{\n    use(c);\n}}\n" for n in ("unicode_cpt_flags_array",
                      "unicode_tolower", "unicode_cpts_normalize_nfd"))  # fmt: skip
    (pinned / UNICODE).write_text(readers)
    recording = load(recordings_arg("bundled/gpt-2.yaml"))
    names = ("quick", "slow")
    recordings = Recordings(dict.fromkeys(names, recording), dict.fromkeys(names), dict.fromkeys(names, Path("x")))
    line = frozenset({12})
    hits = dict.fromkeys(names, LineHits({VOCAB: line}, {VOCAB: line}, {}, {}))
    campaign = _Scripted(tmp_path, None, recordings, pinned, hits)  # type: ignore[arg-type]
    campaign.baseline = {"quick": 0.0, "slow": 30.0}
    return campaign, Mutant("c", VOCAB, 12, 5, Operator.CONSTANT, "f", 0, 1, Shape.EXPRESSION, "0")


def test_a_batch_that_never_answers_settles_the_mutant_as_a_hang_at_once(tmp_path: Path) -> None:
    """A hang costs the worker's time limit on every batch: asking on for THIN problems cost a limit each.
    One hang settles it, killed and counted apart, in the tier of the input that hung."""
    from tokconf.checking.contract import Verdict
    from tokconf.checking.engine import CaseResult
    from tokconf.core.outcome import Refusal, RefusalKind

    campaign, mutant = _scripted(tmp_path)
    failed = CaseResult("quick", "plain", "whitespace/u3000", Verdict.FAILED, actual=[1])
    hang = CaseResult("quick", "plain", "fuzz/0001", Verdict.ERROR,
                      actual=Refusal("hang: no answer within 10 s", RefusalKind.BROKEN))  # fmt: skip
    _Scripted.answers, _Scripted.asked = [failed, hang, failed, failed], 0
    outcome = campaign.run_mutant(1, mutant, lambda line: None)  # type: ignore[arg-type]
    assert (outcome.status, outcome.hung_in, outcome.kills, outcome.how) == (Status.TIMEOUT, "quick", 2, "failed")
    assert outcome.killed_by == [Tier.RECORDED]  # the failure before the hang places it
    assert _Scripted.asked == 2  # nothing asked after the hang, of this vocabulary or the next
    _Scripted.answers, _Scripted.asked = [failed] * 12, 0
    killed = campaign.run_mutant(1, mutant, lambda line: None)  # type: ignore[arg-type]
    assert (killed.status, killed.kills, killed.hung_in) == (Status.KILLED, THIN, "")  # failures alone go on to THIN


def test_a_silent_mutant_is_stopped_by_the_stall_of_the_vocabulary_it_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the mutant says which vocabulary it checks, the stall limit is that one's (llama.cpp's time on
    it, times STALL_FACTOR, plus the slack), not the slowest reaching vocabulary's."""
    from tokconf.strength import campaign as module

    monkeypatch.setattr(module, "STALL_SLACK", 1.0)
    campaign, mutant = _scripted(tmp_path)
    campaign.silent = True
    assert campaign.stall(["quick", "slow"]) == 61.0 and campaign.stall(["quick"]) == 1.0
    outcome = campaign._forked(7, mutant)  # type: ignore[arg-type]
    assert (outcome.status, outcome.hung_in, outcome.kills) == (Status.TIMEOUT, "quick", 0)
    assert outcome.seconds < campaign.stall(["slow"])  # not the slowest vocabulary's 61 s


@pytest.mark.long
def test_coverage_reaches_through_a_linked_tree_runs_two_at_once_and_follows_a_moved_one(
    llama_build: object, tmp_path: Path
) -> None:
    """gcov names sources by the resolved path they were compiled at: a campaign folder whose coverage
    tree is a link to another's (a build shared) still gets each vocabulary's lines; two vocabularies at
    once (each process's counters in a folder of its own) get the files each gets alone; and a tree moved
    after its build still does (its counters go where GCOV_PREFIX says, not where it was compiled)."""
    from tokconf.builds.fetch import source_dir
    from tokconf.core.files import BUNDLED_RECORDINGS
    from tokconf.strength.coverage import coverage_build, read_hits, run_coverage

    pinned = source_dir(11192)
    built = tmp_path / "built"
    coverage_build(pinned, built)
    recording = [BUNDLED_RECORDINGS / "synthetic" / "pre-default.yaml"]
    linked = tmp_path / "linked"
    (linked / "coverage").mkdir(parents=True)
    (linked / "coverage" / "tree").symlink_to(built / "coverage" / "tree")
    run_coverage(coverage_build(pinned, linked), linked, recording, lambda line: None, jobs=1)
    alone = linked / "coverage" / "vocabs" / "pre-default.json"
    hits = read_hits(alone)
    assert len(hits.lines[VOCAB]) > 100 and len(hits.lines[UNICODE]) > 50

    # two at once, each process's counters apart: the same file for pre-default as when run alone
    both = [*recording, BUNDLED_RECORDINGS / "synthetic" / "model-test.yaml"]
    said: list[str] = []
    run_coverage(coverage_build(pinned, built), built, both, said.append, jobs=2)
    assert sorted(said) == ["coverage [1/2] pre-default", "coverage [2/2] model-test"]
    assert (built / "coverage" / "vocabs" / "pre-default.json").read_bytes() == alone.read_bytes()
    assert read_hits(built / "coverage" / "vocabs" / "model-test.json").lines[VOCAB] != hits.lines[VOCAB]

    moved = tmp_path / "moved"
    (moved / "coverage").mkdir(parents=True)
    (built / "coverage" / "tree").rename(moved / "coverage" / "tree")
    run_coverage(coverage_build(pinned, moved), moved, recording, lambda line: None)
    assert (moved / "coverage" / "vocabs" / "pre-default.json").read_bytes() == alone.read_bytes()


def test_a_coverage_file_where_no_line_ran_is_refused_not_written(tmp_path: Path) -> None:
    """Written, it would say that the vocabulary reaches nothing, and the campaign would ask it about no
    mutant (every vocabulary's loading runs llama-vocab.cpp)."""
    from tokconf.strength.coverage import _holds_covered

    report = tmp_path / "v.tmp"
    lines = [{"line_number": 3, "count": 0}]
    report.write_text(json.dumps({"files": [{"file": VOCAB, "lines": lines}, {"file": "other.cpp", "lines": []}]}))
    with pytest.raises(TokconfError, match="the library's counters are not where gcov reads them"):
        _holds_covered(report, tmp_path)
    assert not report.exists()
    lines[0]["count"] = 1
    report.write_text(json.dumps({"files": [{"file": VOCAB, "lines": lines}]}))
    _holds_covered(report, tmp_path)
