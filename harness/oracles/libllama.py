"""libllama through cffi, as llama.cpp's own tests/test-tokenizer-random.py loads it.

This module is imported only inside the oracle worker process (`tokconf.oracles.libllama_worker`): llama.cpp
aborts the whole process on some inputs, so it must never run in the harness's own process.

The declarations come from the build's own `llama.h`, run through `gcc -E` with the same pycparser
workarounds test-tokenizer-random.py uses, so the binding always matches the pinned build's ABI.
Parsing them costs 0.6 s, at every worker start; so they are parsed once per set of headers into
cffi's out-of-line ABI module (plain Python, no compiler), kept in the cache and imported after.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import platform
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import cffi

from ..core.facts import VocabFacts
from ..core.files import cache_root
from .bound import max_ids

VOCAB_TYPES = {0: "none", 1: "spm", 2: "bpe", 3: "wpm", 4: "ugm", 5: "rwkv", 6: "plamo2", 7: "test"}

# enum llama_token_attr in llama.h, bit by bit.
TOKEN_ATTRS = (
    "unknown",
    "unused",
    "normal",
    "control",
    "user_defined",
    "byte",
    "normalized",
    "lstrip",
    "rstrip",
    "single_word",
)

# The llama_vocab_<name> getters of llama.h for single special ids.
SPECIAL_IDS: tuple[str, ...] = ("bos", "eos", "eot", "sep", "nl", "pad", "mask")
SPECIAL_IDS += ("fim_pre", "fim_suf", "fim_mid", "fim_pad", "fim_rep", "fim_sep")


# Every llama.h function `Vocab` calls: a library lacking one is refused when it is probed
# (`describe_library`), before any vocabulary, not when the first call reaches it.
FUNCTIONS: tuple[str, ...] = (
    "llama_backend_init", "llama_model_default_params", "llama_model_load_from_file", "llama_model_get_vocab",
    "llama_tokenize", "llama_token_to_piece", "llama_detokenize", "llama_model_meta_val_str",
    "llama_vocab_n_tokens", "llama_vocab_type", "llama_vocab_get_attr", "llama_vocab_get_text",
    "llama_vocab_get_add_bos", "llama_vocab_get_add_eos", "llama_vocab_get_add_sep", "llama_vocab_is_eog",
    *(f"llama_vocab_{name}" for name in SPECIAL_IDS),
)  # fmt: skip

# common/build-info.cpp's globals: llama.cpp's own build number and commit, which libllama does not
# export; libllama-common does (built beside libllama with llama-tokenize, b11192 on).
COMMON_LIBRARY = "libllama-common.so"
COMMON_BUILD_INFO = """
extern int LLAMA_BUILD_NUMBER;
extern const char * LLAMA_COMMIT;
extern const char * LLAMA_COMPILER;
extern const char * LLAMA_BUILD_TARGET;
"""


class LibraryError(Exception):
    """A libllama that cannot be the oracle: it does not load, or lacks a function `Vocab` calls."""


def attr_names(attr: int) -> str:
    """A token attribute bit set as `control|lstrip`, or `undefined` for 0 (llama_token_attr)."""
    names = [name for bit, name in enumerate(TOKEN_ATTRS) if attr & (1 << bit)]
    return "|".join(names) or "undefined"


def _cdef_source(llama_h: Path, include_dirs: tuple[Path, ...], ffi: Any) -> str:
    command = ["gcc", "-O0", "-E", "-P", "-D__restrict=", "-D__attribute__(x)=", "-D__asm__(x)="]
    command += [f"-I{path}" for path in include_dirs] + [str(llama_h)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"gcc -E {llama_h} failed: {result.stderr[-2000:]}")
    source = "typedef struct { } __builtin_va_list;\n" + result.stdout
    for expr, ctype in (
        ("sizeof (int)", "int"),
        ("sizeof (void *)", "void*"),
        ("sizeof (size_t)", "size_t"),
        ("sizeof(int32_t)", "int32_t"),
    ):
        source = source.replace(expr, str(ffi.sizeof(ctype)))
    return source


def binding(llama_h: Path, include_dirs: tuple[Path, ...]) -> Any:
    """The FFI of these headers: imported from the cache, or parsed and written there first.

    The module's name is a hash of every header it may read and of the cffi version, so another
    build (or an edited folder source) gets its own; it is written beside its final name and renamed,
    so workers starting together never import half a file."""
    digest = hashlib.sha256(cffi.__version__.encode())
    for header in sorted({llama_h, *(h for folder in include_dirs for h in folder.glob("*.h"))}):
        digest.update(str(header.name).encode() + header.read_bytes())
    name = f"_tokconf_llama_{digest.hexdigest()[:20]}"
    folder = cache_root() / "cffi"
    module = folder / f"{name}.py"
    if module.is_file():
        return _imported(name, module)
    builder = cffi.FFI()
    builder.cdef(_cdef_source(llama_h, include_dirs, builder), override=True)
    builder.set_source(name, None)  # out-of-line ABI mode: a .py file, nothing to compile
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            os.replace(builder.compile(tmpdir=tmp), module)
    except OSError:  # a read-only cache: made for this process alone
        with tempfile.TemporaryDirectory() as tmp:
            return _imported(name, Path(builder.compile(tmpdir=tmp)))
    return _imported(name, module)


def _imported(name: str, module: Path) -> Any:
    """The `ffi` of the cffi module file `module`."""
    spec = importlib.util.spec_from_file_location(name, module)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded.ffi


def describe_library(libllama: Path, llama_h: Path, include_dirs: tuple[Path, ...]) -> dict[str, str | None]:
    """Load `libllama` (in the worker: `--info`), check it exports every function in FUNCTIONS, and
    say what it says about itself: `version` (llama_version: LLAMA_VERSION, e.g. `0.5.0-dev`),
    `system_info` (llama_print_system_info: each ggml backend's features) and `build_info` (from
    libllama-common beside it, `_common_build_info`). A function an older llama.h lacks is None."""
    ffi = binding(llama_h, include_dirs)
    try:
        lib = ffi.dlopen(str(libllama))
    except OSError as error:  # another architecture, a libggml*.so not found or lacking a symbol, not ELF
        raise LibraryError(f"it does not load: {error}") from None
    missing = [name for name in FUNCTIONS if not _exports(ffi, lib, name)]
    if missing:
        raise LibraryError(f"it does not export {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}")
    written = _params_written(libllama)
    size = ffi.sizeof("struct llama_model_params")
    if written is not None and not size - ffi.alignof("struct llama_model_params") < written <= size:
        raise ParamsMismatch(
            f"{PARAMS_SAID} ends its llama_model_params at byte {written} (padding aside), where the llama.h "
            f"it is bound with ({llama_h}) declares a struct of {size} bytes: the library is of another llama.cpp "
            "version, and each vocabulary it loaded would be given shifted parameters"
        )
    return {
        "version": ffi.string(lib.llama_version()).decode() if _exports(ffi, lib, "llama_version") else None,
        "system_info": ffi.string(lib.llama_print_system_info()).decode().strip() or None,
        "build_info": _common_build_info(libllama.parent / COMMON_LIBRARY),
    }


class ParamsMismatch(LibraryError):
    """The library's `struct llama_model_params` is not the header's (another llama.cpp version's header:
    b9093..b10088 have 72 bytes, b10798..b11434 80). `llama_model_load_from_file` takes it by value, so
    every load would get shifted fields: b9093's library bound with b11192's llama.h refused every
    vocabulary, and `identify` placed it in no published build."""


PARAMS_SAID = "its llama_model_default_params()"  # how a ParamsMismatch's message begins (tokconf.oracles.probe)
# How many bytes `_params_written` offers llama_model_default_params: far more than any version's struct.
PARAMS_PROBE = 1024


def _params_written(libllama: Path) -> int | None:
    """Where the library's llama_model_default_params() ends its `struct llama_model_params`: the
    struct's size but its tail padding (b11192's full build writes 78 of its 80 bytes); None where it
    cannot be measured (not a 64-bit x86-64 process).

    The struct is returned in memory (over 16 bytes: the System V x86-64 ABI's MEMORY class), through a
    pointer the caller passes as the first argument, so it is called here as `void *f(void *)` with a
    buffer far larger than any version's struct, once filled with 0x00 and once with 0xFF: the bytes
    that read the same after both calls are the ones it wrote (its defaults do not change between
    calls). aarch64 passes that pointer in x8, which no C prototype can set, so it is not measured there."""
    probe = cffi.FFI()
    if probe.sizeof("void *") != 8 or platform.machine().lower() not in ("x86_64", "amd64"):
        return None  # another architecture, or a 32-bit process (i386 passes the pointer on the stack)
    probe.cdef("void * llama_model_default_params(void *);")
    lib: Any = probe.dlopen(str(libllama))
    after = []
    for fill in (b"\x00", b"\xff"):
        buffer = probe.new("unsigned char[]", fill * PARAMS_PROBE)
        lib.llama_model_default_params(buffer)
        after.append(bytes(probe.buffer(buffer)))
    written = [i for i in range(PARAMS_PROBE) if after[0][i] == after[1][i]]
    return written[-1] + 1 if written else 0


def _exports(ffi: Any, lib: Any, name: str) -> bool:
    """Whether llama.h declares `name` (else cffi raises AttributeError) and the library has it (else
    `ffi.error`)."""
    try:
        getattr(lib, name)
    except (AttributeError, ffi.error):
        return False
    return True


def _common_build_info(common: Path) -> str | None:
    """llama.cpp's build info as common/build-info.cpp's llama_build_info and llama_print_build_info
    put it (`b<number>-<commit>, built with <compiler> for <target>`), from the libllama-common beside
    the library; None when there is none, or it does not have them."""
    if not common.is_file():
        return None
    ffi = cffi.FFI()
    ffi.cdef(COMMON_BUILD_INFO)
    try:
        lib: Any = ffi.dlopen(str(common))
        number, commit = int(lib.LLAMA_BUILD_NUMBER), ffi.string(lib.LLAMA_COMMIT).decode()
        compiler, target = ffi.string(lib.LLAMA_COMPILER).decode(), ffi.string(lib.LLAMA_BUILD_TARGET).decode()
    except (OSError, AttributeError, ffi.error):
        return None
    return f"b{number}-{commit}, built with {compiler} for {target}"


class OverBound(Exception):
    """llama_tokenize needs more ids than the bound allows (`tokconf.oracles.bound`): `needed` of them,
    none copied out."""

    def __init__(self, needed: int) -> None:
        super().__init__(needed)
        self.needed = needed


class Vocab:
    """One vocabulary loaded with `vocab_only`, exposing llama_tokenize and the vocab's facts."""

    def __init__(self, libllama: Path, llama_h: Path, include_dirs: tuple[Path, ...], vocab: Path) -> None:
        self.ffi = binding(llama_h, include_dirs)
        self.lib: Any = self.ffi.dlopen(str(libllama))
        self.lib.llama_backend_init()
        params = self.lib.llama_model_default_params()
        params.vocab_only = True
        self.model = self.lib.llama_model_load_from_file(str(vocab).encode(), params)
        if self.model == self.ffi.NULL:
            raise RuntimeError(f"llama_model_load_from_file could not load {vocab}")
        self.vocab = self.lib.llama_model_get_vocab(self.model)
        self._ids = self.ffi.new("llama_token[]", 4096)

    def tokenize(self, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
        """llama_tokenize, growing the output buffer when it reports the size it needs, up to the bound:
        it is given at most `max_ids` places, so an answer past them is its negated size (OverBound),
        never copied out."""
        limit = max_ids(len(data))
        n = self.lib.llama_tokenize(self.vocab, data, len(data), self._ids, min(len(self._ids), limit),
                                    add_special, parse_special)  # fmt: skip
        if n < 0 and -n <= limit:
            self._ids = self.ffi.new("llama_token[]", -n)
            n = self.lib.llama_tokenize(self.vocab, data, len(data), self._ids, -n, add_special, parse_special)
        if n < 0:
            raise OverBound(-n)
        return list(self.ffi.unpack(self._ids, n))

    def pieces(self, special: bool) -> list[bytes]:
        """llama_token_to_piece of every id: the bytes each token decodes to."""
        ffi, vocab, to_piece = self.ffi, self.vocab, self.lib.llama_token_to_piece  # 250,000 calls: no lookups
        size = 256
        buf = ffi.new("char[]", size)
        out = []
        for token in range(self.lib.llama_vocab_n_tokens(vocab)):
            n = to_piece(vocab, token, buf, size, 0, special)
            if n < 0:
                size = -n
                buf = ffi.new("char[]", size)
                n = to_piece(vocab, token, buf, size, 0, special)
            out.append(ffi.unpack(buf, n))
        return out

    def detokenize(self, ids: list[int], remove_special: bool, unparse_special: bool) -> bytes:
        """llama_detokenize, growing the buffer when it reports the size it needs."""
        tokens = self.ffi.new("llama_token[]", ids or [0])
        size = max(64, 8 * len(ids))
        while True:
            buf = self.ffi.new("char[]", size)
            n = self.lib.llama_detokenize(self.vocab, tokens, len(ids), buf, size, remove_special, unparse_special)
            if n >= 0:
                return bytes(self.ffi.buffer(buf, n))
            size = -n

    def meta(self, key: str) -> str | None:
        """A scalar GGUF metadata value as llama.cpp reads it, or None when the key is absent."""
        buf = self.ffi.new("char[]", 4096)
        n = self.lib.llama_model_meta_val_str(self.model, key.encode(), buf, len(buf))
        return None if n < 0 else self.ffi.string(buf).decode("utf-8", errors="replace")

    def facts(self) -> VocabFacts:
        """Everything a port must agree on besides ids: model, special ids, add flags, EOG set, attributes."""
        lib, vocab = self.lib, self.vocab
        n_tokens = lib.llama_vocab_n_tokens(vocab)
        special = {name: int(getattr(lib, f"llama_vocab_{name}")(vocab)) for name in SPECIAL_IDS}
        attributes: dict[int, str] = {}
        texts: dict[int, bytes] = {}
        for token in range(n_tokens):
            attr = int(lib.llama_vocab_get_attr(vocab, token))
            if attr != 1 << TOKEN_ATTRS.index("normal"):
                attributes[token] = attr_names(attr)
            if attr & ((1 << TOKEN_ATTRS.index("control")) | (1 << TOKEN_ATTRS.index("user_defined"))):
                texts[token] = self.ffi.string(lib.llama_vocab_get_text(vocab, token))
        return {
            "vocab_type": VOCAB_TYPES.get(int(lib.llama_vocab_type(vocab)), "unknown"),
            "model": self.meta("tokenizer.ggml.model"),
            "pre": self.meta("tokenizer.ggml.pre"),
            "n_tokens": int(n_tokens),
            "add_bos": bool(lib.llama_vocab_get_add_bos(vocab)),
            "add_eos": bool(lib.llama_vocab_get_add_eos(vocab)),
            "add_sep": bool(lib.llama_vocab_get_add_sep(vocab)),
            "special_ids": special,
            "eog_ids": [t for t in range(n_tokens) if lib.llama_vocab_is_eog(vocab, t)],
            "token_attributes": attributes,
            "special_texts": texts,
        }
