"""YAML from elsewhere, read as plain data only: the one parser for every file tokconf did not just write.

Every YAML file tokconf reads may come from elsewhere (a recording, a decoding, a found file, a
corpus file, an expected-failure file), so `parse_yaml` reads only plain data: an alias (`*a`) is
refused, since a 1 KB file of nested aliases is a DAG whose `str()` or walk exhausts memory; a
repeated key is refused, since YAML would keep the last and hide the first; tags other than str,
int, bool, null, list and mapping are refused; and an int is plain ASCII decimal (`1_5496`, `0x10`,
`1:30` and numbers of 20 digits or more stay strings, which every field that wants an int then
refuses). `shown` cuts a value from such a file for a message.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, ClassVar

import yaml

_CORE = "tag:yaml.org,2002:"


class _Refused(yaml.YAMLError):
    """What `_StrictLoader` does not read."""


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class _StrictLoader(yaml.CSafeLoader):
    """libyaml's parser with a constructor for plain data only (see the module docstring).

    An alias is caught where PyYAML's constructor would hand out the object it made for the anchored
    node a second time: the node graph libyaml composes stays as small as the file, and nothing is
    ever expanded. Plain scalars are typed by its own implicit resolvers (below), a subset of YAML
    1.1's, so a file tokconf writes reads back exactly as PyYAML's own safe loader would read it; an
    explicit tag (`!!int 0x10`, `!!map x`) must fit its value as those would.
    """

    yaml_constructors: ClassVar[dict[Any, Any]] = {
        tag: yaml.CSafeLoader.yaml_constructors[tag] for tag in (None, _CORE + "str", _CORE + "seq", _CORE + "map")
    }  # None: an error for any other tag; int, bool and null are `_construct_scalar`'s

    def _first_met(self, children: list[yaml.Node]) -> None:
        """Refuse an alias among the nodes of a list or mapping: a node constructed before, being
        constructed (`&a [*a]`) or listed twice. Checked for all of them at once, at C speed: a
        decoding lists a quarter of a million pieces."""
        if (
            len(set(children)) == len(children)
            and self.constructed_objects.keys().isdisjoint(children)
            and self.recursive_objects.keys().isdisjoint(children)
        ):
            return
        met: set[yaml.Node] = set(self.constructed_objects) | set(self.recursive_objects)
        for child in children:
            if child in met:
                raise _Refused(f"an alias (`*name`) of the value anchored on line {_line(child)}: none is read")
            met.add(child)

    def construct_sequence(self, node: yaml.SequenceNode, deep: bool = False) -> list[Any]:
        if not isinstance(node, yaml.SequenceNode):
            raise _Refused(f"`!!seq` on a value that is no list (line {_line(node)})")
        self._first_met(node.value)
        return [self.construct_object(child) for child in node.value]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            raise _Refused(f"`!!map` on a value that is no mapping (line {_line(node)})")
        self._first_met([child for pair in node.value for child in pair])
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.construct_object(key_node)
            if not isinstance(key, str | int | None):  # bool is an int
                raise _Refused(f"a key that is not a string or a number on line {_line(key_node)}")
            if key in mapping:
                raise _Refused(f"the key {shown(key)} twice in one mapping, the second on line {_line(key_node)}")
            mapping[key] = self.construct_object(value_node)
        return mapping


# The plain scalars read as something other than a string: the text each is, the characters it may
# start with (how PyYAML indexes resolvers; "" for the empty scalar) and the value it stands for.
_SCALARS: dict[str, tuple[str, list[str], Callable[[str], object]]] = {
    "null": (r"~|null|Null|NULL|", ["~", "n", "N", ""], lambda text: None),
    "bool": (r"true|True|TRUE|false|False|FALSE", list("tTfF"), lambda text: text.lower() == "true"),
    "int": (r"-?(?:0|[1-9][0-9]{0,18})", list("-0123456789"), int),  # plain ASCII decimal, 64 bits
}


def _scalar(kind: str, loader: _StrictLoader, node: yaml.Node) -> object:
    """A null, bool or int, also under an explicit tag (`!!int 0x10`, `!!bool maybe`): its text must be
    one the resolvers would have read as that type."""
    pattern, _, value = _SCALARS[kind]
    if not isinstance(node, yaml.ScalarNode) or not re.fullmatch(pattern, node.value):
        raise _Refused(f"a value tagged `!!{kind}` that is not one (line {_line(node)})")
    return value(node.value)


_StrictLoader.yaml_implicit_resolvers = {}  # its own: PyYAML's resolve `0x10`, `1_5` and `2024-01-01` too
for _kind, (_pattern, _first, _) in _SCALARS.items():
    _StrictLoader.add_implicit_resolver(_CORE + _kind, re.compile(f"^(?:{_pattern})$"), _first)
    _StrictLoader.add_constructor(_CORE + _kind, functools.partial(_scalar, _kind))


def parse_yaml(text: str | bytes) -> Any:
    """YAML text parsed with the C loader, as plain data only (`_StrictLoader`); a refusal is a
    `yaml.YAMLError`."""
    return yaml.load(text, Loader=_StrictLoader)


def shown(value: object, limit: int = 60) -> str:
    """A value from a file as a message shows it: a string or a number cut to `limit` characters, a
    container by its type and size. Never `str()` of the whole value: one from a hostile file may be
    megabytes long."""
    if isinstance(value, list | dict | tuple | set):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an int of {value.bit_length()} bits"
    text = repr(value[: limit + 1] if isinstance(value, str | bytes) else value)
    return text if len(text) <= limit else text[:limit] + "…"
