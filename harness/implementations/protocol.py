"""The line protocol's messages (docs/line-protocol.md), both ways: what tokconf asks, and every answer a
program may give, parsed into typed values.

A program under test is not trusted (docs/threat-model.md), so nothing it sends is used as raw JSON:
each answer is checked against what its request allows and becomes one of the dataclasses below, or
an error that says what was wrong and shows what was sent. Two kinds of error, because they cost
different things: `OutOfStep` (the line cannot be the answer to the request in flight: the program
must be restarted) and `BadAnswer` (an answer to the right request, of a shape it does not allow: that
request's check is an error, and the conversation goes on). The worker that serves a Python
implementation (`tokconf.implementations.command_worker`) writes its answers with the same classes
(`fields()`), so both ends read one definition of the protocol.
"""

from __future__ import annotations

import base64
import enum
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.facts import ExposedFacts, Fact, are_token_ids, is_token_id
from ..core.outcome import MIN_DECLARED_LIMIT, InputClass, Outcome, Refusal, RefusalKind, Request
from ..core.printable import kept
from ..oracles.bound import max_ids, over_bound
from .base import VocabInfo

PROTOCOL = 2  # the newest version tokconf speaks; it also speaks 1
HANDLE = "handle"  # protocol 2, to a program whose hello says `handles`: which loaded vocabulary a request is for
SHOWN = 200  # characters of a wrong answer shown in its error


class Op(enum.Enum):
    """What a request asks."""

    HELLO = "hello"
    LOAD = "load"
    ENCODE = "encode"
    ENCODE_BATCH = "encode_batch"  # protocol 2, only to a program whose handshake said `"batch": true`
    DETOKENIZE_BATCH = "detokenize_batch"  # the same, for `detokenize`
    FACTS = "facts"  # protocol 2, each of these three only when `load` listed it in `ops`
    TOKEN_TO_PIECE = "token_to_piece"
    DETOKENIZE = "detokenize"


OPTIONAL_OPS = frozenset({Op.FACTS, Op.TOKEN_TO_PIECE, Op.DETOKENIZE})
DECODING_OPS = frozenset({Op.TOKEN_TO_PIECE, Op.DETOKENIZE})


class OutOfStep(Exception):
    """A line that cannot be the answer to the request in flight (not a JSON object, another id): the
    program and tokconf no longer agree on what is being answered, so the program is restarted."""


class HelloRefused(Exception):
    """The handshake was answered with an `error` (and perhaps a `hint`): the program cannot serve at
    all (tokconf's worker: the `--impl` module cannot be imported). A usage error, said as such."""

    def __init__(self, problem: str, hint: str | None) -> None:
        super().__init__(problem)
        self.problem, self.hint = problem, hint


class BadAnswer(Exception):
    """An answer to the request in flight that the request does not allow (a missing field, a wrong
    type): that request's check is an error; the program is in step and goes on."""


# ---------------------------------------------------------------------------------------------------
# Requests (tokconf to the program)


def request_line(request_id: int, op: Op, fields: Mapping[str, Any]) -> bytes:
    """One request, as the line written to the program (`Framing.LINE` ends it)."""
    return json.dumps({"op": op.value, "id": request_id, **fields}).encode()


def batch_fields(requests: list[Request]) -> dict[str, Any]:
    """An `encode_batch` request's fields: its inputs, each as an `encode` request's. The answers are
    one line per input, in order, the first carrying the batch's id and each next one the id after."""
    return {"requests": [encode_fields(request) for request in requests]}


def detokenize_fields(ids: list[int], remove_special: bool, unparse_special: bool) -> dict[str, Any]:
    return {"ids": ids, "remove_special": remove_special, "unparse_special": unparse_special}


def load_fields(vocab: VocabInfo, protocol: int) -> dict[str, Any]:
    """A `load` request's fields; protocol 1 programs get only the first four."""
    fields: dict[str, Any] = {"path": str(vocab.path), "vocab_type": vocab.vocab_type}
    fields.update(model=vocab.model, pre=vocab.pre)
    if protocol >= 2:
        fields.update(name=vocab.name, sha256=vocab.sha256, n_tokens=vocab.n_tokens, special_ids=vocab.special_ids)
    return fields


def vocab_of(request: Mapping[str, Any]) -> VocabInfo:
    """What a `load` request says about the vocabulary (the inverse of `load_fields`, for the worker)."""
    return VocabInfo(
        Path(request["path"]), request["vocab_type"], request.get("model"), request.get("pre"),
        request.get("name", ""), request.get("sha256"), request.get("n_tokens"), dict(request.get("special_ids", {})),
    )  # fmt: skip


def encode_fields(request: Request) -> dict[str, Any]:
    data, add_special, parse_special = request
    return {"text_b64": base64.b64encode(data).decode(), "add_special": add_special, "parse_special": parse_special}


# ---------------------------------------------------------------------------------------------------
# Answers (the program to tokconf)


def answer_to(line: bytes, request_id: int) -> dict[str, Any]:
    """The JSON object of an answer line, which must carry the request's id."""
    try:
        answer = json.loads(line)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested too deep, an int too long
        raise OutOfStep(f"answered a line that is not JSON: {line[:SHOWN]!r}") from None
    if not isinstance(answer, dict) or type(answer.get("id")) is not int or answer["id"] != request_id:
        raise OutOfStep(f"answered for another request (wanted id {request_id}): {line[:SHOWN]!r}")
    return answer


def _shown(answer: Mapping[str, Any]) -> str:
    return json.dumps(answer)[:SHOWN]


def _the_one_key(answer: Mapping[str, Any], what: str, keys: tuple[str, ...]) -> str:
    """Which of the keys an answer may carry it carries: exactly one, or the answer is bad."""
    present = [key for key in keys if key in answer]
    if len(present) != 1:
        wanted = ", ".join(f"`{key}`" for key in keys)
        raise BadAnswer(f"the {what} answer must hold exactly one of {wanted}: {_shown(answer)}")
    return present[0]


def _text(answer: Mapping[str, Any], key: str, what: str) -> str:
    value = answer[key]
    if not isinstance(value, str):
        raise BadAnswer(f"the {what} answer's `{key}` must be a string: {_shown(answer)}")
    return kept(value)


def _b64(value: object, what: str) -> bytes:
    if not isinstance(value, str):
        raise BadAnswer(f"{what}: not base64: {str(value)[:80]!r}")
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        raise BadAnswer(f"{what}: not base64: {value[:80]!r}") from None


@dataclass(frozen=True)
class Fault:
    """`{"fault": reason}` (protocol 2), to any request: the program broke on it — its own exception,
    reported. That request's check is an error with the reason; the program is not restarted, and a
    fault does not count toward the give-up (it is an answer, in step)."""

    reason: str

    def fields(self) -> dict[str, Any]:
        return {"fault": self.reason}


@dataclass(frozen=True)
class Hello:
    """The handshake's answer: what the program speaks and supports. Protocol 2 adds the input classes
    it cannot be given, whether it takes `encode_batch`, the input length limit (`max_bytes`) past
    which it may decline inputs as `too-long`, whether it is (or wraps) llama.cpp, whose refusal
    to load a vocabulary the recorded build loaded is then a failure, and whether it holds several
    vocabularies at once, each named by the `handle` tokconf gives it in `load` (`HANDLE`)."""

    protocol: int  # 1 or 2: a program that does not say 2 is spoken to in protocol 1
    name: str | None
    vocab_types: tuple[str, ...]
    unsupported: frozenset[InputClass] = frozenset()  # protocol 2: input classes it cannot be given
    batch: bool = False
    max_bytes: int | None = None
    llama_cpp: bool = False
    handles: bool = False

    def fields(self) -> dict[str, Any]:
        unsupported = [c.value for c in InputClass if c in self.unsupported]
        found: dict[str, Any] = {"protocol": self.protocol, "name": self.name, "vocab_types": list(self.vocab_types)}
        found |= {"unsupported": unsupported, "batch": self.batch, "llama_cpp": self.llama_cpp}
        found |= {"handles": True} if self.handles else {}
        return found | ({"max_bytes": self.max_bytes} if self.max_bytes is not None else {})

    @classmethod
    def parse(cls, answer: Mapping[str, Any]) -> Hello:
        if "error" in answer and "vocab_types" not in answer:
            hint = answer.get("hint")
            raise HelloRefused(str(answer["error"]), hint if isinstance(hint, str) else None)
        protocol = 2 if answer.get("protocol") == PROTOCOL and type(answer["protocol"]) is int else 1
        name = answer.get("name")
        if name is not None and not isinstance(name, str):
            raise BadAnswer(f"the hello answer's `name` must be a string: {_shown(answer)}")
        types = answer.get("vocab_types")
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise BadAnswer(f"the hello answer has no `vocab_types` list: {_shown(answer)}")
        if protocol < 2:
            return cls(protocol, name, tuple(types))
        names = answer.get("unsupported", [])
        classes = {c.value: c for c in InputClass}
        if not isinstance(names, list) or not all(isinstance(n, str) and n in classes for n in names):
            raise BadAnswer(
                f"the hello answer's `unsupported` must list input classes ({', '.join(classes)}), not {names!r}"
            )
        flags = {key: answer.get(key, False) for key in ("batch", "llama_cpp", "handles")}
        if not all(type(value) is bool for value in flags.values()):
            raise BadAnswer(
                f"the hello answer's `batch`, `llama_cpp` and `handles` must be true or false: {_shown(answer)}"
            )
        declared = frozenset(classes[n] for n in names)
        return cls(protocol, name, tuple(types), declared, flags["batch"], max_bytes(answer, "hello"),
                   flags["llama_cpp"], flags["handles"])  # fmt: skip


def max_bytes(answer: Mapping[str, Any], what: str) -> int | None:
    """A declared input length limit: a count of bytes of at least `MIN_DECLARED_LIMIT` (a smaller one
    would decline ordinary text as `too-long`), or None when not declared."""
    limit = answer.get("max_bytes")
    if limit is None:
        return None
    if type(limit) is not int or limit < MIN_DECLARED_LIMIT:
        raise BadAnswer(f"the {what} answer's `max_bytes` must be a count of at least {MIN_DECLARED_LIMIT}: "
                        f"{_shown(answer)}")  # fmt: skip
    return limit


@dataclass(frozen=True)
class Loaded:
    """`{"ok": true, …}`: the vocabulary is loaded. Protocol 2: the optional ops it answers for this
    vocabulary, and what it says it loaded (compared with llama.cpp's, `differences`)."""

    ops: frozenset[Op] = frozenset()
    n_tokens: int | None = None
    special_ids: Mapping[str, int] = field(default_factory=dict)
    max_bytes: int | None = None  # an input length limit for this vocabulary (else the handshake's)

    def fields(self) -> dict[str, Any]:
        limit = {"max_bytes": self.max_bytes} if self.max_bytes is not None else {}
        return {"ok": True, "ops": [op.value for op in Op if op in self.ops], **limit}

    def differences(self, vocab: VocabInfo) -> list[str]:
        """How what the program says it loaded differs from llama.cpp's vocabulary: nothing unless its
        tokens differ (`n_tokens`), for only then is it another vocabulary; then every difference it
        said, the special ids too. A special id alone that differs is a fact (`facts`), not this."""
        if self.n_tokens is None or self.n_tokens == vocab.n_tokens:
            return []
        found = [f"n_tokens {self.n_tokens!r} (llama.cpp: {vocab.n_tokens})"]
        for name, token in sorted(self.special_ids.items()):
            if name in vocab.special_ids and token != vocab.special_ids[name]:
                found.append(f"{name} {token!r} (llama.cpp: {vocab.special_ids[name]})")
        return found

    def facts(self) -> ExposedFacts:
        """The facts its `special_ids` say (`bos`, `eos`): checked as the `facts` answer's are, so a
        program that says its config's EOS (128009 against the GGUF's 128001) fails that fact, and its
        ids are still checked. The other special ids name the vocabulary, and are not compared."""
        return {fact: self.special_ids[fact.value] for fact in (Fact.BOS, Fact.EOS) if fact.value in self.special_ids}

    @classmethod
    def parse(cls, answer: Mapping[str, Any], protocol: int) -> Loaded:
        if protocol < 2:
            return cls()
        ops = answer.get("ops", [])
        if not isinstance(ops, list) or not all(isinstance(op, str) for op in ops):
            raise BadAnswer(f"the load answer's `ops` must be a list of names: {_shown(answer)}")
        optional = {op.value: op for op in OPTIONAL_OPS}
        n_tokens = answer.get("n_tokens")
        if n_tokens is not None and not is_token_id(n_tokens):
            raise BadAnswer(f"the load answer's `n_tokens` must be a count: {_shown(answer)}")
        special_ids = answer.get("special_ids", {})
        if not isinstance(special_ids, dict) or not all(is_token_id(i, allow_none=True) for i in special_ids.values()):
            raise BadAnswer(f"the load answer's `special_ids` must map names to token ids: {_shown(answer)}")
        return cls(frozenset(optional[op] for op in ops if op in optional), n_tokens, special_ids,
                   max_bytes(answer, "load"))  # fmt: skip


@dataclass(frozen=True)
class LoadDeclined:
    """`{"ok": false, "error": reason}`: the program does not serve this vocabulary (unsupported);
    with `"load_refused": true` (protocol 2), the llama.cpp it wraps refused to load it (a failure where
    the recording's build loaded it), as every decline of a program whose handshake says `llama_cpp`."""

    reason: str
    load_refused: bool = False

    def fields(self) -> dict[str, Any]:
        return {"ok": False, "error": self.reason} | ({"load_refused": True} if self.load_refused else {})


LoadAnswer = Loaded | LoadDeclined | Fault


def parse_load(answer: Mapping[str, Any], protocol: int) -> LoadAnswer:
    if _the_one_key(answer, "load", ("ok", "fault") if protocol >= 2 else ("ok",)) == "fault":
        return Fault(_text(answer, "fault", "load"))
    if answer["ok"] is True:
        return Loaded.parse(answer, protocol)
    if answer["ok"] is not False:
        raise BadAnswer(f"the load answer's `ok` must be true or false: {_shown(answer)}")
    reason = answer.get("error")
    said = kept(reason) if isinstance(reason, str) and reason else "the program did not load it"
    return LoadDeclined(said, answer.get("load_refused") is True and protocol >= 2)


@dataclass(frozen=True)
class Ids:
    """`{"ids": [...]}`: the input's token ids."""

    ids: list[int]

    def fields(self) -> dict[str, Any]:
        return {"ids": self.ids}


@dataclass(frozen=True)
class Refuses:
    """`{"error": reason}`: the program refuses the input, as llama.cpp does where it aborts (judged
    against the recording; the reason is shown, not compared)."""

    reason: str

    def fields(self) -> dict[str, Any]:
        return {"error": self.reason}


@dataclass(frozen=True)
class CannotTake:
    """`{"unsupported": CLASS}` (protocol 2): the program cannot be given this input at all. A `reason`
    (which `other` should give) is what the report shows, as for a Python `Unsupported`'s message."""

    input_class: InputClass
    reason: str | None = None

    def fields(self) -> dict[str, Any]:
        reason = {"reason": self.reason} if self.reason is not None else {}
        return {"unsupported": self.input_class.value, **reason}


@dataclass(frozen=True)
class Aborts:
    """`{"aborted": reason}` (protocol 2): the llama.cpp the program wraps aborted on this input (a C++
    exception or GGML_ASSERT it caught). It agrees where the recording holds llama.cpp's abort, and is
    a failure, named as an abort, where llama.cpp gave ids: the program's llama.cpp aborts where the
    recorded one does not. A program that cannot catch the abort may die instead: the same verdicts,
    at the cost of a restart (docs/line-protocol.md, section 5). tokconf's worker never writes it: a
    Python port's `Refused` is its refusal, and a native abort takes the worker down."""

    reason: str


EncodeAnswer = Ids | Refuses | Aborts | CannotTake | Fault


def parse_encode(answer: Mapping[str, Any], protocol: int, size: int) -> EncodeAnswer:
    """An encode answer to a `size`-byte input; ids past the bound (`tokconf.oracles.bound`) are a bad answer,
    dropped at once, whatever they are."""
    key = _the_one_key(
        answer, "encode", ("ids", "error", "aborted", "unsupported", "fault") if protocol >= 2 else ("ids", "error")
    )
    if key == "ids":
        ids = answer["ids"]
        if isinstance(ids, list) and len(ids) > max_ids(size):
            raise BadAnswer(over_bound(len(ids), size))
        if not isinstance(ids, list) or not are_token_ids(ids):
            raise BadAnswer(f"`ids` is not a list of token ids: {_shown(answer)}")
        return Ids(ids)
    if key == "error":
        return Refuses(kept(str(answer["error"])))  # any error is a refusal; its reason is only shown
    if key == "fault":
        return Fault(_text(answer, "fault", "encode"))
    if key == "aborted":
        return Aborts(_text(answer, "aborted", "encode"))
    name = _text(answer, "unsupported", "encode")
    cls = InputClass.named(name)
    if cls is None:
        raise BadAnswer(f"answered unsupported ({name!r}), which is no input class of docs/line-protocol.md")
    reason = answer.get("reason")
    return CannotTake(cls, kept(reason) if isinstance(reason, str) else None)


def encode_outcome(answer: EncodeAnswer, declared: frozenset[InputClass]) -> Outcome:
    """What an encode answer means for the verdict. An `unsupported` answer must name a class the
    handshake declared (else it is an error); whether the class fits the input is checked where every
    front end's declines are (`tokconf.checking.engine`)."""
    if isinstance(answer, Ids):
        return answer.ids
    if isinstance(answer, Refuses):
        return Refusal(answer.reason)
    if isinstance(answer, Fault):
        return Refusal(answer.reason, RefusalKind.BROKEN)
    if isinstance(answer, Aborts):
        return Refusal(answer.reason, RefusalKind.ABORTED)
    cls = answer.input_class
    if cls not in declared:
        names = ", ".join(c.value for c in InputClass if c in declared) or "none"
        why = f"answered unsupported ({cls.value!r}) without declaring it in the handshake (declared: {names})"
        return Refusal(why, RefusalKind.BROKEN)
    return Refusal(answer.reason or "", RefusalKind.UNSUPPORTED, cls)


@dataclass(frozen=True)
class Facts:
    """`{"facts": {...}}`: the vocab facts the program uses, each typed as llama.cpp's (`Fact.exposed`:
    `1` is no flag and `1.0` no id); a fact left out, or null, is not exposed."""

    values: ExposedFacts

    def fields(self) -> dict[str, Any]:
        return {"facts": {fact.value: value for fact, value in self.values.items()}}

    @classmethod
    def parse(cls, answer: Mapping[str, Any]) -> Facts | Fault:
        if _the_one_key(answer, "facts", ("facts", "fault")) == "fault":
            return Fault(_text(answer, "fault", "facts"))
        given = answer["facts"]
        if not isinstance(given, dict):
            raise BadAnswer(f"the facts answer's `facts` must be an object: {_shown(answer)}")
        try:
            return cls({fact: fact.exposed(given[fact.value]) for fact in Fact if given.get(fact.value) is not None})
        except ValueError as wrong:
            raise BadAnswer(str(wrong)) from None


def pieces_fields(pieces: list[bytes]) -> dict[str, Any]:
    """A `token_to_piece` answer in its packed form: the pieces one after another, base64 once, and
    their lengths (a vocabulary's 100,000 pieces cost one base64 string, not 100,000)."""
    return {"pieces_packed_b64": base64.b64encode(b"".join(pieces)).decode(), "lengths": [len(p) for p in pieces]}


def parse_pieces(answer: Mapping[str, Any], count: int) -> list[bytes] | Refuses | Fault:
    """A `token_to_piece` answer: one piece per id asked, base64 each (`pieces_b64`) or packed
    (`pieces_packed_b64` with their `lengths`)."""
    forms = ("pieces_b64", "pieces_packed_b64", "error", "fault")
    key = _the_one_key(answer, "token_to_piece", forms)
    if key in ("error", "fault"):
        return Refuses(str(answer[key])) if key == "error" else Fault(_text(answer, key, "token_to_piece"))
    if key == "pieces_packed_b64":
        return _unpacked(answer, count)
    given = answer["pieces_b64"]
    if not isinstance(given, list) or len(given) != count:
        got = len(given) if isinstance(given, list) else "no"
        raise BadAnswer(f"token_to_piece answered {got} pieces for {count} ids")
    return [_b64(piece, "token_to_piece") for piece in given]


def _unpacked(answer: Mapping[str, Any], count: int) -> list[bytes]:
    packed, lengths = _b64(answer["pieces_packed_b64"], "token_to_piece"), answer.get("lengths")
    if not isinstance(lengths, list) or len(lengths) != count or not are_token_ids(lengths):
        raise BadAnswer(f"token_to_piece answered no list of {count} `lengths` for its packed pieces")
    if sum(lengths) != len(packed):
        raise BadAnswer(
            f"token_to_piece's `lengths` add up to {sum(lengths)}, its packed pieces are {len(packed)} bytes"
        )
    ends = list(itertools.accumulate(lengths))
    return [packed[end - length : end] for end, length in zip(ends, lengths, strict=True)]


def parse_text(answer: Mapping[str, Any]) -> bytes | Refuses | Fault:
    """A `detokenize` answer: the text, base64."""
    key = _the_one_key(answer, "detokenize", ("text_b64", "error", "fault"))
    if key != "text_b64":
        return Refuses(str(answer[key])) if key == "error" else Fault(_text(answer, key, "detokenize"))
    return _b64(answer["text_b64"], "detokenize")
