"""A tokenizer-only libllama: what a vocab_only load and tokenization run, compiled into one small library.

libllama (every model architecture: llama-model.cpp, src/models/*.cpp, the graph, the KV caches,
ggml-cpu) takes minutes to build on 2 cores; what `tokconf.live.libllama` calls needs a handful of
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
with CCACHE_BASEDIR at tokconf's cache root (tokconf.llama.build's `_ccache_env`): the next build
whose files are unchanged is served from ccache whatever its folder, and its build is the link alone.
(llama.cpp's own CMake compiles src/ as unity files that name each source by absolute path, which
defeats that.) No cmake configure runs either.
"""

from __future__ import annotations

import concurrent.futures
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
# What a stub prints before it aborts (tokconf.live.client reads it: never llama.cpp's abort).
STUB_SAYS, STUB_SAYS_AFTER = "tokconf tokenizer-only libllama: ", " is not in this library; use the full build"
STUB_REACHED = re.compile(re.escape(STUB_SAYS) + "(.+?)" + re.escape(STUB_SAYS_AFTER))
# The files that tokenize, and the shim: what they call is what tokenizing runs, so none of it may be a
# stub (a downstream tree's tokenizer calling a function in a file of its own); the loader's and ggml's
# calls into model and backend code a vocab_only load never runs may.
TOKENIZING = ("src/llama-vocab.cpp", "src/unicode.cpp", "src/unicode-data.cpp")
RULES = "3: no stub for what the tokenizing files call; no CMake definition of the tree's own"  # in the recipe
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
TEMPLATE_VARIABLE = re.compile(r"@[A-Za-z0-9_]+@")


@dataclass(frozen=True)
class Made:
    """A linked tokenizer-only library, and the functions it has as aborting stubs (mangled names)."""

    library: Path
    stubs: tuple[str, ...]
    seconds: float


class ShimFailed(Exception):
    """The tokenizer-only library cannot be made from this tree (a file missing, a compile or link
    error): tokconf.llama.build falls back to the full libllama build, saying this."""


def shim_source() -> Path:
    """The shim's C++ source, shipped in the package (pyproject.toml's package-data)."""
    return Path(str(resources.files("tokconf.llama") / "shim" / SHIM))


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


def _commands(src: Path, out: Path) -> list[tuple[str, list[str]]]:
    """(object name, compile command) of every file, run in `out`."""
    missing = [name for name in TOKENIZER_SOURCES if not (src / name).is_file()]
    if missing:
        raise ShimFailed(f"the tree has no {', '.join(missing)}")
    foreign = _cmake_definitions(src) - KNOWN_DEFINITIONS
    if foreign:
        defined = ", ".join(sorted(foreign))
        raise ShimFailed(f"its CMake files define {defined}, which this library is not compiled with")
    cc, cxx = compilers()
    includes = [f"-I{out / 'gen'}", f"-I{src / 'src'}", f"-I{src / 'include'}"]
    includes += [f"-I{src / 'ggml' / 'include'}", f"-I{src / 'ggml' / 'src'}"]
    files = [src / name for name in (*TOKENIZER_SOURCES, *OPTIONAL_SOURCES) if (src / name).is_file()]
    shim = out / SHIM  # copied beside the objects, so ccache finds it at the same relative path in every build
    shim.write_bytes(shim_source().read_bytes())
    ggml_defines = [*GGML_DEFINES, *_ggml_version(src)]
    shim_defines = [*LLAMA_DEFINES, *_llama_version(src)]
    commands = []
    for file in [*files, shim]:
        defines = ggml_defines if file.is_relative_to(src / "ggml") else shim_defines if file == shim else LLAMA_DEFINES
        compiler, standard = (cc, C_STANDARD) if file.suffix == ".c" else (cxx, CXX_STANDARD)
        obj = _object(file)
        commands.append((obj, [*compiler, *OPTIMIZE, standard, *defines, *includes, "-c", str(file), "-o", obj]))
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
        "/* Generated by tokconf (harness/llama/tokenizer_only.py): what the tokenizer-only libllama lacks. */",
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


def compile_library(src: Path, out: Path, jobs: int, env: dict[str, str], log: list[str], quiet: bool = False) -> Made:
    """Compile the tokenizer-only library of the tree `src` in `out` (`out/libllama.so`), `jobs` files
    at a time, each named on stderr unless `quiet`; every command and what it said goes to `log`.
    ShimFailed when it cannot be made."""
    started = time.monotonic()
    out.mkdir(parents=True, exist_ok=True)
    (out / "obj").mkdir(exist_ok=True)
    _generated_headers(src, out / "gen")
    commands = _commands(src, out)
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
    link = [cxx[-1], "-shared", "-fPIC", "-O3", "-Wl,--no-undefined", "-Wl,--no-demangle", "-o", partial.name]
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
