"""The options of `tokconf check` and `tokconf fuzz`, declared once for both front ends.

The command line adds them as `--NAME`, the pytest plugin as `--tokconf-NAME` (check) and
`--tokconf-fuzz-NAME` (fuzz), with the same types, defaults, choices and help, so the two cannot
drift apart. Imports nothing heavy: the pytest plugin reads this table at every pytest start.
"""

from __future__ import annotations

import argparse
import fnmatch
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .builds.pins import DEFAULT_BUILD
from .checking.contract import DEFAULT_GRANTS, DEFAULT_MIN_COVERAGE, NO_GRANTS, grants_named
from .core.outcome import MODES
from .core.sandbox import SandboxMode
from .fuzz import PROFILES

N = TypeVar("N", int, float)


def _number(text: str, kind: Callable[[str], N], what: str = "a number") -> N:
    """`kind(text)`, or the argparse error that says what was expected."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive(kind: Callable[[str], Any], most: float = float("inf")) -> Callable[[str], Any]:
    """An argparse type: `kind`, above zero and at most `most` (a timeout of -1 or nan would never
    fire, one of 1e308 overflows the clock it is added to)."""

    def parse(text: str) -> Any:
        value = _number(text, kind)
        if not (0 < value <= most) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text} must be above zero" + (f" and at most {most:g}" * (most < 1e300)))
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def count(text: str) -> int:
    """An argparse type: a whole number from 0 up (`--jobs 0`: one per core; `--details 0`: none)."""
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be 0 or more")
    return value


def percentage(text: str) -> float:
    """An argparse type: a share from 0 to 100 (`80`, `99.5`), returned as a fraction."""
    value = _number(text, float)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text} must be from 0 to 100")
    return value / 100


def decline_classes(text: str) -> str:
    """An argparse type: an `--allow-decline` value, a comma list of classes a command can grant or
    `none` (`tokconf.checking.contract.grants_named`); kept as given, combined by `grants_of`."""
    try:
        grants_named(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def recordings_path(text: str) -> Path:
    """An argparse type: a recordings file or folder, `bundled` naming the installed ones
    (`tokconf.core.files.recordings_arg`, imported when an option is read, not at every pytest start)."""
    from .core.files import recordings_arg

    return recordings_arg(text)


def claim_pattern(text: str) -> str:
    """An argparse type: a `vocab/mode` pattern (shell-style globs), the mode one of the modes or `*`."""
    vocab, _, mode = text.partition("/")
    if not vocab or not mode or "/" in mode:
        raise argparse.ArgumentTypeError(f"{text!r} is not vocab/mode (e.g. qwen2/plain, gpt-2/*, */special)")
    if not any(fnmatch.fnmatchcase(m, mode) for m in MODES):
        raise argparse.ArgumentTypeError(f"{text!r}: mode {mode!r} matches none of {', '.join(MODES)}")
    return text


@dataclass(frozen=True)
class Option:
    name: str  # --NAME on the command line
    help: str
    type: Callable[[str], Any] = str
    default: Any = None
    many: bool = False  # repeatable, collected into a list
    flag: bool = False  # on when given, takes no value
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    pytest_name: str | None = None  # the pytest flag's suffix, when it is not NAME ("" for the bare prefix)

    def kwargs(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"help": self.help}
        if self.flag:
            return {**extra, "action": "store_true"}
        extra["metavar"] = self.metavar
        if self.many:
            extra.update(action="append", default=[])
        else:
            extra["default"] = self.default
        if self.type is not str:
            extra["type"] = self.type
        if self.choices:
            extra["choices"] = list(self.choices)
        return extra


MAX_TIMEOUT = 86400.0  # a day: longer is a typo, and would overflow the deadlines it is added to
IMPL_HELP = (
    "reference, a registered name (NAME:ARG for one taking an argument), module:factory (module:factory:ARG: "
    "factory(ARG) is the factory), 'cmd:PROGRAM ARGS', "
    "llama.cpp@N, llama.cpp:PATH (a libllama.so or a llama.cpp source tree)"
)
TIMEOUT = Option(
    "timeout",
    "seconds an implementation has for each answer (default 10); Python implementations run in a worker process, "
    "where it is enforced, unless --in-process",
    positive(float, MAX_TIMEOUT),
)
LOAD_TIMEOUT = Option(
    "load-timeout",
    "seconds an implementation has to start and load one vocabulary (default 600: a 262k-token vocabulary on a "
    "loaded machine)",
    positive(float, MAX_TIMEOUT),
)
IN_PROCESS = Option(
    "in-process",
    "for debugging: call a Python implementation in tokconf's own process, not in a worker; it can then change the "
    "run, so the verdict line says the run was not contained",
    flag=True,
)

SANDBOX = (
    Option(
        "sandbox",
        "how the implementation's processes run: auto (a bubblewrap sandbox where it works, else kept by a "
        "subreaper and said NOT SANDBOXED), bwrap (the sandbox, or an error), off (kept: the port can write files "
        "and reach the network); docs/threat-model.md",
        default="auto",
        choices=tuple(mode.value for mode in SandboxMode),
    ),
    Option(
        "sandbox-write",
        "a folder the sandboxed implementation may write (repeatable; e.g. a model cache it keeps); everything else "
        "but its private /tmp is read-only",
        Path,
        many=True,
        metavar="DIR",
    ),
    Option("sandbox-network", "let the sandboxed implementation reach the network (off by default)", flag=True),
)


CHECK = (
    Option("impl", IMPL_HELP + " (tokconf check: default reference; pytest: required, or the tokconf_impl ini key)"),
    Option(
        "recordings",
        "recording file or folder (repeatable; default: `bundled`, the b11192 set installed with tokconf)",
        recordings_path,
        many=True,
    ),
    Option("vocab", "only these vocabs (repeatable)", many=True),
    Option("mode", "only these modes (repeatable; decode: the decoding checks)", many=True, choices=(*MODES, "decode")),
    Option("case", "only these case ids (repeatable)", many=True),
    Option("xfail", "expected-failure file (docs/checking.md)", Path),
    Option("strict-xfail", "fail when an expected-failure entry matches no checked case", flag=True),
    Option("strict", "fail when anything is unsupported (input classes, vocabularies, facts, decoding)", flag=True),
    Option("vocab-dir", "folder with the GGUF files (default: the fetched build's models/)", Path),
    Option(
        "explain", "name the causes of the failures: each a replayed mechanism, with every case under it", flag=True
    ),
    Option(
        "causes",
        "write every cause, its cases, and grouped errors and unsupported answers here, as JSON (turns on --explain)",
        Path,
        metavar="FILE",
    ),
    Option(
        "claim",
        "what the implementation claims, as vocab/mode globs (repeatable): only these are checked, and each must be "
        "covered (default: every vocab it loads, in every mode checked)",
        claim_pattern,
        many=True,
        metavar="VOCAB/MODE",
    ),
    Option(
        "allow-decline",
        "input classes whose declines do not count against coverage, a comma list (repeatable): invalid-utf8, "
        f"nul, special-text (plain-mode special texts), too-long (past the port's declared limit), or {NO_GRANTS}; "
        f"the port declines, the command grants (default {','.join(sorted(c.value for c in DEFAULT_GRANTS))}: "
        "what a string or C-string API cannot be given; the verdict line and --json list each granted class)",
        decline_classes,
        many=True,
        metavar="CLASSES",
    ),
    Option(
        "min-coverage",
        "the share of each claimed vocab x mode's cases that must pass, in percent "
        f"(default {DEFAULT_MIN_COVERAGE * 100:g})",
        percentage,
        DEFAULT_MIN_COVERAGE,
        metavar="PERCENT",
    ),
    TIMEOUT,
    LOAD_TIMEOUT,
    IN_PROCESS,
    *SANDBOX,
    Option(
        "table",
        "the table at the end: summary (a row per vocabulary, every failing one by mode, the passing synthetic ones "
        "as one row) or full (a row per vocabulary and mode)",
        default="summary",
        choices=("summary", "full"),
    ),
    Option(
        "json",
        "also write the verdict as JSON here: the decision, its reasons, the counts per unit",
        Path,
        metavar="FILE",
    ),
)

FUZZ = (
    Option("impl", IMPL_HELP, pytest_name=""),
    Option("build", "llama.cpp build the inputs are sent to (tag bN)", int, DEFAULT_BUILD),
    Option("vocab", "vocab names or GGUF paths (repeatable; default: every shipped vocab)", many=True),
    Option("mode", "modes (repeatable; default: all)", many=True, choices=tuple(MODES)),
    Option(
        "profile",
        "examples per vocab and mode: " + ", ".join(f"{k} {v}" for k, v in PROFILES.items()),
        default="dev",
        choices=tuple(PROFILES),
    ),
    Option(
        "engine",
        "what draws and shrinks the inputs: tokconf (its own generator in batches, ddmin; the fastest) or "
        "hypothesis (the strategies of tokconf.strategies, hypothesis's generation and shrinking); docs/fuzzing.md",
        default="tokconf",
        choices=("tokconf", "hypothesis"),
    ),
    Option("max-examples", "override the profile's budget", positive(int), pytest_name="examples"),
    Option("seed", "the generator's seed (default: a random one, printed at the start)", int),
    Option(
        "database",
        "example database the campaign replays first and adds its findings to: a folder, redis://HOST:PORT/N "
        "(shared by every worker on every machine), or '' for none (default: .tokconf-fuzz-db in the current "
        "folder; pytest: also the tokconf_fuzz_database ini key)",
    ),
    Option("shared-database", "a database read under --database and never written (a folder or redis://...)"),
    Option(
        "found-dir",
        "where found cases go, as recordings (default: corpora/found in the current folder)",
        Path,
        Path("corpora/found"),
    ),
    Option("report", "also write an HTML report (the findings, and a plot of examples and findings over time)", Path),
    TIMEOUT,
    LOAD_TIMEOUT,
    IN_PROCESS,
    *SANDBOX,
)


def add_to_argparse(parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
    for option in options:
        parser.add_argument(f"--{option.name}", **option.kwargs())


def pytest_flag(prefix: str, option: Option) -> str:
    suffix = option.name if option.pytest_name is None else option.pytest_name
    return f"--{prefix}-{suffix}" if suffix else f"--{prefix}"


def add_to_pytest(group: Any, prefix: str, options: Sequence[Option]) -> None:
    """`group` is a pytest `OptionGroup` (typed loosely so this module need not import pytest)."""
    for option in options:
        group.addoption(pytest_flag(prefix, option), **option.kwargs())
