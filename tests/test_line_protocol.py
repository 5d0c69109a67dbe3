"""Line protocol 2 from the program's side: declared unsupported input classes, `--strict`, a program
that loaded another vocabulary, answers of the wrong shape, and the worker that serves a Python port."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import checked
import pytest
from tokconf.builds.build import Build
from tokconf.checking.contract import Verdict
from tokconf.cli.main import main
from tokconf.core.facts import Fact
from tokconf.core.outcome import Refusal, RefusalKind
from tokconf.core.sandbox import SandboxPolicy
from tokconf.implementations.base import Broken, Implementation, Unsupported, VocabInfo
from tokconf.implementations.command import GIVE_UP_BROKEN, DecodingFailed
from tokconf.implementations.protocol import (
    BadAnswer,
    CannotTake,
    Facts,
    Fault,
    Hello,
    Ids,
    InputClass,
    LoadDeclined,
    Loaded,
    Op,
    OutOfStep,
    Refuses,
    answer_to,
    parse_encode,
    parse_load,
    parse_pieces,
    parse_text,
)
from tokconf.implementations.resolve import resolve, resolve_python

QWEN2 = Path(__file__).resolve().parent.parent / "recordings" / "b11192" / "qwen2.yaml"
FEW = ["--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "invalid-utf8/lone-continuation"]
FEW += ["--case", "invalid-utf8/truncated-3"]

PROGRAM = """
import base64, json, sys
from tokconf_reference import Tokenizer

DECLARED = {declared}
SKIP = {skip!r}  # the class this program answers for invalid UTF-8
LOADED = {loaded}  # extra fields of its load answer
tok = None
for line in sys.stdin:
    request = json.loads(line)
    answer = {{"id": request["id"]}}
    if request["op"] == "hello":
        answer.update(protocol=2, name="strings-port", vocab_types=["bpe"], unsupported=DECLARED)
    elif request["op"] == "load":
        tok = Tokenizer.from_gguf(request["path"])
        answer.update(ok=True, **LOADED)
    else:
        data = base64.b64decode(request["text_b64"])
        try:
            data.decode("utf-8")
            answer["ids"] = tok.encode(data, request["add_special"], request["parse_special"])
        except UnicodeDecodeError:
            answer["unsupported"] = SKIP
        except ValueError as error:
            answer["error"] = str(error)
    print(json.dumps(answer), flush=True)
"""


def _program(tmp_path: Path, declared: list[str], skip: str = "invalid-utf8", **loaded: object) -> str:
    path = tmp_path / "port.py"
    path.write_text(PROGRAM.format(declared=json.dumps(declared), skip=skip, loaded=json.dumps(loaded)))
    return f"cmd:{sys.executable} {path}"


def test_declared_unsupported_inputs_are_counted_by_class_and_never_passed(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two of the three cases are not UTF-8, declined as such: a class verified on the input, granted by default
    done = checked.check(capsys, "--impl", _program(tmp_path, ["invalid-utf8"]), *FEW)
    assert done.status == 0 and done.verdicts() == {Verdict.PASSED: 3, Verdict.UNSUPPORTED: 6}
    out = done.output
    assert "unsupported: 6 of qwen2: invalid-utf8" in out and "declined in qwen2: granted invalid-utf8 6" in out
    assert "coverage 3/3 cases in scope (100.00%), 3 vocab x mode; granted declines: invalid-utf8 6" in out
    # the same inputs declined as `other`, unverified: each counts against coverage, unless loosened explicitly
    other = _program(tmp_path, ["other"], skip="other")
    assert main(["check", "--impl", other, *FEW]) == 1
    assert "fail: qwen2 plain: 1 of 3 cases passed (33.33%, below the 100% a claim needs" in capsys.readouterr().out
    assert main(["check", "--impl", other, *FEW, "--min-coverage", "33"]) == 0
    capsys.readouterr()
    assert main(["check", "--impl", _program(tmp_path, ["invalid-utf8"]), *FEW, "--strict"]) == 1
    assert "fail: --strict: 6 unsupported" in capsys.readouterr().out


def test_an_undeclared_or_ill_fitting_unsupported_answer_fails_the_gate(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = checked.check(capsys, "--impl", _program(tmp_path, []), *FEW)
    assert done.status == 1 and done.verdicts() == {Verdict.PASSED: 3, Verdict.ERROR: 6}
    assert "answered unsupported ('invalid-utf8') without declaring it in the handshake (declared: none)" in (
        done.output
    )
    assert main(["check", "--impl", _program(tmp_path, ["nul"], skip="nul"), *FEW]) == 1
    assert "declined the input as nul, which it is not (1 bytes)" in capsys.readouterr().out


def test_a_program_that_loaded_another_vocabulary_is_one_error(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    impl = _program(tmp_path, ["invalid-utf8"], n_tokens=32000, special_ids={"bos": 1, "eos": 151645})
    done = checked.check(capsys, "--impl", impl, "--recordings", str(QWEN2), "--mode", "plain")
    assert done.status == 1
    output = done.output
    assert set(done.verdicts()) == {Verdict.ERROR}
    mismatch = "vocabulary mismatch: the program loaded another vocabulary than ggml-vocab-qwen2.gguf: "
    mismatch += "n_tokens 32000 (llama.cpp: 151936), bos 1 (llama.cpp: 151643)"
    assert output.count(mismatch) == 1  # told once, not once per case
    assert "4269 errors (facts 6, plain 4263), one reason: vocabulary mismatch" in output


def test_a_special_id_said_in_load_that_differs_is_a_failed_fact_not_another_vocabulary(
    llama_build: Build, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A binding that says its config's EOS (the tokens are the GGUF's): every case is still checked,
    and the eos fact fails with both ids; the same EOS as llama.cpp's passes it."""
    wrong = _program(tmp_path, ["invalid-utf8"], n_tokens=151936, special_ids={"bos": 151643, "eos": 128009})
    plain = ["--recordings", str(QWEN2), "--mode", "plain"]  # facts are checked with a whole mode
    done = checked.check(capsys, "--impl", wrong, *plain)
    assert done.status == 1
    facts = done.section("facts")
    assert facts["eos"].verdict is Verdict.FAILED
    assert facts["eos"].reason == "eos: the implementation says 128009, llama.cpp says 151643"
    assert facts["bos"].verdict is Verdict.PASSED
    assert {c.verdict for c in done.cases if c.section != "facts"} == {Verdict.PASSED, Verdict.UNSUPPORTED}
    right = _program(tmp_path, ["invalid-utf8"], n_tokens=151936, special_ids={"bos": 151643, "eos": 151643})
    done = checked.check(capsys, "--impl", right, *plain)
    assert done.status == 0 and done.section("facts")["eos"].verdict is Verdict.PASSED


def test_a_hello_declaring_an_unknown_class_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--impl", _program(tmp_path, ["emoji"]), *FEW]) == 2
    assert "the hello answer's `unsupported` must list input classes" in capsys.readouterr().err


def test_a_case_that_matches_nothing_fails_the_run(llama_build: Build, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped `--case` beside a right one must not leave a green gate that checked less."""
    args = ["check", "--recordings", str(QWEN2), "--case", "edge/hello-world", "--case", "edge/hello-wrold"]
    assert main(args) == 1
    assert "fail: --case edge/hello-wrold matched no case of the checked recordings" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------------
# The answers, parsed: every wrong shape is a clear error, and what the worker writes reads back.


@pytest.mark.parametrize(
    ("parse", "message"),
    [
        (lambda: parse_encode({"id": 1}, 2, 5), "the encode answer must hold exactly one of `ids`, `error`"),
        (lambda: parse_encode({"ids": [1], "error": "x"}, 2, 5), "must hold exactly one of"),
        (lambda: parse_encode({"ids": [1, True]}, 2, 5), "`ids` is not a list of token ids"),
        (lambda: parse_encode({"ids": [1.0]}, 2, 5), "`ids` is not a list of token ids"),
        (lambda: parse_encode({"ids": [-3]}, 2, 5), "`ids` is not a list of token ids"),
        (
            lambda: parse_encode({"ids": [7] * 13}, 2, 1),
            "answered 13 ids for a 1-byte input: llama.cpp answers at most 12",
        ),
        (
            lambda: parse_encode({"unsupported": "emoji"}, 2, 5),
            "answered unsupported ('emoji'), which is no input class",
        ),
        (lambda: parse_encode({"fault": 3}, 2, 5), "the encode answer's `fault` must be a string"),
        (lambda: parse_encode({"fault": "x"}, 1, 5), "the encode answer must hold exactly one of `ids`, `error`:"),
        (lambda: parse_encode({"aborted": 6}, 2, 5), "the encode answer's `aborted` must be a string"),
        (
            lambda: parse_encode({"aborted": "x", "ids": [1]}, 2, 5),
            "must hold exactly one of `ids`, `error`, `aborted`",
        ),
        (lambda: parse_encode({"aborted": "x"}, 1, 5), "the encode answer must hold exactly one of `ids`, `error`:"),
        (lambda: Hello.parse({"vocab_types": "bpe"}), "the hello answer has no `vocab_types` list"),
        (lambda: Hello.parse({"vocab_types": [], "name": 7}), "the hello answer's `name` must be a string"),
        (lambda: parse_load({"ok": "yes"}, 2), "the load answer's `ok` must be true or false"),
        (lambda: parse_load({"ok": True, "ops": "facts"}, 2), "the load answer's `ops` must be a list of names"),
        (lambda: parse_load({"ok": True, "n_tokens": "5"}, 2), "the load answer's `n_tokens` must be a count"),
        (lambda: parse_load({"ok": True, "special_ids": {"bos": 1.0}}, 2), "`special_ids` must map names to token"),
        (lambda: Facts.parse({"facts": {"add_bos": 1}}), "fact add_bos must be true or false, not 1"),
        (lambda: Facts.parse({"facts": {"bos": 1.0}}), "fact bos must be a token id (-1 for none), not 1.0"),
        (lambda: Facts.parse({"facts": [1]}), "the facts answer's `facts` must be an object"),
        (lambda: parse_pieces({"pieces_b64": ["IQ=="]}, 2), "token_to_piece answered 1 pieces for 2 ids"),
        (lambda: parse_pieces({"pieces_b64": ["!!", "IQ=="]}, 2), "token_to_piece: not base64: '!!'"),
        (lambda: parse_text({"text_b64": 5}), "detokenize: not base64: '5'"),
    ],
)
def test_an_answer_of_the_wrong_shape_is_a_clear_error(parse: Callable[[], object], message: str) -> None:
    with pytest.raises(BadAnswer) as raised:
        parse()
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"[" * 100_000, "answered a line that is not JSON"),  # nested too deep for the parser
        (b'{"id": 1, "ids": [' + b"9" * 5000 + b"]}", "answered a line that is not JSON"),  # an int too long
        (b'{"id": true, "ids": []}', "answered for another request (wanted id 1)"),
        (b'[{"id": 1}]', "answered for another request (wanted id 1)"),
    ],
    ids=["deep", "long-int", "bool-id", "not-an-object"],
)
def test_a_line_that_cannot_be_the_answer_is_out_of_step(line: bytes, message: str) -> None:
    with pytest.raises(OutOfStep, match=re.escape(message)):
        answer_to(line, 1)


def test_what_the_worker_writes_reads_back_as_written() -> None:
    """The worker (`serve`) writes its answers with the classes tokconf parses them with."""
    for answer in (Ids([1, 2]), Refuses("no"), CannotTake(InputClass.OTHER, "why"), Fault("broke")):
        assert parse_encode(answer.fields(), 2, 5) == answer
    hello = Hello(2, "port", ("bpe", "test"), frozenset({InputClass.INVALID_UTF8, InputClass.OTHER}))
    assert Hello.parse(hello.fields()) == hello
    loaded = Loaded(frozenset({Op.FACTS, Op.TOKEN_TO_PIECE, Op.DETOKENIZE}))
    assert parse_load(loaded.fields(), 2) == loaded
    assert parse_load(LoadDeclined("not this one").fields(), 2) == LoadDeclined("not this one")
    facts = Facts({Fact.ADD_BOS: True, Fact.BOS: -1, Fact.EOG_IDS: [2, 7]})
    assert Facts.parse(facts.fields()) == facts


# ---------------------------------------------------------------------------------------------------
# A Python port under `--timeout` (the worker, `tokconf.implementations.command_worker`) gets the verdicts it
# gets in process, and the worker survives whatever the port does short of ending its process.

PORT = """
import os, sys
from tokconf.implementations.base import Refused, Unsupported

print("port: imported")  # ports print: on the worker's standard output, where the protocol was
with open(os.environ["PORT_STARTS"], "a") as starts:
    starts.write(f"{{os.getpid()}}\\n")

BEHAVIOUR = {behaviour!r}


class Port:
    n_tokens = 4
    add_bos = {add_bos}

    def encode(self, data, add_special, parse_special):
        print("port: encoding", data)
        if data == b"refuse":
            raise Refused("refused it")
        if data in (b"decline", b"\\xff"):
            raise Unsupported("cannot take it")
        if data == b"bug":
            raise ValueError("a bug")
        if data == b"exit":
            sys.exit(3)
        if data == b"floats":
            return [1.0]
        return list(data)

    def token_to_piece(self, token, special):
        if BEHAVIOUR == "broken-decoding":
            raise ValueError("no pieces")
        return bytes([token])

    def decode(self, ids, remove_special, unparse_special):
        return bytes(ids)


def load(path):
    print("port: loading", path)
    if BEHAVIOUR == "exit":
        sys.exit(2)
    if BEHAVIOUR == "bug":
        raise RuntimeError("cannot load")
    if BEHAVIOUR == "decline":
        raise Unsupported("not this one")
    if BEHAVIOUR == "reads-stdin":
        sys.stdin.read()
    return Port()
"""

VOCAB = VocabInfo(Path("/nowhere/ggml-vocab-test.gguf"), "bpe", "gpt2", "gpt-2", "test", None, 4, {})


@dataclass
class Port:
    """A port module written for one test, in process and in a worker."""

    spec: str
    starts: Path

    def worker(self) -> Implementation:
        """The port as every front end runs it by default: in worker processes, one per vocabulary, each
        sandboxed (it counts its starts in a file the sandbox lets it write)."""
        return resolve(self.spec, 10, sandbox=SandboxPolicy(writable=(self.starts.parent,)))

    def worker_starts(self) -> int:
        """How many worker processes imported the port (this process imports it too, in process): one
        line each, by pid (a sandboxed worker's pid is its own namespace's, the same for every one)."""
        return sum(pid != str(os.getpid()) for pid in self.starts.read_text().split())


@pytest.fixture
def port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Callable[..., Port]:
    def write(behaviour: str = "fine", add_bos: str = "False") -> Port:
        name = f"port_{request.node.name}_{behaviour}".replace("[", "_").replace("]", "").replace("-", "_")
        (tmp_path / f"{name}.py").write_text(PORT.format(behaviour=behaviour, add_bos=add_bos))
        return Port(f"{name}:load", tmp_path / "starts")

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    monkeypatch.setenv("PORT_STARTS", str(tmp_path / "starts"))
    return write


def test_under_a_timeout_a_python_port_gets_its_in_process_verdicts(port: Callable[..., Port]) -> None:
    """Printing on stdout, declining inputs (`Unsupported`, the classes the worker declares), refusing
    (`Refused`), a bug, `sys.exit` and float ids: the same verdict each in the worker, and the worker
    was neither restarted nor given up on."""
    tested = port()
    inputs = [b"ab", b"refuse", b"decline", b"\xff", b"bug", b"exit", b"floats"]
    requests = [(data, False, False) for data in inputs]
    in_process = resolve_python(tested.spec).open(VOCAB).encode_many(requests)
    worker = tested.worker()
    try:
        over = worker.open(VOCAB).encode_many(requests)
    finally:
        worker.close()
    assert over == in_process  # ids, or the refusal's kind and reason: what decides and shows the verdict
    kinds = [o.kind if isinstance(o, Refusal) else "ids" for o in over]
    assert kinds == ["ids", RefusalKind.REFUSED, *[RefusalKind.UNSUPPORTED] * 2, *[RefusalKind.BROKEN] * 3]
    assert over[3] == Refusal("cannot take it", RefusalKind.UNSUPPORTED, InputClass.INVALID_UTF8)  # its reason kept
    assert tested.worker_starts() == 1


@pytest.mark.parametrize("behaviour", ["exit", "bug", "decline"])
def test_under_a_timeout_a_factory_gets_its_in_process_verdict(behaviour: str, port: Callable[..., Port]) -> None:
    """`sys.exit` or an exception in the factory breaks the vocabulary (every case an error, with the
    factory's reason), `Unsupported` declines it: over the protocol as in process, each vocabulary in
    a process of its own."""
    tested = port(behaviour)
    with pytest.raises((Broken, Unsupported)) as in_process:
        resolve_python(tested.spec).open(VOCAB)
    worker = tested.worker()
    try:
        for _ in range(2):
            with pytest.raises((Broken, Unsupported)) as over:
                worker.open(VOCAB)
    finally:
        worker.close()
    assert (type(over.value), str(over.value)) == (type(in_process.value), str(in_process.value))
    assert tested.worker_starts() == 2


def test_a_port_breaking_on_every_input_is_neither_restarted_nor_given_up(port: Callable[..., Port]) -> None:
    """A `fault` answer is the port's own error, in step: no restart, and no give-up after 5."""
    tested = port()
    worker = tested.worker()
    try:
        outcomes = worker.open(VOCAB).encode_many([(b"exit", False, False)] * (3 * GIVE_UP_BROKEN))
    finally:
        worker.close()
    assert set(outcomes) == {Refusal("encode called sys.exit(3)", RefusalKind.BROKEN)}
    assert tested.worker_starts() == 1


def test_decoding_that_raises_is_an_error_answer_and_the_worker_goes_on(port: Callable[..., Port]) -> None:
    tested = port("broken-decoding")
    worker = tested.worker()
    try:
        session = worker.open(VOCAB)
        decoder = session.decoder()
        assert decoder is not None
        with pytest.raises(DecodingFailed, match="token_to_piece answered an error: ValueError: no pieces"):
            decoder.pieces(True)
        assert decoder.detokenize([104, 105], False, False) == b"hi"
        assert session.encode_many([(b"ab", False, False)]) == [[97, 98]]
    finally:
        worker.close()
    assert tested.worker_starts() == 1


def test_facts_of_the_wrong_type_break_the_facts_as_in_process(port: Callable[..., Port]) -> None:
    tested = port(add_bos="1")
    with pytest.raises(Broken) as in_process:
        resolve_python(tested.spec).open(VOCAB).facts()
    worker = tested.worker()
    try:
        with pytest.raises(Broken) as over:
            worker.open(VOCAB).facts()
    finally:
        worker.close()
    assert str(over.value) == str(in_process.value)
    assert "fact add_bos must be true or false, not 1" in str(over.value)


def test_in_the_worker_a_port_reading_its_input_takes_no_request(port: Callable[..., Port]) -> None:
    """The worker's standard input is /dev/null for the port: the requests come on a pipe of their own."""
    worker = port("reads-stdin").worker()
    try:
        assert worker.open(VOCAB).encode_many([(b"ab", False, False)]) == [[97, 98]]
    finally:
        worker.close()
