"""What a set of recordings gates: the tokenizer models and pre-tokenizer names llama.cpp knows, and
which of them the recordings exercise, so a port author sees what is and is not covered.

What llama.cpp knows is read from the build's own `src/llama-vocab.cpp` (`llama_vocab::impl::load`):
the `tokenizer_model == "…"` branches, and the `tokenizer_pre == "…"` chain with the
`LLAMA_VOCAB_PRE_TYPE_*` each name selects. A recording's model and pre name are its provenance's;
the pre name counts for BPE vocabularies only, as in `load` ("for now, only BPE models have
pre-tokenizers": the others get the default type whatever their file says).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..builds.fetch import require_source, source_dir
from ..core.errors import TokconfError
from .yaml_io import read_head

MODEL = re.compile(r'tokenizer_model == "([^"]*)"')
PRE = re.compile(r'tokenizer_pre == "([^"]*)"|pre_type\s*=\s*LLAMA_VOCAB_PRE_TYPE_(\w+)')
ABSENT_PRE = "default"  # llama.cpp's choice for a vocab without `tokenizer.ggml.pre` (with a warning)


@dataclass(frozen=True)
class Known:
    """The tokenizer models and pre-tokenizer names (name -> pre type) of one llama.cpp build."""

    build: int
    models: tuple[str, ...]
    pre_types: dict[str, str]


def known_tokenizers(build: int) -> Known:
    """Parsed from the fetched build's `src/llama-vocab.cpp`."""
    require_source(build)
    path = source_dir(build) / "src" / "llama-vocab.cpp"
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as error:
        raise TokconfError(f"cannot read {path}: {error.strerror}", "re-fetch the build (--force)") from None
    pre_types: dict[str, str] = {}
    waiting: list[str] = []
    for name, pre_type in PRE.findall(source):
        if name:
            waiting.append(name)
        else:
            pre_types.update({n: pre_type for n in waiting if n not in pre_types})
            waiting = []
    models = tuple(sorted(set(MODEL.findall(source))))
    if not models or not pre_types:
        raise TokconfError(f"{path} names no tokenizer models or pre-tokenizers", "is this a llama.cpp tree?")
    return Known(build, models, pre_types)


@dataclass
class Coverage:
    """Per model and per pre name, the recorded vocabularies that exercise it."""

    known: Known
    models: dict[str, list[str]] = field(default_factory=dict)
    pre_names: dict[str, list[str]] = field(default_factory=dict)
    unknown: dict[str, list[str]] = field(default_factory=dict)  # recorded names this build does not know

    @property
    def pre_types(self) -> dict[str, list[str]]:
        """Per pre type, the recorded vocabularies."""
        found: dict[str, list[str]] = {t: [] for t in sorted(set(self.known.pre_types.values()))}
        for name, vocabs in self.pre_names.items():
            found[self.known.pre_types[name]] += vocabs
        return found


def vocab_heads(recordings: list[Path]) -> list[tuple[str, str | None, str | None]]:
    """Each recording's vocabulary name, tokenizer model and pre name, from its head alone."""
    out = []
    for path in recordings:
        vocab = read_head(path, b"cases:", "recording")["provenance"]["vocab"]
        out.append((str(vocab["name"]), vocab.get("model"), vocab.get("pre")))
    return out


def coverage(recordings: list[Path], known: Known) -> Coverage:
    """Which of what `known` lists the recordings exercise (their heads only are read)."""
    result = Coverage(known, {m: [] for m in known.models}, {n: [] for n in sorted(known.pre_types)})
    for path in recordings:
        head = read_head(path, b"cases:", "recording")
        if "load_error" in head.get("facts", {}):  # a vocab this build refuses to load exercises nothing
            continue
        vocab, bpe = head["provenance"]["vocab"], head.get("facts", {}).get("vocab_type") == "bpe"
        checks = [("model", vocab["model"] or "", result.models)]
        if bpe:
            checks.append(("pre", vocab["pre"] or ABSENT_PRE, result.pre_names))
        for kind, name, table in checks:
            if name in table:
                table[name].append(vocab["name"])
            else:
                result.unknown.setdefault(f"{kind} {name}", []).append(vocab["name"])
    return result


def describe(result: Coverage) -> list[str]:
    """The lines `tokconf coverage` prints: what is gated, then what is not."""
    known = result.known
    lines = []
    for title, table in (
        ("tokenizer models", result.models),
        ("pre-tokenizer types", result.pre_types),
        ("pre-tokenizer names", result.pre_names),
    ):
        covered = {name: vocabs for name, vocabs in table.items() if vocabs}
        lines.append(f"{title} known to b{known.build}: {len(table)}; recorded: {len(covered)}")
        for name, vocabs in covered.items():
            lines.append(f"  {name}: {', '.join(sorted(set(vocabs)))}")
        missing = [name for name, vocabs in table.items() if not vocabs]
        if missing:
            lines.append(f"  not recorded (no recording gates a port of these): {', '.join(missing)}")
    for what, vocabs in sorted(result.unknown.items()):
        lines.append(f"recorded but unknown to b{known.build}: {what} ({', '.join(vocabs)})")
    return lines
