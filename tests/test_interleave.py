"""The interleaving check (tokconf.checking.interleave): every vocabulary alive at once in one process
of the port, asked in turns, the same inputs asked of every vocabulary; which cases it asks.

The two hostile probes of issue 46 (tests/support/zoo_ports.py), a module-global "current vocabulary" and a
process-wide cache keyed by the text, passed every front end on a two-vocabulary claim before; here
they fail `tokconf check`, `tokconf.check()` and the pytest plugin under xdist, by the interleaving
check alone, and a port without state passes the same runs. The claim is gpt-2 and llama-bpe in
plain mode (`--claim gpt-2/plain --claim llama-bpe/plain`), whole recordings: small slices share
every input, which hid the old check's gap."""

from __future__ import annotations

import base64
import io
import json
import shlex
import shutil
import sys
from collections.abc import Mapping
from itertools import pairwise
from pathlib import Path
from typing import Any

import checked
import pytest
import tokconf
import zoo_ports
from checked import Checked
from tokconf.checking.contract import INTERLEAVE, Verdict
from tokconf.checking.interleave import FOCUS, SHARED, SPREAD, sample
from tokconf.checking.run import CheckRun
from tokconf.cli.main import main
from tokconf.core.outcome import MODES
from tokconf.implementations.command import Conversation
from tokconf.implementations.command_worker import serve
from tokconf.implementations.protocol import HANDLE, BadAnswer, Hello, Op
from tokconf.implementations.python import PythonImplementation
from tokconf.implementations.reference import from_gguf
from tokconf.recording.format import Recording, load, write

SUPPORT = Path(__file__).resolve().parent / "support"  # protocol1_adapter, aborting_port
B11192 = SUPPORT.parents[1] / "recordings" / "b11192"
PAIR = ("gpt-2", "llama-bpe")
CLAIMED = [f"{vocab}/plain" for vocab in PAIR]
CLAIM = [part for claim in CLAIMED for part in ("--claim", claim)]
# probe -> the vocabularies whose interleaving row fails: the module-global answers with the last one
# loaded (llama-bpe), so gpt-2 is wrong; the cache fails both, each asked some texts after the other
PROBES = {"module_global": {"gpt-2"}, "text_keyed_cache": set(PAIR)}


@pytest.mark.parametrize("name", ["gpt-2", "deepseek-llm", "command-r"])
def test_the_sample_holds_the_first_cases_with_a_special_tokens_text(name: str) -> None:
    """Besides the spread and the longest cases, the first FOCUS cases (in the recording's order) that
    hold any special token's text, as a plain search of every text in every case finds them; these
    vocabularies have 1 to 2,400 such texts."""
    recording = load(B11192 / f"{name}.yaml")
    replay = sample(recording, Path("unused.gguf"), [(mode, case.id) for case in recording.cases for mode in MODES])
    assert replay is not None
    chosen = {case.id for case, _ in replay.cases}
    texts = [text for text in recording.facts["special_texts"].values() if text]
    holding = [case.id for case in recording.cases if any(text in case.data for text in texts)]
    assert len(holding) > FOCUS
    assert set(holding[:FOCUS]) <= chosen
    assert len(chosen) <= SPREAD + 2 * FOCUS
    assert {mode for _, mode in replay.cases} == set(MODES)


def _failed_vocabs(run: CheckRun) -> set[tuple[str, str]]:
    return {(r.vocab, str(r.section)) for r in run.results if r.verdict.is_problem}


def _same_counts(done: Checked, run: CheckRun) -> bool:
    """Whether the command's `--json` counts are the API run's, unit by unit."""
    assert done.verdict is not None
    api = {(v, str(s)): {k.value: n[k] for k in Verdict} for (v, s), n in run.summary.counts.items()}
    return {(u["vocab"], u["mode"]): u["counts"] for u in done.verdict["units"]} == api


@pytest.mark.conformance
@pytest.mark.parametrize("probe", sorted(PROBES))
def test_a_module_global_and_a_text_keyed_cache_fail_every_front_end_on_a_two_vocabulary_claim(
    probe: str, sandbox: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through `tokconf check` (its worker), `tokconf.check()` (a factory object, forked) and pytest
    `-n 2`: FAIL, the same counts, each problem in the interleaving row of the vocabularies the probe
    answers wrongly for; every vocabulary passed alone."""
    cli = checked.check(capsys, "--impl", f"zoo_ports:{probe}", *CLAIM)
    assert cli.status == 1 and cli.verdict is not None
    line = cli.verdict["verdict_line"]
    want = {(vocab, INTERLEAVE) for vocab in PROBES[probe]}
    assert cli.failing_units() == want, line
    api = tokconf.check(getattr(zoo_ports, probe), claims=CLAIMED)
    assert not api.decision.passed
    assert _failed_vocabs(api) == want
    assert _same_counts(cli, api)
    args = ["-p", "no:cacheprovider", "--tokconf-impl", f"zoo_ports:{probe}", "--tokconf-json", "verdict.json"]
    args += [f"--tokconf-{option[2:]}={value}" for option, value in zip(CLAIM[::2], CLAIM[1::2], strict=True)]
    distributed = sandbox.runpytest_subprocess(*args, "-n", "2", "--dist", "loadgroup")
    verdict = json.loads((sandbox.path / "verdict.json").read_text())
    assert (distributed.ret, verdict["verdict_line"]) == (1, line)
    failing = {(unit["vocab"], unit["mode"]) for unit in verdict["units"] if unit["counts"]["failed"]}
    assert failing == want


@pytest.mark.conformance
def test_a_port_without_state_passes_the_same_check(
    sandbox: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every vocabulary's interleaving row holds the same SHARED texts, and a port without state passes
    them, in `tokconf check` and `tokconf.check()` alike."""
    cli = checked.check(capsys, "--impl", "zoo_ports:right", *CLAIM)
    assert cli.status == 0
    api = tokconf.check(zoo_ports.right, claims=CLAIMED)
    asked = [{r.data for r in api.results if r.section == INTERLEAVE and r.vocab == vocab} for vocab in PAIR]
    assert len(set.intersection(*asked)) >= SHARED
    assert api.decision.passed and _same_counts(cli, api)


Event = tuple[str, str, bytes]  # ("load" or "encode", the vocabulary, the input)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Conversation, Op, dict[str, Any]]]:
    """Every request this process writes to a program, with the conversation (the process) it went to."""
    log: list[tuple[Conversation, Op, dict[str, Any]]] = []
    real = Conversation.send

    def spy(self: Conversation, op: Op, fields: Mapping[str, Any], *args: Any, **kwargs: Any) -> int:
        log.append((self, op, dict(fields)))
        return real(self, op, fields, *args, **kwargs)

    monkeypatch.setattr(Conversation, "send", spy)
    return log


def _shared_process(sent: list[tuple[Conversation, Op, dict[str, Any]]]) -> list[Event]:
    """What was asked of the one process that was given more than one vocabulary, in order: each load,
    and each input with the vocabulary it was asked of (its handle's, else the last loaded)."""
    by_process: dict[int, list[Event]] = {}
    handles: dict[tuple[int, Any], str] = {}
    for conversation, op, fields in sent:
        events = by_process.setdefault(id(conversation), [])
        if op is Op.LOAD:
            vocab = Path(fields["path"]).name.removeprefix("ggml-vocab-").removesuffix(".gguf")
            handles[id(conversation), fields.get(HANDLE)] = vocab
            events.append(("load", vocab, b""))
        elif op in (Op.ENCODE, Op.ENCODE_BATCH):
            vocab = handles[id(conversation), fields.get(HANDLE)]
            events += [("encode", vocab, base64.b64decode(one["text_b64"])) for one in fields.get("requests", [fields])]
    [shared] = [events for events in by_process.values() if len({v for e, v, _ in events if e == "load"}) > 1]
    return shared


def _asked_in_order(events: list[Event], first: str, then: str) -> set[bytes]:
    """The texts asked of `first` and later of `then`, with no other question of `first` between."""
    asked: dict[bytes, list[str]] = {}
    for event, vocab, data in events:
        if event == "encode":
            asked.setdefault(data, []).append(vocab)
    return {data for data, vocabs in asked.items() if [first, then] == [v for v in vocabs if v in (first, then)][:2]}


@pytest.mark.usefixtures("sandbox")  # the zoo importable by the programs
def test_the_worker_holds_every_vocabulary_at_once_and_asks_them_in_turn(
    sent: list[tuple[Conversation, Op, dict[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """tokconf's worker declares `handles`: its shared process is given both vocabularies, each under
    its handle, before any question; the questions switch between the vocabularies turn after turn;
    the same texts are asked of gpt-2 then llama-bpe, and others of llama-bpe then gpt-2."""
    assert main(["check", "--impl", "zoo_ports:right", *CLAIM]) == 0, capsys.readouterr().out[-2000:]
    events = _shared_process(sent)
    loads = [i for i, (event, _, _) in enumerate(events) if event == "load"]
    encodes = [i for i, (event, _, _) in enumerate(events) if event == "encode"]
    assert len(loads) == 2 and max(loads) < min(encodes)
    asked = [vocab for event, vocab, _ in events if event == "encode"]
    switches = sum(1 for before, after in pairwise(asked) if before != after)
    assert switches >= 4, asked
    assert len(_asked_in_order(events, *PAIR)) >= 2 and len(_asked_in_order(events, *reversed(PAIR))) >= 2


@pytest.mark.usefixtures("sandbox")  # the zoo importable by the programs
def test_a_program_without_handles_gets_them_one_after_another_with_the_shared_inputs(
    sent: list[tuple[Conversation, Op, dict[str, Any]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A protocol 1 program (no handshake flags): in one process, each `load` replacing the last, in
    recording order and the first again, each vocabulary asked its questions after the one before,
    SHARED texts of them asked of both. That catches the text-keyed cache; not the module-global,
    which needs two tokenizers alive at once (docs/threat-model.md)."""
    adapter = f"cmd:{shlex.join([sys.executable, str(SUPPORT / 'protocol1_adapter.py')])}"
    assert main(["check", "--impl", f"{adapter} zoo_ports:right", *CLAIM]) == 0, capsys.readouterr().out[-2000:]
    events = _shared_process(sent)
    loaded = [vocab for event, vocab, _ in events if event == "load"]
    assert loaded == [*PAIR, PAIR[0]]
    asked = [vocab for event, vocab, _ in events if event == "encode"]
    assert [vocab for n, vocab in enumerate(asked) if n == 0 or asked[n - 1] != vocab] == loaded
    assert len(_asked_in_order(events, *PAIR)) >= SHARED
    cached = checked.check(capsys, "--impl", f"{adapter} zoo_ports:text_keyed_cache", *CLAIM)
    assert cached.status == 1 and cached.failing_units() == {("llama-bpe", INTERLEAVE)}
    assert main(["check", "--impl", f"{adapter} zoo_ports:module_global", *CLAIM]) == 0  # the documented limit


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gpt-2's and llama-bpe's `edge/*` cases alone: two small recordings sharing every input."""
    folder = tmp_path_factory.mktemp("edges")
    for name in PAIR:
        whole = load(B11192 / f"{name}.yaml")
        edge = [case for case in whole.cases if case.id.startswith("edge/")]
        write(folder / f"{name}.yaml", Recording(whole.provenance, whole.facts, edge))
    return folder


@pytest.mark.usefixtures("sandbox")  # the zoo importable by the worker
def test_a_port_that_cannot_hold_two_vocabularies_fails_saying_so(
    edges: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A factory that fails while another vocabulary's tokenizer is alive passes each vocabulary alone;
    held at once, the second is an error for each of its questions, saying so, and nothing more is
    asked."""
    done = checked.check(capsys, "--impl", "zoo_ports:one_at_a_time", "--recordings", str(edges))
    assert done.status == 1
    problems = [c for c in done.cases if c.verdict.is_problem]
    assert {(c.vocab, c.section, c.verdict) for c in problems} == {("llama-bpe", INTERLEAVE, Verdict.ERROR)}
    assert all(c.reason.startswith("loaded alone, but not beside gpt-2 in one process: ") for c in problems)
    assert "another vocabulary is loaded" in problems[0].reason
    assert not [c for c in done.cases if c.section == INTERLEAVE and c.vocab == "gpt-2"]


def test_the_worker_answers_each_request_for_the_vocabulary_its_handle_names() -> None:
    """Line protocol 2's `handles`: tokconf's worker says it takes them, loads each vocabulary beside the
    others under its handle (a load without one replaces only the one loaded without), and answers
    `encode`, `encode_batch` and `facts` for the vocabulary the request's handle names."""
    paths = {name: str(tokconf.vocab_path(name)) for name in PAIR}
    reference = {name: from_gguf(Path(path)) for name, path in paths.items()}
    text = base64.b64encode(b"Hello world, it's 2024").decode()
    requests = [
        {"op": "hello", "id": 0, "protocol": 2},
        {"op": "load", "id": 1, "path": paths["gpt-2"], "vocab_type": "bpe", "handle": 0},
        {"op": "load", "id": 2, "path": paths["llama-bpe"], "vocab_type": "bpe", "handle": 1},
        {"op": "load", "id": 3, "path": paths["llama-bpe"], "vocab_type": "bpe"},
        {"op": "encode", "id": 4, "text_b64": text, "add_special": False, "parse_special": False, "handle": 0},
        {"op": "encode", "id": 5, "text_b64": text, "add_special": False, "parse_special": False, "handle": 1},
        {"op": "encode_batch", "id": 6, "handle": 0, "requests": [
            {"text_b64": text, "add_special": True, "parse_special": True}] * 2},
        {"op": "facts", "id": 8, "handle": 0},
        {"op": "encode", "id": 9, "text_b64": text, "add_special": False, "parse_special": False, "handle": 7},
        {"op": "encode", "id": 10, "text_b64": text, "add_special": False, "parse_special": False},
    ]  # fmt: skip
    answers = io.StringIO()
    impl = PythonImplementation("reference", from_gguf)
    assert serve(impl, io.StringIO("".join(json.dumps(r) + "\n" for r in requests)), answers) == 0
    got = {answer["id"]: answer for answer in map(json.loads, answers.getvalue().splitlines())}
    assert Hello.parse(got[0]).handles
    data = b"Hello world, it's 2024"
    assert got[4]["ids"] == reference["gpt-2"].encode(data, False, False)
    assert got[5]["ids"] == got[10]["ids"] == reference["llama-bpe"].encode(data, False, False)
    assert got[6]["ids"] == got[7]["ids"] == reference["gpt-2"].encode(data, True, True)
    assert got[8]["facts"]["eos"] == 50256
    assert "no vocabulary loaded under handle 7" in got[9]["error"]
    with pytest.raises(BadAnswer, match="`handles` must be true or false"):
        Hello.parse({"id": 0, "protocol": 2, "vocab_types": ["bpe"], "handles": "yes"})
    assert not Hello.parse({"id": 0, "protocol": 2, "vocab_types": ["bpe"]}).handles


def test_a_process_shared_by_handles_that_dies_where_llama_cpp_aborts_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A binding holding every vocabulary in one process (`handles`) that dies where llama.cpp aborts,
    as llama.cpp does: the vocabulary it died on starts a new process; the others, still holding the
    ended one, start one each when next asked. It agrees with llama.cpp everywhere: PASS (an ended
    process's closed pipe was read, and the run ended in a traceback)."""
    for name in ("pre-gemma4", "pre-gpt-2"):
        shutil.copy(B11192 / "synthetic" / f"{name}.yaml", tmp_path / f"{name}.yaml")
    adapter = f"cmd:{shlex.join([sys.executable, str(SUPPORT / 'aborting_port.py'), 'die', '--handles'])}"
    cases = ["--case", "invalid-utf8/above-max-f4-90", "--case", "contractions/lower-all"]
    assert main(["check", "--impl", adapter, "--recordings", str(tmp_path), *cases]) == 0, capsys.readouterr()
    assert capsys.readouterr().out.splitlines()[-1].startswith("PASS: 24 passed")


RECORDINGS = B11192


INTERLEAVE_PORT = """
import base64, json, sys, time
from tokconf_reference import Tokenizer

loads = 0
tok = None
for line in sys.stdin:
    request = json.loads(line)
    answer = {"id": request["id"]}
    if request["op"] == "hello":
        answer.update(protocol=2, name="one-vocabulary-a-process", vocab_types=["bpe", "spm"])
    elif request["op"] == "load":
        loads += 1
        if loads > 1:  # a second vocabulary in one process: it hangs
            time.sleep(3600)
        tok = Tokenizer.from_gguf(request["path"])
        answer.update(ok=True)
    else:
        data = base64.b64decode(request["text_b64"])
        answer["ids"] = tok.encode(data, request["add_special"], request["parse_special"])
    print(json.dumps(answer), flush=True)
"""


def test_after_a_load_failure_the_interleaving_check_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three vocabularies, each fine alone; loading a second into one process hangs. The interleaving
    check waits the load timeout once, for the second vocabulary, and asks nothing more (a third wait,
    and a fourth for the first again, would each cost the whole --load-timeout)."""
    port = tmp_path / "port.py"
    port.write_text(INTERLEAVE_PORT)
    names = ["gpt-2", "llama-spm", "qwen2"]
    recordings = [arg for name in names for arg in ("--recordings", str(RECORDINGS / f"{name}.yaml"))]
    args = ["--impl", f"cmd:{sys.executable} {port}", *recordings, "--case", "edge/hello-world"]
    done = checked.check(capsys, *args, "--load-timeout", "2")
    assert done.status == 1
    interleaved = [c for c in done.cases if c.section == "interleave"]
    assert {(c.vocab, c.verdict) for c in interleaved} == {("gpt-2", Verdict.PASSED), ("llama-spm", Verdict.ERROR)}
    errors = [c.reason for c in interleaved if c.verdict is Verdict.ERROR]
    assert errors and all("not in a process where gpt-2 was loaded before" in e for e in errors)
    assert "(the --load-timeout option)" in errors[0]
    capsys.readouterr()
