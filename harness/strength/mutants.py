"""Mutants of a llama.cpp tree's tokenizer sources: each a small change a port could make by mistake.

The sites come from clang's syntax tree of llama-vocab.cpp and unicode.cpp (libclang, the `strength`
extra), so an operator is only ever a built-in one (an overloaded `==` on std::string is a call, left
alone) and a statement is a statement. The operators are the standard ones of mutation testing (Mull's
C++ set, mutmut's), and two of the domain:

- relational (`<` to `<=` and `>`, `==` to `!=`, ...), arithmetic (`+` to `-`, `<<` to `>>`, `&` to `|`,
  `++` to `--`, on integer and floating operands only: pointer arithmetic is another thing),
  logical connector (`&&` to `||`), negated condition (an `if`/`while`/`?:` condition, a `!` removed),
  constant (an integer literal plus or minus one, a `true` made `false`), deleted statement (an
  expression statement, a `break`, a `continue`), returned value (a bool negated, an integer made 0);
- pattern: an alternative removed from a pre-tokenizer regex of `llm_tokenizer_bpe`'s constructor
  (llama-vocab.cpp), a repetition bound `{m,n}` moved by one;
- table: one code point of unicode-data.cpp's tables changed: a range of `unicode_ranges_flags` starting
  one later (its first code point takes the previous range's category), a whitespace code point dropped
  from `unicode_set_whitespace`, a lowercase mapping made the identity, an NFD decomposition made the
  identity. The tables hold 7,000 entries: a sample, chosen by the sha256 of each entry.

Arid lines are skipped, as Google's mutation testing does (Petrović & Ivanković, ICSE-SEIP 2018): logging
(`LLAMA_LOG_*`), assertions and aborts (`GGML_ASSERT`, `GGML_ABORT`, `assert`), thrown errors, and
`print_info`. What a mutant changes is kept as text: its span in the file, its shape (an expression
chosen at run time, or a statement guarded), and the span's mutated text on one line (comments gone),
so schemata keep the file's line numbers (tokconf.strength.schemata).
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import itertools
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import TokconfError

if TYPE_CHECKING:
    from clang import cindex

# The files mutated, relative to a llama.cpp tree.
VOCAB, UNICODE, UNICODE_DATA = "src/llama-vocab.cpp", "src/unicode.cpp", "src/unicode-data.cpp"
SYNTAX_FILES = (VOCAB, UNICODE)  # parsed by clang; unicode-data.cpp is generated tables (TABLE)
TABLE_SAMPLE = 16  # entries of each unicode-data table mutated

# Logging, assertions, aborts and error text: what a port's tokens never depend on.
ARID = re.compile(r"LLAMA_LOG_|GGML_ASSERT|GGML_ABORT|\bassert\s*\(|\bthrow\b|printf|\bformat\(|std::cerr")
ARID_FUNCTIONS = frozenset({"print_info"})


class Operator(enum.Enum):
    """What a mutant changes."""

    RELATIONAL = "relational"
    ARITHMETIC = "arithmetic"
    LOGICAL = "logical"
    NEGATE = "negate"
    CONSTANT = "constant"
    DELETE = "delete"
    RETURN = "return"
    PATTERN = "pattern"
    TABLE = "table"


class Shape(enum.Enum):
    """How a mutant is written into a schemata file."""

    EXPRESSION = "expression"  # (mutant active ? mutated : original)
    STATEMENT = "statement"  # { if (!mutant active) { original } }


@dataclass(frozen=True)
class Mutant:
    """One mutant: the span [start, end) of `file` (bytes), and its text once mutated (`mutated`, one
    line; empty for a deleted statement). `key` names it for good (file:line:column:operator:what),
    `function` is where it is, `codepoints` what a table mutant changes."""

    key: str
    file: str
    line: int
    column: int
    operator: Operator
    function: str
    start: int
    end: int
    shape: Shape
    mutated: str
    codepoints: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key, "file": self.file, "line": self.line, "column": self.column,
            "operator": self.operator.value, "function": self.function, "start": self.start, "end": self.end,
            "shape": self.shape.value, "mutated": self.mutated, "codepoints": list(self.codepoints),
        }  # fmt: skip

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Mutant:
        return cls(
            data["key"], data["file"], data["line"], data["column"], Operator(data["operator"]), data["function"],
            data["start"], data["end"], Shape(data["shape"]), data["mutated"], tuple(data["codepoints"]),
        )  # fmt: skip

    def applied(self, source: bytes) -> bytes:
        """The whole file with this mutant alone applied (what `tokconf strength show` diffs)."""
        return source[: self.start] + self.mutated.encode() + source[self.end :]

    def diff(self, source: bytes) -> str:
        """A unified diff of the file with this mutant applied, three lines of context."""
        before = source.decode("utf-8", errors="replace").splitlines(keepends=True)
        after = self.applied(source).decode("utf-8", errors="replace").splitlines(keepends=True)
        name = self.file
        return "".join(difflib.unified_diff(before, after, f"a/{name}", f"b/{name}", n=3))


def _key(file: str, line: int, column: int, operator: Operator, what: str) -> str:
    return f"{Path(file).name}:{line}:{column}:{operator.value}:{what}"


# --- the syntax-tree operators ---------------------------------------------------------------------

RELATIONAL: dict[str, tuple[str, ...]] = {
    "<": ("<=", ">"),
    "<=": ("<", ">="),
    ">": (">=", "<"),
    ">=": (">", "<="),
    "==": ("!=",),
    "!=": ("==",),
}
ARITHMETIC: dict[str, tuple[str, ...]] = {
    "+": ("-",), "-": ("+",), "*": ("/",), "/": ("*",), "%": ("/",), "<<": (">>",), ">>": ("<<",),
    "&": ("|",), "|": ("&",), "^": ("|",),
    "+=": ("-=",), "-=": ("+=",), "*=": ("/=",), "/=": ("*=",), "<<=": (">>=",), ">>=": ("<<=",),
    "&=": ("|=",), "|=": ("&=",), "^=": ("|=",),
}  # fmt: skip
LOGICAL: dict[str, tuple[str, ...]] = {"&&": ("||",), "||": ("&&",)}
INCREMENT = {"++": "--", "--": "++"}
INTEGER = re.compile(r"(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)([uUlL]*)$")


def clang_index() -> cindex.Index:
    """libclang's index, or an error saying how to install it."""
    try:
        from clang import cindex
    except ImportError:
        raise TokconfError(
            "making mutants needs libclang's Python bindings", "pip install 'tokconf[strength]'"
        ) from None
    return cindex.Index.create()


def system_includes() -> list[str]:
    """The C++ compiler's own include folders (`c++ -E -v`): libclang's wheel ships no headers, and
    llama-vocab.cpp includes the standard library."""
    done = subprocess.run(["c++", "-x", "c++", "-E", "-v", "-"], input="", capture_output=True, text=True, check=False)
    lines = done.stderr.splitlines()
    try:
        first = lines.index("#include <...> search starts here:") + 1
        last = lines.index("End of search list.")
    except ValueError:
        raise TokconfError("cannot find the C++ compiler's include folders (c++ -E -v)", "install g++") from None
    return [f"-isystem{line.strip()}" for line in lines[first:last]]


def syntax_mutants(tree: Path, file: str) -> list[Mutant]:
    """Every mutant of the syntax-tree operators in `file` of the llama.cpp tree `tree`."""
    from clang import cindex

    path = tree / file
    args = ["-x", "c++", "-std=gnu++17", f"-I{tree / 'src'}", f"-I{tree / 'include'}", f"-I{tree / 'ggml' / 'include'}"]
    unit = clang_index().parse(str(path), args=[*args, *system_includes()])
    errors = [str(d) for d in unit.diagnostics if d.severity >= cindex.Diagnostic.Error]
    if errors:
        raise TokconfError(f"clang cannot parse {path}: {errors[0]}", "check the tree and the compiler's headers")
    source = path.read_bytes()
    finder = _Finder(unit, file, source)
    finder.visit(unit.cursor, [])
    keys: dict[str, int] = {}
    found = []
    for mutant in finder.found:  # one key each: two mutants alike at one place get #2, #3
        keys[mutant.key] = keys.get(mutant.key, 0) + 1
        found.append(mutant if keys[mutant.key] == 1 else _renamed(mutant, f"{mutant.key}#{keys[mutant.key]}"))
    return found


def _renamed(mutant: Mutant, key: str) -> Mutant:
    return Mutant(key, *[getattr(mutant, f) for f in ("file", "line", "column", "operator", "function", "start",
                                                       "end", "shape", "mutated", "codepoints")])  # fmt: skip


FUNCTIONS = ("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR", "FUNCTION_TEMPLATE", "CONVERSION_FUNCTION")
NO_CONSTANTS = (
    "CASE_STMT",
    "TEMPLATE_REF",
    "STATIC_ASSERT",
    "ENUM_CONSTANT_DECL",
    "FIELD_DECL",
    "TEMPLATE_NON_TYPE_PARAMETER",
)
STATEMENTS = ("CALL_EXPR", "BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR", "UNEXPOSED_EXPR",
              "CXX_MEMBER_CALL_EXPR")  # fmt: skip
ARITHMETIC_TYPES = frozenset((
    "BOOL", "CHAR_U", "UCHAR", "CHAR16", "CHAR32", "USHORT", "UINT", "ULONG", "ULONGLONG", "CHAR_S", "SCHAR",
    "WCHAR", "SHORT", "INT", "LONG", "LONGLONG", "FLOAT", "DOUBLE", "LONGDOUBLE",
))  # fmt: skip
INTEGER_TYPES = ARITHMETIC_TYPES - {"BOOL", "FLOAT", "DOUBLE", "LONGDOUBLE"}


class _Finder:
    """Walks one translation unit, collecting the mutants of the main file's non-arid code."""

    def __init__(self, unit: cindex.TranslationUnit, file: str, source: bytes) -> None:
        self.unit, self.file, self.source = unit, file, source
        self.lines = source.split(b"\n")
        self.found: list[Mutant] = []

    def visit(self, cursor: cindex.Cursor, stack: list[cindex.Cursor]) -> None:
        for child in cursor.get_children():
            location = child.location
            if location.file is None or not location.file.name.endswith(self.file):
                continue
            self._site(child, stack)
            self.visit(child, [*stack, child])

    # -- helpers

    def _text(self, start: int, end: int) -> str:
        return self.source[start:end].decode("utf-8", errors="replace")

    def _function(self, stack: list[cindex.Cursor]) -> str:
        for cursor in reversed(stack):
            if cursor.kind.name in FUNCTIONS:
                parent = cursor.semantic_parent
                owner = (
                    parent.spelling if parent is not None and parent.kind.name in ("STRUCT_DECL", "CLASS_DECL") else ""
                )
                if owner == "impl" and parent.semantic_parent is not None:
                    owner = f"{parent.semantic_parent.spelling}::impl"
                return f"{owner}::{cursor.spelling}" if owner else cursor.spelling
        return ""

    def _arid(self, cursor: cindex.Cursor, stack: list[cindex.Cursor]) -> bool:
        if self._function(stack).split("::")[-1] in ARID_FUNCTIONS:
            return True
        first, last = cursor.extent.start.line, cursor.extent.end.line
        text = b"\n".join(self.lines[first - 1 : last]).decode("utf-8", errors="replace")
        return bool(ARID.search(text)) or any(ARID.search(self._line_of(c)) for c in stack[-3:])

    def _line_of(self, cursor: cindex.Cursor) -> str:
        line: int = cursor.extent.start.line
        return self.lines[line - 1].decode("utf-8", errors="replace")

    def _tokens(self, cursor: cindex.Cursor) -> list[cindex.Token]:
        return list(self.unit.get_tokens(extent=cursor.extent))

    def _one_line(self, start: int, end: int, edits: list[tuple[int, int, str]]) -> str:
        """The span with `edits` (start, end, text) applied, on one line: kept as written when it is
        one line, else its tokens joined by spaces (comments and line breaks gone)."""
        text = self.source[start:end]
        if b"\n" not in text:
            out, pos = [], start
            for edit_start, edit_end, new in sorted(edits):
                out += [self._text(pos, edit_start), new]
                pos = edit_end
            return "".join([*out, self._text(pos, end)])
        pieces = []
        pending = sorted(edits)
        for token in self.unit.get_tokens(extent=self.unit.get_extent(str(self.file_path), (start, end))):
            offset = token.extent.start.offset
            if pending and pending[0][0] <= offset < pending[0][1]:
                if offset == pending[0][0]:
                    pieces.append(pending[0][2])
                if token.extent.end.offset >= pending[0][1]:
                    pending.pop(0)
                continue
            pieces.append(token.spelling)
        return " ".join(p for p in pieces if p)

    @property
    def file_path(self) -> str:
        return str(self.unit.spelling)

    def _add(self, cursor: cindex.Cursor, stack: list[cindex.Cursor], operator: Operator, what: str, start: int,
             end: int, mutated: str, shape: Shape = Shape.EXPRESSION, at: int | None = None) -> None:  # fmt: skip
        line, column = self._position(at if at is not None else start)
        key = _key(self.file, line, column, operator, what)
        self.found.append(
            Mutant(key, self.file, line, column, operator, self._function(stack), start, end, shape, mutated)
        )

    def _position(self, offset: int) -> tuple[int, int]:
        before = self.source[:offset]
        return before.count(b"\n") + 1, offset - (before.rfind(b"\n") + 1) + 1

    # -- the sites

    def _site(self, cursor: cindex.Cursor, stack: list[cindex.Cursor]) -> None:
        kind = cursor.kind.name
        if kind not in (
            "BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR", "UNARY_OPERATOR", "INTEGER_LITERAL",
            "CXX_BOOL_LITERAL_EXPR", "IF_STMT", "WHILE_STMT", "CONDITIONAL_OPERATOR", "RETURN_STMT", "COMPOUND_STMT",
        ):  # fmt: skip
            return
        if not self._function(stack) or self._arid(cursor, stack):
            return
        start, end = cursor.extent.start.offset, cursor.extent.end.offset
        if kind in ("BINARY_OPERATOR", "COMPOUND_ASSIGNMENT_OPERATOR"):
            self._binary(cursor, stack, start, end)
        elif kind == "UNARY_OPERATOR":
            self._unary(cursor, stack, start, end)
        elif kind == "INTEGER_LITERAL":
            self._integer(cursor, stack, start, end)
        elif kind == "CXX_BOOL_LITERAL_EXPR":
            if not any(c.kind.name in NO_CONSTANTS for c in stack):
                text = self._text(start, end)
                flipped = {"true": "false", "false": "true"}.get(text)
                if flipped:
                    self._add(cursor, stack, Operator.CONSTANT, f"{text}->{flipped}", start, end, flipped)
        elif kind in ("IF_STMT", "WHILE_STMT", "CONDITIONAL_OPERATOR"):
            children = list(cursor.get_children())
            condition = children[0] if children and children[0].kind.is_expression() else None
            if condition is not None and condition.type.get_canonical().kind.name in ARITHMETIC_TYPES:
                s, e = condition.extent.start.offset, condition.extent.end.offset
                if s < e:
                    self._add(cursor, stack, Operator.NEGATE, "not", s, e, f"!({self._one_line(s, e, [])})")
        elif kind == "RETURN_STMT":
            self._return(cursor, stack)
        elif kind == "COMPOUND_STMT":
            for statement in cursor.get_children():
                self._statement(statement, [*stack, cursor])

    def _operator_token(self, cursor: cindex.Cursor) -> cindex.Token | None:
        children = list(cursor.get_children())
        if len(children) != 2:
            return None
        after = children[0].extent.end.offset
        for token in self._tokens(cursor):
            if token.extent.start.offset >= after:
                return token
        return None

    def _binary(self, cursor: cindex.Cursor, stack: list[cindex.Cursor], start: int, end: int) -> None:
        token = self._operator_token(cursor)
        if token is None:
            return
        op = token.spelling
        types = {c.type.get_canonical().kind.name for c in cursor.get_children()}
        table: dict[str, tuple[str, ...]]
        if op in RELATIONAL:
            table, operator = RELATIONAL, Operator.RELATIONAL
        elif op in LOGICAL:
            table, operator = LOGICAL, Operator.LOGICAL
        elif op in ARITHMETIC and types <= INTEGER_TYPES | {"FLOAT", "DOUBLE"}:
            table, operator = ARITHMETIC, Operator.ARITHMETIC
        else:
            return
        s, e = token.extent.start.offset, token.extent.end.offset
        if self._text(s, e) != op:  # a macro's expansion: not the text of this file
            return
        for new in table[op]:
            self._add(
                cursor, stack, operator, f"{op}->{new}", start, end, self._one_line(start, end, [(s, e, new)]), at=s
            )

    def _unary(self, cursor: cindex.Cursor, stack: list[cindex.Cursor], start: int, end: int) -> None:
        tokens = self._tokens(cursor)
        if not tokens:
            return
        for token in (tokens[0], tokens[-1]):
            op, s, e = token.spelling, token.extent.start.offset, token.extent.end.offset
            if self._text(s, e) != op:
                continue
            if op in INCREMENT and {c.type.get_canonical().kind.name for c in cursor.get_children()} <= INTEGER_TYPES:
                new = INCREMENT[op]
                self._add(cursor, stack, Operator.ARITHMETIC, f"{op}->{new}", start, end,
                          self._one_line(start, end, [(s, e, new)]), at=s)  # fmt: skip
                return
            if op == "!" and token is tokens[0]:  # `!x` becomes `!!x`: x as a bool, whatever its type
                self._add(cursor, stack, Operator.NEGATE, "drop-!", start, end,
                          self._one_line(start, end, [(s, e, "!!")]), at=s)  # fmt: skip
                return

    def _integer(self, cursor: cindex.Cursor, stack: list[cindex.Cursor], start: int, end: int) -> None:
        if any(c.kind.name in NO_CONSTANTS for c in stack) or any(
            c.kind.name == "VAR_DECL" and c.type.kind.name in ("CONSTANTARRAY", "INCOMPLETEARRAY") for c in stack
        ):
            return
        text = self._text(start, end)
        found = INTEGER.match(text)
        if found is None:
            return
        digits, suffix = found.groups()
        value = int(digits, 0) if not digits.startswith("0") or digits == "0" or digits[1] in "xXbB" else int(digits, 8)
        for new in (value + 1, value - 1):
            if new < 0:
                continue
            written = (hex(new) if digits[:2].lower() == "0x" else str(new)) + suffix
            self._add(cursor, stack, Operator.CONSTANT, f"{text}->{written}", start, end, written)

    def _return(self, cursor: cindex.Cursor, stack: list[cindex.Cursor]) -> None:
        children = list(cursor.get_children())
        if len(children) != 1:
            return
        value = children[0]
        s, e = value.extent.start.offset, value.extent.end.offset
        kind = value.type.get_canonical().kind.name
        text = self._text(s, e)
        if kind == "BOOL":
            self._add(cursor, stack, Operator.RETURN, "negated", s, e, f"!({self._one_line(s, e, [])})")
        elif kind in INTEGER_TYPES:
            new = "1" if text.strip() == "0" else "0"
            self._add(cursor, stack, Operator.RETURN, f"->{new}", s, e, new)

    def _statement(self, statement: cindex.Cursor, stack: list[cindex.Cursor]) -> None:
        """An expression statement, `break` or `continue` directly in a block: deleted."""
        kind = statement.kind.name
        if kind not in (*STATEMENTS, "BREAK_STMT", "CONTINUE_STMT"):
            return
        if kind == "UNARY_OPERATOR" and not any(t.spelling in INCREMENT for t in self._tokens(statement)):
            return
        if kind == "BINARY_OPERATOR" and (self._operator_token(statement) or _NoToken).spelling != "=":
            return
        if self._arid(statement, stack):
            return
        start, end = statement.extent.start.offset, statement.extent.end.offset
        semicolon = self.source.find(b";", end)
        if semicolon < 0 or self.source[end:semicolon].strip():
            return
        what = "break" if kind == "BREAK_STMT" else "continue" if kind == "CONTINUE_STMT" else "statement"
        self._add(statement, stack, Operator.DELETE, what, start, semicolon + 1, "", Shape.STATEMENT)


class _NoToken:
    spelling = ""


# --- the domain operators --------------------------------------------------------------------------


def pattern_mutants(tree: Path) -> list[Mutant]:
    """Each pre-tokenizer regex literal of `llm_tokenizer_bpe`'s constructor (llama-vocab.cpp): every
    top-level alternative removed in turn, every repetition bound moved by one. Read from the
    literal's source text (C escapes kept as written)."""
    source = (tree / VOCAB).read_bytes()
    text = source.decode("utf-8")
    begin = text.index("llm_tokenizer_bpe(const llama_vocab & vocab)")
    finish = text.index("std::vector<std::string> regex_exprs;", begin)
    found: list[Mutant] = []
    seen: set[str] = set()
    for literal in re.finditer(r'^\s*"((?:\\.|[^"\\])*)",?\s*$', text[begin:finish], re.M):
        body = literal[1]
        start = len(text[: begin + literal.start(1)].encode()) - 1  # the opening quote
        end = start + len(body.encode()) + 2
        line = text[: begin + literal.start(1)].count("\n") + 1
        for what, changed in _pattern_changes(body):
            key = f"{Path(VOCAB).name}:{line}:pattern:{what}:{hashlib.sha256(body.encode()).hexdigest()[:8]}"
            if key in seen:
                continue
            seen.add(key)
            found.append(Mutant(key, VOCAB, line, 1, Operator.PATTERN, "llm_tokenizer_bpe::llm_tokenizer_bpe", start,
                                end, Shape.EXPRESSION, f'"{changed}"'))  # fmt: skip
    return found


def _units(body: str) -> list[str]:
    """The regex atoms of a C string literal's body as written: a C escape is one unit, and a regex
    escape (a `\\\\` unit) takes the unit after it along."""
    c_units = re.findall(r"\\x[0-9a-fA-F]+|\\.|.", body, re.S)
    atoms, i = [], 0
    while i < len(c_units):
        if c_units[i] == "\\\\" and i + 1 < len(c_units):
            atoms.append(c_units[i] + c_units[i + 1])
            i += 2
        else:
            atoms.append(c_units[i])
            i += 1
    return atoms


def _pattern_changes(body: str) -> Iterator[tuple[str, str]]:
    """(what, changed body) of every alternative removed and every bound moved."""
    atoms = _units(body)
    depth, in_class, splits = 0, False, []
    for index, atom in enumerate(atoms):
        if in_class:
            in_class = atom != "]"
        elif atom == "[":
            in_class = True
        elif atom == "(":
            depth += 1
        elif atom == ")":
            depth -= 1
        elif atom == "|" and depth == 0:
            splits.append(index)
    bounds = [0, *[s + 1 for s in splits], len(atoms) + 1]
    alternatives = ["".join(atoms[a : b - 1]) for a, b in itertools.pairwise(bounds)]
    if len(alternatives) > 1:
        for index in range(len(alternatives)):
            yield f"drop-alternative-{index + 1}", "|".join(alternatives[:index] + alternatives[index + 1 :])
    joined = "".join(atoms)
    for number, found in enumerate(re.finditer(r"\{(\d+)(?:,(\d+))?\}", joined)):
        low, high = found[1], found[2]
        for delta in (-1, 1):
            bound = int(high or low) + delta
            if bound < 1 or (high and bound < int(low)):
                continue
            new = f"{{{low},{bound}}}" if high else f"{{{bound}}}"
            yield (
                f"bound-{number + 1}{'+' if delta > 0 else '-'}1",
                joined[: found.start()] + new + joined[found.end() :],
            )


TABLE_ENTRY = re.compile(rb"^\{?(0x[0-9A-F]+)(?:, (0x[0-9A-F]+))?(?:, (0x[0-9A-F]+))?\}?,$", re.M)


@dataclass(frozen=True)
class _Table:
    name: str
    change: str  # which entries and how: `start+1`, `drop`, `identity`


TABLES = (
    _Table("unicode_ranges_flags", "start+1"),
    _Table("unicode_set_whitespace", "drop"),
    _Table("unicode_map_lowercase", "identity"),
    _Table("unicode_ranges_nfd", "identity"),
)


def table_mutants(tree: Path, sample: int = TABLE_SAMPLE) -> list[Mutant]:
    """`sample` entries of each table of unicode-data.cpp, changed (TABLES), the entries chosen by the
    sha256 of their text: the same ones for the same file."""
    source = (tree / UNICODE_DATA).read_bytes()
    found: list[Mutant] = []
    for table in TABLES:
        head = source.index(f" {table.name} = {{".encode())
        close = source.index(b"\n};", head)
        entries = list(TABLE_ENTRY.finditer(source, head, close))
        if table.change == "start+1":  # a range of one code point would vanish into the next: another change
            entries = [e for e, n in itertools.pairwise(entries) if int(n[1], 16) - int(e[1], 16) > 1]
        chosen = sorted(entries, key=lambda e: hashlib.sha256(e[0]).hexdigest())[:sample]
        first_whitespace = entries[0][1].decode()
        for entry in sorted(chosen, key=lambda e: e.start()):
            line = source[: entry.start()].count(b"\n") + 1
            first = int(entry[1], 16)
            cps: tuple[int, ...]
            if table.change == "start+1":
                start, end, new, cps = entry.start(1), entry.end(1), f"0x{first + 1:06X}", (first,)
            elif table.change == "drop":  # a set holding another member twice: this one is gone
                if entry[1].decode() == first_whitespace:
                    continue
                start, end, new, cps = entry.start(1), entry.end(1), first_whitespace, (first,)
            elif table.name == "unicode_map_lowercase":
                start, end, new, cps = entry.start(2), entry.end(2), entry[1].decode(), (first,)
            else:
                last = int(entry[2], 16)
                start, end, new = entry.start(3), entry.end(3), entry[1].decode()
                cps = tuple(range(first, last + 1))
            key = _key(UNICODE_DATA, line, 1, Operator.TABLE, f"{table.name}:{table.change}:{entry[1].decode()}")
            found.append(Mutant(key, UNICODE_DATA, line, 1, Operator.TABLE, table.name, start, end, Shape.EXPRESSION,
                                new, cps))  # fmt: skip
    return found


def all_mutants(tree: Path) -> list[Mutant]:
    """Every mutant of the tree's tokenizer sources, in file and position order."""
    found = [m for file in SYNTAX_FILES for m in syntax_mutants(tree, file)]
    found += pattern_mutants(tree) + table_mutants(tree)
    order = {file: i for i, file in enumerate((*SYNTAX_FILES, UNICODE_DATA))}
    return sorted(found, key=lambda m: (order[m.file], m.start, m.end, m.key))
