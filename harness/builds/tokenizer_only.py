"""A tokenizer-only libllama: what a vocab_only load and tokenization run, compiled into one small library.

libllama (every model architecture: llama-model.cpp, src/models/*.cpp, the graph, the KV caches,
ggml-cpu) takes minutes to build on 2 cores; what `tokconf.oracles.libllama` calls needs a handful of
its files. This compiles, from the tree's own sources and with the flags llama.cpp's CMake gives
them (`-O3 -DNDEBUG -fPIC`, LLAMA_BUILD/GGML_BUILD and the shared-library defines):

- TOKENIZER_SOURCES: llama-vocab.cpp (which defines llama_tokenize, llama_token_to_piece,
  llama_detokenize and the llama_vocab_* functions of llama.h), unicode.cpp, unicode-data.cpp, the
  model loader (llama-model-loader.cpp, with llama-arch, llama-impl and llama-mmap it calls) and
  ggml's base as the loader uses it (ggml.c, ggml.cpp, ggml-threading.cpp, gguf.cpp);
- the shim, shim/tokconf_vocab.cpp, compiled against the tree's own headers: the llama.h functions
  the oracle calls besides those (llama_backend_init, llama_model_default_params,
  llama_model_load_from_file, llama_model_get_vocab, llama_model_meta_val_str, ...), doing what
  src/llama.cpp's llama_model_load does for a vocab_only load (its comment says what exactly).

So the same cffi binding, from the tree's own llama.h, loads it as it loads libllama.so.

**Unresolved symbols.** These files also reference code a vocab_only load never runs (the loader's
tensor loading calls ggml backends; ggml.c's type table names ggml-quants.c's functions). Leaving them
unresolved (a shared library may) would load fine and crash, unexplained, if ever reached, or fail
at `dlopen` with RTLD_NOW. So the library is linked with `-Wl,--no-undefined`; every symbol the
linker reports missing gets a generated stub (`stubs.c`) that prints which function of llama.cpp
this library lacks and aborts, and the library is linked again. The stubs are listed in the build
marker. The equality tests (tests/test_tokenizer_build.py) prove no stub is reached on any bundled
recording, and that the answers are the full build's.

**Caching.** Each file is compiled separately with ccache (when installed) from the build's folder,
with CCACHE_BASEDIR at tokconf's cache root (tokconf.builds.build's `_ccache_env`): the next build
whose files are unchanged is served from ccache whatever its folder, and its build is the link alone.
(llama.cpp's own CMake compiles src/ as unity files that name each source by absolute path, which
defeats that.) No cmake configure runs either.
"""

from __future__ import annotations

import concurrent.futures
import enum
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..core.errors import TokconfError
from ..core.printable import printable

LIBRARY = "libllama.so"  # the name the oracle's binding and `tokconf llama info` expect

# Relative to the llama.cpp tree. ggml.cpp (the uncaught-exception hook, absent in some trees) is
# taken when present: the full build has it, and it decides what an abort prints.
TOKENIZER_SOURCES = (
    "src/llama-vocab.cpp",
    "src/unicode.cpp",
    "src/unicode-data.cpp",
    "src/llama-model-loader.cpp",
    "src/llama-arch.cpp",
    "src/llama-impl.cpp",
    "src/llama-mmap.cpp",
    "ggml/src/ggml.c",
    "ggml/src/ggml-threading.cpp",
    "ggml/src/gguf.cpp",
)
OPTIONAL_SOURCES = ("ggml/src/ggml.cpp",)
SHIM = "tokconf_vocab.cpp"

# What llama.cpp's CMake passes (ggml/src/CMakeLists.txt, src/CMakeLists.txt; `ninja -t commands llama`
# in a full build folder shows them), warnings aside; ggml-cpu's OpenMP is not in these files.
OPTIMIZE = ("-O3", "-DNDEBUG", "-fPIC")
GGML_DEFINES = ("-DGGML_BUILD", "-DGGML_SHARED", "-DGGML_SCHED_MAX_COPIES=4", "-D_GNU_SOURCE", "-D_XOPEN_SOURCE=600")
LLAMA_DEFINES = ("-DLLAMA_BUILD", "-DLLAMA_SHARED", "-DGGML_SHARED")
C_STANDARD, CXX_STANDARD = "-std=gnu11", "-std=gnu++17"

# Itanium-mangled data: vtables, VTTs, typeinfo and its names, guard variables. A stub is a function,
# so a class missing its vtable (constructed somewhere in these files) is no case for one.
DATA_PREFIXES = ("_ZTV", "_ZTT", "_ZTI", "_ZTS", "_ZGV")
UNDEFINED = re.compile(r"undefined reference to `([^']+)'")
# What a stub prints before it aborts (tokconf.oracles.libllama_client reads it: never llama.cpp's abort).
STUB_SAYS, STUB_SAYS_AFTER = "tokconf tokenizer-only libllama: ", " is not in this library; use the full build"
STUB_REACHED = re.compile(re.escape(STUB_SAYS) + "(.+?)" + re.escape(STUB_SAYS_AFTER))
# The files that tokenize, and the shim: what they call is what tokenizing runs, so none of it may be a
# stub (a downstream tree's tokenizer calling a function in a file of its own); the loader's and ggml's
# calls into model and backend code a vocab_only load never runs may.
TOKENIZING = ("src/llama-vocab.cpp", "src/unicode.cpp", "src/unicode-data.cpp")
RULES = (  # in the recipe
    "4: no stub for what the tokenizing files call; no CMake definition of the tree's own; "
    "a vocab_only load path some published build has"
)
# What llama.cpp's own CMakeLists.txt and src/CMakeLists.txt define (every published build in tokconf's
# cache, b9093..b11434): a definition a tree adds there (a downstream switch) would change what its files
# compile to, and this library is compiled with llama.cpp's usual ones (OPTIMIZE, LLAMA_DEFINES).
KNOWN_DEFINITIONS = frozenset(
    ("LLAMA_BUILD", "LLAMA_SHARED", "LLAMA_VERSION", "LLAMA_COMMIT", "_CRT_SECURE_NO_WARNINGS")
)
CMAKE_DEFINING = ("CMakeLists.txt", "src/CMakeLists.txt")
DEFINING = re.compile(
    r"\b(?:target_compile_definitions\s*\(\s*llama\b|add_compile_definitions\s*\(|add_definitions\s*\()([^)]*)\)"
)
CMAKE_KEYWORDS = frozenset({"PRIVATE", "PUBLIC", "INTERFACE"})


class Cut(enum.Enum):
    """Where the part of a function a vocab_only load runs ends."""

    WHOLE = "whole"  # all of it
    BEFORE = "before"  # before the first `until` (what follows loads the tensors)
    THROUGH_BLOCK = "through-block"  # after the block that follows the first `until` (its vocab_only return)


@dataclass(frozen=True)
class LoadStep:
    """A function of llama.cpp's vocab_only load that the shim does in its place (shim/tokconf_vocab.cpp
    says what each does): its one definition in `file`, the part `cut` and `until` say."""

    file: str
    name: str
    until: str = ""
    cut: Cut = Cut.WHOLE

    @property
    def pattern(self) -> str:
        """The defined name as a regex: the class was llama_model, then llama_model_base."""
        return self.name.replace("llama_model::", "llama_model(?:_base)?::")

    def __str__(self) -> str:
        return f"{self.name} ({self.file})"


LOAD_PATH = (
    LoadStep("src/llama.cpp", "llama_backend_init"),
    LoadStep("src/llama.cpp", "llama_model_load_from_file"),
    LoadStep("src/llama.cpp", "llama_model_load_from_file_impl"),
    LoadStep("src/llama.cpp", "llama_model_load", "load_tensors", Cut.BEFORE),
    LoadStep("src/llama-model.cpp", "llama_model::load_hparams", "vocab_only", Cut.THROUGH_BLOCK),
    LoadStep("src/llama-model.cpp", "llama_model::load_vocab"),
    LoadStep("src/llama-model.cpp", "llama_model_get_vocab"),
    LoadStep("src/llama-model.cpp", "llama_model_meta_val_str"),
)
# The virtual steps a model class could override (llama_model_load calls them on the model it made): a
# definition of one anywhere in src/ but llama-model.cpp's (none in a published build) is run by the full
# build for that architecture and never by this library.
OVERRIDABLE = ("load_hparams", "load_vocab")
# `step_digest` of each step in every published build, b9093..b11434 (the 269 PyPI sdists' src/, read
# 2026-12-03): a tree whose step is none of these loads a vocabulary otherwise (a downstream patch of
# the loading), and this library, running the shim in its place, would check it as if unpatched. The six
# versions of llama_model_load differ in the loader's arguments and lazy-loading mode alone (b10108,
# b10216, b10662, b10679, b10705), which a vocab_only load does not use.
KNOWN_LOAD_STEPS = {
    "llama_backend_init": frozenset({
        "220b419bbf1dbe2328e2289ac671dd0199222e3f74b52fbf576f40961c951050",
    }),
    "llama_model_load_from_file": frozenset({
        "26650e73cb56f33ff6f61e73c40594eac3f4e56cecdac3194fe354746694945a",
    }),
    "llama_model_load_from_file_impl": frozenset({
        "fdc188a8b7ac6841043a0b9145239e86309a127011ea18202747860df69fff47",
    }),
    "llama_model_load": frozenset({
        "79157acd04164e1e71dfbf3553b4347b4d7708f074042c504012eda94c9142a2",
        "95abc4ab640284c7781427d8cd3cebffd91335bc39a901fd1f71a9d96afab803",
        "adae2e611cc6099e98f252b5289548fdcf2fbe8b508a36baeb213ace6278a47f",
        "8484f7f0a40b6e4e77d9d2a5148e82e527650cd68250158166e5294a7bf9d845",
        "95474f9074a3f8b3a09de085bcd864cb76356de88d1cf6d6ffe0add8b8b1a29e",
        "94cf4f12c7928585f707d1a118ffc8381eceeee9ab12df658effcbff316658ea",
    }),
    "llama_model::load_hparams": frozenset({
        "c1331e1f5658233b5657f66adbd2bebe7f6a3df15b297e6321aef5e387c70d6e",
    }),
    "llama_model::load_vocab": frozenset({
        "c2aafc535c349fd874563c09fe04c07c806e778c381d3d35a853bba63803cf06",
    }),
    "llama_model_get_vocab": frozenset({
        "b81ff190cf52e16da61f175fbdd674da3e4633da5e7042259eb49269ac18ec78",
    }),
    "llama_model_meta_val_str": frozenset({
        "6548b73da7ea93de81464cd4597e288948cbbd20c252cc5ba723cb2c33e0819b",
    }),
}  # fmt: skip
SPACING = re.compile(r" ?([^\w ]) ?")  # a space beside punctuation, once runs are one space
# Comments, and string and character literals: blanked in the text a definition is looked for in (a
# brace inside them is no block), comments also in the text a digest is made of. An unterminated comment
# runs to the end (one match, not one scan per `/*`); a raw string R"d(...)d" is one literal; a `'` after
# a digit or hex letter is a digit separator (1'000), not a character literal.
CODE_NOISE = re.compile(
    r"//[^\n]*|/\*.*?(?:\*/|\Z)|R\"([^()\\\s]{0,16})\(.*?\)\1\"|\"(?:\\.|[^\"\\\n])*\""
    r"|(?<![0-9A-Fa-f])'(?:\\.|[^'\\\n])*'",
    re.S,
)
BRACES = {"{": 1, "}": -1}
TEMPLATE_VARIABLE = re.compile(r"@[A-Za-z0-9_]+@")


@dataclass(frozen=True)
class Made:
    """A linked tokenizer-only library, and the functions it has as aborting stubs (mangled names)."""

    library: Path
    stubs: tuple[str, ...]
    seconds: float


class ShimFailed(Exception):
    """The tokenizer-only library cannot be made from this tree (a file missing, a compile or link
    error): tokconf.builds.build falls back to the full libllama build, saying this."""


def shim_source() -> Path:
    """The shim's C++ source, shipped in the package (pyproject.toml's package-data)."""
    return Path(str(resources.files("tokconf.builds") / "shim" / SHIM))


def recipe() -> str:
    """What a tokenizer-only library is made by, besides its tree: the shim and this module's file list
    and flags. A build marker naming another recipe (a tokconf upgrade changed the shim) is not complete."""
    digest = hashlib.sha256(shim_source().read_bytes())
    for part in (
        TOKENIZER_SOURCES,
        OPTIONAL_SOURCES,
        OPTIMIZE,
        GGML_DEFINES,
        LLAMA_DEFINES,
        (C_STANDARD, CXX_STANDARD),
        (RULES,),
    ):
        digest.update("\0".join(part).encode() + b"\n")
    return digest.hexdigest()[:16]


def compilers() -> tuple[list[str], list[str]]:
    """The C and C++ compiler commands: cc and c++ (what CMake picks by default), through ccache when
    it is installed."""
    cc = next((c for c in ("cc", "gcc", "clang") if shutil.which(c)), None)
    cxx = next((c for c in ("c++", "g++", "clang++") if shutil.which(c)), None)
    if cc is None or cxx is None:
        raise TokconfError(
            "cannot build llama.cpp: no C and C++ compiler found",
            "install them, e.g. `apt-get install g++` (Debian/Ubuntu)",
        )
    launcher = ["ccache"] if shutil.which("ccache") else []
    return [*launcher, cc], [*launcher, cxx]


def _generated_headers(src: Path, gen: Path) -> None:
    """The headers llama.cpp's CMake writes with configure_file (ggml/src/ggml-version.h.in, ...), with
    every @VARIABLE@ as `unknown`: only ggml_version() and ggml_commit() read them, and tokconf does not."""
    gen.mkdir(parents=True, exist_ok=True)
    for template in sorted([*(src / "ggml" / "src").glob("*.h.in"), *(src / "src").glob("*.h.in")]):
        text = TEMPLATE_VARIABLE.sub("unknown", template.read_text(encoding="utf-8"))
        target = gen / template.name.removesuffix(".in")
        if not target.is_file() or target.read_text(encoding="utf-8") != text:  # unchanged: ccache's direct hit
            target.write_text(text, encoding="utf-8")


def compile_commands(src: Path, out: Path, flags: tuple[str, ...] = (), extra: tuple[Path, ...] = ()
                     ) -> list[tuple[str, list[str]]]:  # fmt: skip
    """(object name, compile command) of every file, and of the `extra` sources (tokconf.strength's
    coverage hook), run in `out`; `flags` come last (tokconf.strength: `--coverage -O0`)."""
    missing = [name for name in TOKENIZER_SOURCES if not (src / name).is_file()]
    if missing:
        raise ShimFailed(f"the tree has no {', '.join(missing)}")
    foreign = _cmake_definitions(src) - KNOWN_DEFINITIONS
    if foreign:
        defined = ", ".join(printable(name) for name in sorted(foreign))  # the tree's text, shown escaped
        raise ShimFailed(f"its CMake files define {defined}, which this library is not compiled with")
    unknown = unknown_load_steps(src)
    if unknown:
        steps = ", ".join(unknown)
        raise ShimFailed(
            f"its {steps} is no published build's (b9093..b11434), and this library loads a vocabulary "
            "with the shim's code in its place"
        )
    cc, cxx = compilers()
    includes = [f"-I{out / 'gen'}", f"-I{src / 'src'}", f"-I{src / 'include'}"]
    includes += [f"-I{src / 'ggml' / 'include'}", f"-I{src / 'ggml' / 'src'}"]
    files = [src / name for name in (*TOKENIZER_SOURCES, *OPTIONAL_SOURCES) if (src / name).is_file()] + list(extra)
    shim = out / SHIM  # copied beside the objects, so ccache finds it at the same relative path in every build
    shim.write_bytes(shim_source().read_bytes())
    ggml_defines = [*GGML_DEFINES, *_ggml_version(src)]
    shim_defines = [*LLAMA_DEFINES, *_llama_version(src)]
    commands = []
    for file in [*files, shim]:
        defines = ggml_defines if file.is_relative_to(src / "ggml") else shim_defines if file == shim else LLAMA_DEFINES
        compiler, standard = (cc, C_STANDARD) if file.suffix == ".c" else (cxx, CXX_STANDARD)
        obj = _object(file)
        command = [*compiler, *OPTIMIZE, standard, *defines, *includes, *flags, "-c", str(file), "-o", obj]
        commands.append((obj, command))
    return commands


def _cmake_definitions(src: Path) -> set[str]:
    """The names llama.cpp's CMakeLists.txt and src/CMakeLists.txt define for libllama
    (`target_compile_definitions(llama ...)`, `add_compile_definitions`, `add_definitions(-D...)`),
    comments left out."""
    names: set[str] = set()
    for name in CMAKE_DEFINING:
        path = src / name
        text = re.sub(r"#[^\n]*", "", path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else ""
        for found in DEFINING.finditer(text):
            words = (word.removeprefix("-D").split("=")[0] for word in found[1].split())
            names.update(word for word in words if word and word not in CMAKE_KEYWORDS)
    return names


def _blanked(text: str) -> tuple[str, str]:
    """(`text` with its comments as spaces, and with literals' insides as `x` too): the same length, so a
    position found in the second cuts the first."""

    def spaced(found: re.Match[str]) -> str:
        return found[0] if found[0][0] in "\"'" else " " * len(found[0])

    def masked(found: re.Match[str]) -> str:
        noise = found[0]
        return noise[0] + "x" * (len(noise) - 2) + noise[-1] if noise[0] in "\"'" else " " * len(noise)

    return CODE_NOISE.sub(spaced, text), CODE_NOISE.sub(masked, text)


def _closing(masked: str, opening: int) -> int:
    """Just past the `}` that closes the block opened at `opening` (the end of the text if none does)."""
    depth = 0
    for index in range(opening, len(masked)):
        depth += BRACES.get(masked[index], 0)
        if depth == 0:
            return index + 1
    return len(masked)


def _body_head(pattern: str) -> str:
    """A regex of `pattern` followed by a parameter list and a body's `{` (`const`, `override` between)."""
    return rf"\b{pattern}\s*\([^;{{}}]*\)[^;{{}}()]*\{{"


def _definitions(masked: str, pattern: str) -> list[tuple[int, int]]:
    """(start, end) of each definition of `pattern` at the top level of `masked` (a match inside a block
    is a call or a declaration)."""
    head = re.compile(r"^[^\n;{}#]*" + _body_head(pattern), re.M)
    spans, depth, seen = [], 0, 0
    for found in head.finditer(masked):
        depth += masked.count("{", seen, found.start()) - masked.count("}", seen, found.start())
        seen = found.start()
        if depth == 0:
            spans.append((found.start(), _closing(masked, found.end() - 1)))
    return spans


def _step_digest(plain: str, masked: str, step: LoadStep) -> str | None:
    """sha256 of `step`'s definition in a file (`_blanked`'s two texts of it), comments and spacing left
    out; None when the file has no such definition (a refactor the shim does not know) or two (one kept
    under `#if 0`: which is compiled is the preprocessor's to say), or its part cannot be found."""
    spans = _definitions(masked, step.pattern)
    if len(spans) != 1:
        return None
    start, end = spans[0]
    if step.cut is not Cut.WHOLE:
        marker = re.search(rf"\b{step.until}\b", masked[start:end])
        opening = masked.find("{", start + marker.start(), end) if marker else -1
        if marker is None or (step.cut is Cut.THROUGH_BLOCK and opening < 0):
            return None
        end = start + marker.start() if step.cut is Cut.BEFORE else _closing(masked, opening)
    return hashlib.sha256(SPACING.sub(r"\1", " ".join(plain[start:end].split())).encode()).hexdigest()


def _source(path: Path) -> tuple[str, str] | None:
    """`_blanked`'s two texts of a source file, None if it is not one."""
    return _blanked(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else None


def _overrides(src: Path) -> list[str]:
    """Definitions of an OVERRIDABLE step in src/ outside llama-model.cpp, as `file: name`."""
    found = []
    for path in sorted((src / "src").rglob("*")):
        if path.suffix not in (".cpp", ".h", ".hpp", ".cc") or path.name == "llama-model.cpp":
            continue
        if (texts := _source(path)) is not None:
            found += [f"{printable(path.relative_to(src).as_posix())}: {name}" for name in OVERRIDABLE
                      if re.search(_body_head(name), texts[1])]  # fmt: skip
    return found


def unknown_load_steps(src: Path) -> list[str]:
    """The steps of LOAD_PATH whose definition in `src` is no published build's or missing, and the
    overrides of one elsewhere in src/: what the full build would run and this library would not."""
    sources = {file: _source(src / file) for file in {step.file for step in LOAD_PATH}}
    steps = [
        str(step)
        for step in LOAD_PATH
        if (texts := sources[step.file]) is None or _step_digest(*texts, step) not in KNOWN_LOAD_STEPS[step.name]
    ]
    return steps + [f"{where} override" for where in _overrides(src)]


def _object(file: Path) -> str:
    """The object file of a source, relative to the build folder."""
    return f"obj/{file.stem}{file.suffix.replace('.', '_')}.o"


def _called_by_tokenizing(out: Path, env: dict[str, str]) -> set[str]:
    """The symbols the tokenizing files' and the shim's objects leave undefined (`nm -u`)."""
    objects = [_object(Path(name)) for name in (*TOKENIZING, SHIM)]
    listed = _run(["nm", "-u", *objects], out, env)
    if listed.returncode != 0:
        raise ShimFailed(f"nm could not list what the tokenizer calls:\n{_tail(listed.stderr)}")
    return {line.split()[-1] for line in listed.stdout.splitlines() if line.strip() and not line.endswith(":")}


def _ggml_version(src: Path) -> list[str]:
    """Before ggml-version.h.in, ggml's CMake passed GGML_VERSION and GGML_COMMIT to ggml.c on the
    command line (b9093's ggml/CMakeLists.txt); `unknown` here, as in `_generated_headers`."""
    if (src / "ggml" / "src" / "ggml-version.h.in").is_file():
        return []
    return ['-DGGML_VERSION="unknown"', '-DGGML_COMMIT="unknown"']


def _llama_version(src: Path) -> list[str]:
    """llama_version() where llama.h declares it: src/llama.cpp returns LLAMA_VERSION, which the top
    CMakeLists.txt makes of LLAMA_VERSION_MAJOR/MINOR/PATCH and `-dev` (LLAMA_BUILD_IS_DEV, default ON);
    the shim returns the same string (TOKCONF_LLAMA_VERSION)."""
    if "llama_version(" not in (src / "include" / "llama.h").read_text(encoding="utf-8", errors="replace"):
        return []
    cmake = (src / "CMakeLists.txt").read_text(encoding="utf-8", errors="replace")
    parts = [re.search(rf"set\(LLAMA_VERSION_{part}\s+(\d+)\)", cmake) for part in ("MAJOR", "MINOR", "PATCH")]
    dev = re.search(r'option\(LLAMA_BUILD_IS_DEV\s+"[^"]*"\s+(ON|OFF)\)', cmake)
    if not all(parts) or dev is None:
        return []  # no llama_version in the library: the oracle then says the version is unknown
    version = ".".join(part.group(1) for part in parts if part) + ("-dev" if dev.group(1) == "ON" else "")
    return [f'-DTOKCONF_LLAMA_VERSION="{version}"']


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


def _stubs(symbols: list[str]) -> str:
    """C source of one aborting function per missing symbol. Itanium-mangled C++ names are plain C
    identifiers, so a C file defines them as they are; the message names the demangled function."""
    demangled = _demangle(symbols)
    lines = [
        "/* Generated by tokconf (harness/builds/tokenizer_only.py): what the tokenizer-only libllama lacks. */",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "static void tokconf_missing(const char *what) {",
        f'    fprintf(stderr, "{STUB_SAYS}%s{STUB_SAYS_AFTER}\\n", what);',
        "    abort();",
        "}",
    ]
    for symbol, name in zip(symbols, demangled, strict=True):
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'void {symbol}(void) {{ tokconf_missing("{quoted}"); }}')
    return "\n".join(lines) + "\n"


def _demangle(symbols: list[str]) -> list[str]:
    if not symbols or shutil.which("c++filt") is None:
        return symbols
    done = subprocess.run(["c++filt"], input="\n".join(symbols), capture_output=True, text=True, check=False)
    names = done.stdout.splitlines()
    return names if done.returncode == 0 and len(names) == len(symbols) else symbols


def compile_library(src: Path, out: Path, jobs: int, env: dict[str, str], log: list[str], quiet: bool = False,
                    flags: tuple[str, ...] = (), extra: tuple[Path, ...] = ()) -> Made:  # fmt: skip
    """Compile the tokenizer-only library of the tree `src` in `out` (`out/libllama.so`), `jobs` files
    at a time, each named on stderr unless `quiet`; every command and what it said goes to `log`.
    `flags` and `extra` as for `compile_commands`, the flags given to the link too. ShimFailed when it
    cannot be made."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    (out / "obj").mkdir(exist_ok=True)
    _generated_headers(src, out / "gen")
    commands = compile_commands(src, out, flags, extra)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_run, command, out, env): command for _, command in commands}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            command = futures[future]
            result = future.result()
            log.append(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}")
            if not quiet:
                print(f"[{done}/{len(commands)}] {command[-3]}", file=sys.stderr, flush=True)
            if result.returncode != 0:
                raise ShimFailed(f"compiling {command[-3]} failed:\n{_tail(result.stderr)}")
    objects = [obj for obj, _ in commands]
    library = out / LIBRARY
    partial = out / f".{LIBRARY}.tmp"
    _, cxx = compilers()
    link = [cxx[-1], "-shared", "-fPIC", "-O3", *flags, "-Wl,--no-undefined", "-Wl,--no-demangle", "-o", partial.name]
    first = _run([*link, *objects, "-lm", "-lpthread"], out, env)
    log.append(f"$ {' '.join(link)} ...\n{first.stderr}")
    symbols = sorted(set(UNDEFINED.findall(first.stderr)))
    if first.returncode != 0:
        if not symbols:
            raise ShimFailed(f"linking failed:\n{_tail(first.stderr)}")
        data = [symbol for symbol in symbols if symbol.startswith(DATA_PREFIXES)]
        if data:  # a function stub cannot stand in for data that may be read when the library loads
            raise ShimFailed(f"the files need data no stub can stand in for: {', '.join(_demangle(data))}")
        called = sorted(_called_by_tokenizing(out, env).intersection(symbols))
        if called:  # a stub would stand in for the tree's own tokenizing code
            raise ShimFailed(
                f"its tokenizer calls {', '.join(_demangle(called))}, defined outside the files this library is made of"
            )
        (out / "stubs.c").write_text(_stubs(symbols), encoding="utf-8")
        cc, _ = compilers()
        stub = [*cc, *OPTIMIZE, C_STANDARD, "-w", "-c", "stubs.c", "-o", "obj/stubs.o"]
        compiled = _run(stub, out, env)
        log.append(f"$ {' '.join(stub)}\n{compiled.stderr}")
        if compiled.returncode != 0:
            raise ShimFailed(
                f"compiling the stubs of {len(symbols)} missing functions failed:\n{_tail(compiled.stderr)}"
            )
        second = _run([*link, *objects, "obj/stubs.o", "-lm", "-lpthread"], out, env)
        log.append(f"$ {' '.join(link)} ... obj/stubs.o\n{second.stderr}")
        if second.returncode != 0:
            raise ShimFailed(f"linking with stubs failed:\n{_tail(second.stderr)}")
    os.replace(partial, library)
    return Made(library, tuple(symbols), time.monotonic() - started)


def _tail(said: str) -> str:
    return "\n".join(f"    {line}" for line in said.strip().splitlines()[-20:])
