"""Replaying mechanisms: what a port with these deviations from llama.cpp would answer.

`Judge` is llama.cpp's answer for any input: the recorded answers first (every case the check ran,
reused), then the reference tokenizer where the recording is of the reference's own build, else the
live llama.cpp of the recording's build (crash-isolated), never the implementation under test.

`Model.predict` replays a set of mechanisms: the input ones on the input, then llama.cpp's answer
(or, with tokenizer mechanisms, the reference tokenizer with those differences, a "mutant"), then
the output ones on the ids, and the verdict ones over all.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from ...core.facts import VocabFacts
from ...core.outcome import MODES, Mode, Outcome, Refusal, Request
from .kinds import (
    Kind,
    MappedBeforeSplit,
    Mechanism,
    MergeOrder,
    MergesIgnored,
    Piece,
    RawRun,
    Reclassed,
    Refusing,
    Resplit,
    Segmenting,
    SpacePrefix,
    SpecialsCut,
    SpecialStrip,
    Stage,
    SymbolCut,
    TokenizerModel,
    Widening,
    WordPieceCleaning,
)

Backend = Callable[[list[Request]], list[Outcome]]
Edges = Callable[[bool], tuple[list[int], list[int]]]  # add_special -> the ids llama.cpp puts before and after
KEPT_MUTANTS = 16  # mutant tokenizers kept (each with its own word cache)


class Judge:
    """llama.cpp's answers, asked once per distinct request."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.known: dict[Request, Outcome] = {}

    def remember(self, request: Request, outcome: Outcome) -> None:
        self.known[request] = outcome

    def answers(self, requests: Sequence[Request]) -> list[Outcome]:
        missing = list(dict.fromkeys(r for r in requests if r not in self.known))
        if missing:
            for request, outcome in zip(missing, self.backend(missing), strict=True):
                self.known[request] = outcome
        return [self.known[r] for r in requests]


def reference_backend(tokenizer: Any) -> Backend:
    """The reference tokenizer as a judge; its `LlamaAborts` are llama.cpp's aborts: refusals."""
    from tokconf_reference.errors import LlamaAborts

    def answers(requests: list[Request]) -> list[Outcome]:
        out: list[Outcome] = []
        for data, add_special, parse_special in requests:
            try:
                out.append(tokenizer.encode(data, add_special, parse_special))
            except LlamaAborts as refusal:
                out.append(Refusal(str(refusal)))
        return out

    return answers


class Mutants:
    """The reference tokenizer with a port's tokenizer-stage deviations, one per combination used."""

    def __init__(self, reference: Any) -> None:
        self.reference = reference  # a tokconf_reference.Tokenizer, or None where it cannot read the vocab
        self.made: dict[str, Backend] = {}  # by the mechanisms' parameters, the most recent last

    @property
    def is_bpe(self) -> bool:
        from tokconf_reference.bpe import BytePairEncoder

        return self.reference is not None and isinstance(self.reference.encoder, BytePairEncoder)

    def backend(self, mechanisms: Sequence[Mechanism]) -> Backend | None:
        """A judge for the mutant, or None where the reference cannot carry these deviations."""
        if self.reference is None:
            return None
        key = repr(sorted(map(repr, mechanisms)))  # a mechanism that grew is another mutant
        backend = self.made.pop(key, None)
        if backend is None:
            mutant = self._mutate(mechanisms)
            if mutant is None:
                return None
            backend = reference_backend(mutant)
            if len(self.made) >= KEPT_MUTANTS:
                del self.made[next(iter(self.made))]  # the least recently used
        self.made[key] = backend
        return backend

    @property
    def unknown(self) -> int:
        """The vocabulary's unknown token (WordPiece's [UNK], else the first typed unknown), or -1."""
        from tokconf_reference.wpm import WordPieceEncoder

        if self.reference is None:
            return -1
        encoder = self.reference.encoder
        return encoder.unk_id if isinstance(encoder, WordPieceEncoder) else _unknown(self.reference, -1)

    def raw_word(self, data: bytes) -> list[int] | None:
        """The ids of raw bytes merged as one word by the vocabulary's byte-level BPE (each byte its
        printable stand-in, as unicode_byte_encoding_process maps it), or None where the vocabulary
        has no byte-level BPE or no token for one of them (refact has none for some bytes)."""
        from tokconf_reference.bpe import SCAN_LIMIT, byte_level

        encoder = self.reference.encoder if self.is_bpe else None
        if encoder is None or not encoder.byte_encode:
            return None
        symbols = list(byte_level(data))
        if len(symbols) > 1:
            symbols = encoder._merge(symbols) if len(symbols) > SCAN_LIMIT else encoder._merge_short(symbols)
        ids = [encoder.token_to_id.get(symbol) for symbol in symbols]
        return [i for i in ids if i is not None] if None not in ids else None  # a byte without a token: not replayed

    def words(self, text: bytes) -> list[bytes] | None:
        """The vocabulary's pre-tokenizer words of a valid UTF-8 text (the reference's regexes), or
        None where the vocabulary has no BPE pre-tokenizer the reference carries."""
        from tokconf_reference.pretokenize import split

        if not self.is_bpe:
            return None
        encoder = self.reference.encoder
        return [w.encode("utf-8") for w in split(text.decode("utf-8"), encoder.regexes, encoder.classes)]

    def _mutate(self, mechanisms: Sequence[Mechanism]) -> Any:
        from tokconf_reference.pretokenize import LLAMA_CLASSES, Classes, reclassified

        mutant = copy.copy(self.reference)
        mutant._recent = {}  # the fragment cache holds the unchanged tokenizer's ids
        encoder_changes: dict[str, Any] = {}
        flips: dict[int, bool] = {}
        table: dict[int, str] = {}
        bound = -1
        if not self._retokenized(mutant, mechanisms):
            return None
        for mechanism in sorted(mechanisms, key=repr):  # the same mutant whatever the order
            if isinstance(mechanism, (SpacePrefix, TokenizerModel, WordPieceCleaning)):
                continue  # set by _retokenized
            if isinstance(mechanism, SymbolCut):
                if self.reference.kind != "spm":
                    return None
                mutant.encoder = copy.copy(self.reference.encoder)
                mutant.encoder.cache = {}
                mutant.encoder.cut_valid = True
                continue
            if isinstance(mechanism, SpecialStrip):
                from tokconf_reference.tokenizer import ATTR_LSTRIP, ATTR_RSTRIP

                mutant.attrs = [attr & ~(ATTR_LSTRIP | ATTR_RSTRIP) for attr in mutant.attrs]
                continue
            if isinstance(mechanism, SpecialsCut):
                mutant.cut, mutant.cut_rank = dict(mutant.cut), dict(mutant.cut_rank)
                mutant.any_special, mutant.by_head = dict(mutant.any_special), dict(mutant.by_head)
                parse = mechanism.parse_special
                if mechanism.kind is Kind.SPECIAL_NOT_PARSED:
                    tokens = [t for t in mutant.cut[parse] if t not in mechanism.tokens]
                else:  # a token llama.cpp made normal (phi-3's `</s>`) has no special text yet
                    mutant.special_bytes = {**mutant.special_bytes, **mechanism.tokens}
                    added = set(mutant.cut[parse]) | set(mechanism.tokens)
                    tokens = sorted(added, key=lambda t: -len(mutant.special_bytes[t]))  # cut longest first
                mutant.index_cut(parse, tokens)
            elif not self.is_bpe:
                return None
            elif isinstance(mechanism, Reclassed):  # both directions' flips in one table
                flips |= mechanism.flips
            elif isinstance(mechanism, Widening):
                table |= mechanism.table()
                regexes = encoder_changes.get("regexes", self.reference.encoder.regexes)
                encoder_changes["regexes"] = mechanism.regexes(regexes)
            elif isinstance(mechanism, Resplit):
                # on the regexes another switch left (memvanta's scanner breaks two of gpt-2's rules)
                current = encoder_changes.get("regexes", self.reference.encoder.regexes)
                changed = mechanism.rule.regexes(current)  # None: nothing to change; [] is no-split's
                encoder_changes["regexes"] = current if changed is None else changed
            elif isinstance(mechanism, MergesIgnored):
                encoder_changes["ignore_merges"] = mechanism.ignore
                bound = mechanism.over
            elif isinstance(mechanism, MergeOrder):
                encoder_changes["tie_break"] = mechanism.tie_break
            elif isinstance(mechanism, MappedBeforeSplit):
                encoder_changes["map_before_split"] = True
        if flips or table:
            base = reclassified(flips) if flips else LLAMA_CLASSES
            collapse, plain = list(base.collapse), dict(base.plain)
            for point, stand_in in table.items():
                collapse[point] = stand_in
                if point in plain:
                    plain[point] = stand_in
            encoder_changes["classes"] = Classes(collapse, plain, base.ascii_as_is)
        if encoder_changes:
            mutant.encoder = copy.copy(self.reference.encoder)
            mutant.encoder.cache = {}
            for name, value in encoder_changes.items():
                setattr(mutant.encoder, name, value)
            if bound >= 0:
                mutant.encoder.encode_word = _bounded_lookup(mutant.encoder, bound)
        return mutant

    def _retokenized(self, mutant: Any, mechanisms: Sequence[Mechanism]) -> bool:
        """The switches outside the BPE encoder: SentencePiece's space prefix, another tokenizer model
        on the vocabulary (WordPiece on a Unigram one) and WordPiece's cleaning steps. False where
        the vocabulary's model has no such switch."""
        from tokconf_reference.wpm import WordPieceEncoder

        cleaning = next((m for m in mechanisms if isinstance(m, WordPieceCleaning)), None)
        model = next((m for m in mechanisms if isinstance(m, TokenizerModel)), None)
        for mechanism in mechanisms:
            if isinstance(mechanism, SpacePrefix):
                if self.reference.kind not in ("spm", "ugm"):
                    return False
                mutant.add_space_prefix = mechanism.add
                if self.reference.kind == "ugm":  # the Unigram encoder reads its own copy
                    mutant.encoder = copy.copy(mutant.encoder)
                    mutant.encoder.add_space_prefix = mechanism.add
        if model is not None or cleaning is not None:
            base = self.reference.encoder
            if model is None and not isinstance(base, WordPieceEncoder):
                return False
            unk = base.unk_id if isinstance(base, WordPieceEncoder) else _unknown(self.reference)
            lowercase = base.lowercase if isinstance(base, WordPieceEncoder) else True
            tokens = [t.encode("utf-8", "surrogateescape") for t in self.reference.tokens]
            mutant.encoder = WordPieceEncoder(tokens, unk, lowercase)
            if cleaning is not None:
                mutant.encoder = WordPieceEncoder(tokens, unk, lowercase, cleaning.cleaning())
        return True


def _unknown(reference: Any, default: int = 0) -> int:
    """The vocabulary's unknown token: the first typed unknown, else `default`."""
    from tokconf_reference.tokenizer import ATTR_UNKNOWN

    return next((t for t, attr in enumerate(reference.attrs) if attr & ATTR_UNKNOWN), default)


def _bounded_lookup(encoder: Any, over: int) -> Callable[[str], tuple[int, ...]]:
    """`encode_word` of a port whose whole-word lookup (ignore_merges) stops at `over` bytes: a
    longer word is merged pair by pair (a copy of the encoder without the flag, its own cache)."""
    whole = copy.copy(encoder)
    whole.ignore_merges, whole.cache = True, {}
    merged = copy.copy(encoder)
    merged.ignore_merges, merged.cache = False, {}

    def encode_word(word: str) -> tuple[int, ...]:
        longer = len(word.encode("utf-8", "surrogatepass")) > over
        return merged.encode_word(word) if longer else whole.encode_word(word)  # type: ignore[no-any-return]

    return encode_word


def edges_of(facts: VocabFacts) -> Edges:
    """The ids llama_tokenize_impl puts around a text with add_special: BOS if add_bos, EOS if
    add_eos; for WordPiece always [CLS] (its BOS) and [SEP], whatever add_bos and add_sep say (the
    WPM case of llama_tokenize_impl pushes special_bos_id and special_sep_id)."""
    ids = facts["special_ids"]
    wpm = facts["vocab_type"] == "wpm"

    def edges(add_special: bool) -> tuple[list[int], list[int]]:
        if not add_special:
            return [], []
        head = [ids["bos"]] if (wpm or facts["add_bos"]) and ids.get("bos", -1) >= 0 else []
        if wpm:
            return head, [ids["sep"]] if ids.get("sep", -1) >= 0 else []
        return head, [ids["eos"]] if facts["add_eos"] and ids.get("eos", -1) >= 0 else []

    return edges


class Model:
    """Predicts a port's answers from llama.cpp's and a set of mechanisms. `edges` are the ids
    llama.cpp adds around a text with add_special (BOS/CLS before, EOS/SEP after: the facts), which
    a port tokenizing in pieces (`Segmenting`) puts around its pieces."""

    def __init__(self, judge: Judge, mutants: Mutants, edges: Edges = lambda _: ([], [])) -> None:
        self.judge = judge
        self.mutants = mutants
        self.edges = edges

    def predict_many(
        self, mechanisms: Sequence[Mechanism], inputs: Sequence[bytes], mode: Mode
    ) -> list[Outcome | None]:
        """The answers of a port with these deviations, in one mode; None where they cannot be
        replayed (a tokenizer deviation on a vocabulary the reference cannot carry)."""
        flags = MODES[mode]
        staged = sorted(mechanisms, key=lambda m: (m.stage.value, not m.FIRST))
        transformed = list(inputs)
        for mechanism in staged:
            if mechanism.stage is Stage.INPUT:
                transformed = [mechanism.transform(d) for d in transformed]
        tokenizer = [m for m in staged if m.stage is Stage.TOKENIZER]
        backend: Backend = self.judge.answers
        if tokenizer:
            mutant = self.mutants.backend(tokenizer)
            if mutant is None:
                return [None] * len(inputs)
            backend = mutant
        segmenting = next((m for m in staged if isinstance(m, Segmenting)), None)
        pieces = [segmenting.segments(d, mode, self.mutants.words) if segmenting else None for d in transformed]
        requests = [(d, *flags) for d, cut in zip(transformed, pieces, strict=True) if cut is None]
        texts = list(dict.fromkeys(p for cut in pieces if cut for p in cut if isinstance(p, bytes)))
        parse = flags[1] and (segmenting is None or segmenting.parses_pieces)
        answers = iter(backend(requests + [(t, False, parse) for t in texts]))
        whole = iter([next(answers) for _ in requests])
        of_piece: dict[Piece, Outcome | None] = dict(zip(texts, answers, strict=True))
        runs = {p for cut in pieces if cut for p in cut if isinstance(p, RawRun)}
        of_piece |= {run: self.mutants.raw_word(run.data) for run in runs}
        head, tail = self.edges(flags[0])
        out: list[Outcome | None] = []
        for data, cut in zip(inputs, pieces, strict=True):
            answer = next(whole) if cut is None else _joined(cut, of_piece, head, tail)
            for mechanism in staged:
                if isinstance(mechanism, Refusing) and mechanism.refuses(data):
                    answer = Refusal(mechanism.label())
                elif isinstance(answer, list) and mechanism.stage is Stage.OUTPUT and mechanism.applies(data, mode):
                    answer = mechanism.apply(answer)  # a BOS added only in the modes it was seen in
            out.append(answer)
        return out

    def predict(self, mechanisms: Sequence[Mechanism], data: bytes, mode: Mode) -> Outcome | None:
        return self.predict_many(mechanisms, [data], mode)[0]


def _joined(
    pieces: list[Piece], answers: dict[Piece, Outcome | None], head: list[int], tail: list[int]
) -> Outcome | None:
    """A port's answer made of pieces tokenized apart: a refused piece refuses the whole, one that
    cannot be replayed (raw bytes in a vocabulary without byte-level BPE) makes it None."""
    ids = list(head)
    for piece in pieces:
        answer = [piece] if isinstance(piece, int) else answers[piece]
        if not isinstance(answer, list):
            return answer
        ids += answer
    return ids + tail
