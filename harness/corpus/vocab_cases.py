"""Cases derived from one vocabulary's own special tokens (ids `vocab/...`).

Special-token handling is where ports diverge most: llama.cpp cuts CONTROL and USER_DEFINED texts
out before pre-tokenizing (llama_vocab::impl::tokenizer_st_partition), longest first, and strips
whitespace around them by their LSTRIP/RSTRIP attributes. So every such text is recorded alone, and
the most important ones (the vocab's named special ids, its end-of-generation set, every token with
lstrip/rstrip, and a spread of the rest, at most `FOCUS` in all) also doubled, next to each other,
with each whitespace variant on either side, cut short (`<|im_start|`), after the BOS text, and in
the chat markup of every family whose markers the vocab has.
"""

from __future__ import annotations

from ..core.facts import VocabFacts
from .files import Case

FOCUS = 48

AROUND = {
    "space": " ",
    "2spaces": "  ",
    "nl": "\n",
    "tab": "\t",
    "crlf": "\r\n",
    "nbsp": "\xa0",
    "ideo": "\u3000",
}

CHATS: dict[str, tuple[str, ...]] = {
    "chatml": ("<|im_start|>", "system\nBe brief.", "<|im_end|>", "\n", "<|im_start|>", "user\nHi!",
               "<|im_end|>", "\n", "<|im_start|>", "assistant\n"),
    "llama3": ("<|begin_of_text|>", "<|start_header_id|>", "user", "<|end_header_id|>", "\n\nHi!",
               "<|eot_id|>", "<|start_header_id|>", "assistant", "<|end_header_id|>", "\n\n"),
    "gemma": ("<bos>", "<start_of_turn>", "user\nHi!", "<end_of_turn>", "\n", "<start_of_turn>", "model\n"),
    "phi3": ("<|user|>", "\nHi!", "<|end|>", "\n", "<|assistant|>", "\n"),
    "command-r": ("<BOS_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<|USER_TOKEN|>", "Hi!", "<|END_OF_TURN_TOKEN|>",
                  "<|START_OF_TURN_TOKEN|>", "<|CHATBOT_TOKEN|>"),
    "llama2": ("<s>", "[INST] Hi! [/INST]", " Hello.", "</s>"),
    "bert": ("[CLS]", " hi there ", "[SEP]", " second ", "[SEP]"),
    "deepseek": ("<｜begin▁of▁sentence｜>", "User: Hi!\n\nAssistant:"),
    "fim": ("<|fim_prefix|>", "def f(x):\n    ", "<|fim_suffix|>", "\n    return y", "<|fim_middle|>"),
}  # fmt: skip


# `<dna>` spans, for a vocab with the hybriddna tags (llm_tokenizer_hybriddna_session): whole k-mers,
# a padded tail, lower case, non-ACGT letters (<oov>), unclosed, empty, nested, reversed and mixed spans.
DNA_SPANS = (
    "<dna>ACGTAC</dna>", "<dna>ACGTACGTA</dna>", "<dna>acgtnn</dna>", "Sequence: <dna>GATTACA</dna> ends here.",
    "<dna>ACGTACGT", "<dna></dna>", "<dna>AC GT\nÄÖ</dna>x", "</dna>ACGTAC<dna>", "<dna><dna>ACGTAC</dna></dna>",
    "a<dna>TTTTTTGGGGGG</dna>b<dna>cc</dna>", "<dna>ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTAC</dna>",
)  # fmt: skip


def _focus(facts: VocabFacts, texts: dict[int, bytes]) -> list[int]:
    attrs: dict[int, str] = facts["token_attributes"]
    first = {i for i in facts["special_ids"].values() if i in texts} | {i for i in facts["eog_ids"] if i in texts}
    first |= {i for i in texts if "strip" in attrs.get(i, "")}
    chosen = sorted(first)[:FOCUS]
    rest = [i for i in sorted(texts) if i not in first]
    room = FOCUS - len(chosen)
    if room > 0 and rest:
        step = max(1, len(rest) // room)
        chosen += rest[::step][:room]
    return sorted(chosen)


def vocab_cases(facts: VocabFacts) -> list[Case]:
    """All special-token cases for a vocab, from its recorded facts; deterministic for given facts."""
    texts: dict[int, bytes] = {i: t for i, t in sorted(facts["special_texts"].items()) if t}
    cases = [Case(f"vocab/{i}-alone", t, "a special token's text alone") for i, t in texts.items()]
    focus = _focus(facts, texts)
    bos = facts["special_ids"]["bos"]
    for i in focus:
        text = texts[i]
        cases.append(Case(f"vocab/{i}-doubled", text + text, "the same special text twice"))
        for name, ws in AROUND.items():
            w = ws.encode()
            cases.append(Case(f"vocab/{i}-{name}-before", w + text + b"x", "whitespace before (lstrip)"))
            cases.append(Case(f"vocab/{i}-{name}-after", b"x" + text + w + b"y", "whitespace after (rstrip)"))
            cases.append(Case(f"vocab/{i}-{name}-both", w + w + text + w + w, "runs on both sides"))
        if len(text) > 2:
            cases.append(Case(f"vocab/{i}-head", text[:-1], "a marker missing its last byte"))
            cases.append(Case(f"vocab/{i}-tail", text[1:] + b" x", "a marker missing its first byte"))
        if bos in texts and bos != i:
            cases.append(Case(f"vocab/{i}-after-bos", texts[bos] + text + b"Hello", "text right after BOS"))
    for a, b in zip(focus, focus[1:] + focus[:1], strict=True):
        if a != b:
            cases.append(Case(f"vocab/{a}-{b}-adjacent", texts[a] + texts[b], "two special texts touching"))
    known = set(texts.values())
    for family, parts in CHATS.items():
        markers = [p.encode() for p in parts if p.startswith(("<", "[")) and p.endswith((">", "]"))]
        if markers and all(m in known for m in markers if m not in (b"[INST]", b"[/INST]")):
            cases.append(Case(f"vocab/chat-{family}", "".join(parts).encode(), f"{family} chat markup"))
    if {b"<dna>", b"</dna>"} <= known:
        cases += [Case(f"vocab/dna-{n}", span.encode(), "a <dna> span (hybriddna)") for n, span in enumerate(DNA_SPANS)]
    return cases
