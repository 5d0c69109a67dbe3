"""What `--explain` finds on realistic buggy ports, whether it files each case right, and its cost.

    PYTHONPATH=tests python benchmarks/explain.py [PORT ...]

The ports (`tests/real_ports.py`) imitate real libraries (a JavaScript regex's `\\s`, an NFC-normalising
Python port, tiktoken-style special tokens, a GGUF runtime applying GPT-2's byte mapping to an SPM
vocabulary, …), each with planted bugs that can be switched off one at a time. Per port it prints
the check's time and the explanation's (and their ratio: the target is at most 2x), the causes found
with their kinds and case counts, and the misfiled cases: a case under causes of kinds K1..Kn must
pass once the port's bugs of those kinds are switched off (the kinds' fix, applied to the port
itself, not replayed by the explainer); a case under a kind no planted bug has is misfiled too.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import real_ports  # tests/: run with PYTHONPATH=tests
from tokconf.checking.contract import Verdict
from tokconf.checking.engine import Selection, check_file
from tokconf.checking.explain import explain_file
from tokconf.checking.xfail import ExpectedFailures
from tokconf.implementations.resolve import resolve

BUNDLED = Path(__file__).resolve().parent.parent / "recordings" / "b11192"


def main(names: list[str]) -> None:
    for name in names or list(real_ports.PORTS):
        measure(real_ports.PORTS[name])


def measure(spec: real_ports.PortSpec) -> None:
    impl = resolve(f"real_ports:{spec.name}", None)  # every planted bug on
    try:
        started = time.monotonic()
        checked = check_file(BUNDLED / f"{spec.vocab}.yaml", impl, Selection(), ExpectedFailures(), None)
        checking = time.monotonic() - started
        started = time.monotonic()
        explanation = explain_file(checked, impl)
        explaining = time.monotonic() - started
    finally:
        impl.close()
    failed = [r for r in checked.results if r.verdict is Verdict.FAILED]
    print(f"{spec.name} on {spec.vocab}: {len(failed)} failed cases")
    print(f"  check {checking:.1f} s, explain {explaining:.1f} s ({explaining / checking:.2f}x), "
          f"{explanation.shrinks} shrinks")  # fmt: skip
    kinds_of: dict[int, set[str]] = {}
    for cause in explanation.causes:
        modes = ", ".join(f"{m} {n}" for m, n in sorted(Counter(r.section for r in cause.cases).items()))
        print(f"  {len(cause.cases):5} cases  {cause.kind.value:20} ({modes}) {cause.label[:90]}")
        for result in cause.cases:
            kinds_of.setdefault(id(result), set()).add(cause.kind.value)
    planted = set(spec.bugs.values())
    found = {c.kind.value for c in explanation.causes}
    print(f"  planted kinds found: {len(planted & found)}/{len(planted)}"
          + (f"; missed {sorted(planted - found)}" if planted - found else "")
          + (f"; unplanted {sorted(found - planted)}" if found - planted else ""))  # fmt: skip
    explained = [r for r in failed if id(r) in kinds_of]
    misfiled = real_ports.misfiled(spec, checked.vocab, explained, kinds_of)
    print(
        f"  misfiled: {len(misfiled)} of {len(explained)} explained cases; unexplained: {len(explanation.unexplained)}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
