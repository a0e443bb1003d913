"""YAML input files read strictly: every configuration file, the trace catalogue, the
published numbers and the machine descriptions go through `read_yaml` or `parse_yaml`.

Plain YAML keeps the last value of a key given twice in one mapping, so a typo that repeats
a key silently discards the first setting; here it is an error naming the file, the key
and both lines. Merge keys (`<<: *anchor`) may still be overridden, as YAML intends.
A document is refused before a caller sees it unless:

- its aliases repeat at most MAX_REPEATED_NODES nodes in all, and it nests at most
  MAX_DEPTH deep (a few lines of nested aliases otherwise expand to billions of values),
  checked on the parsed nodes before any value is built;
- every mapping key is a string;
- no plain scalar is one that YAML 1.1 (PyYAML, and Snakemake reading a `--configfile`)
  reads otherwise than YAML 1.2: octal `010`, sexagesimal `1:20`, `0b` binary,
  underscores in numbers, and the booleans `yes`, `no`, `on`, `off`. Such a file then
  means the same to every reader, and a surprise is never read silently.

Every problem (unreadable file, syntax error, any of the above) is one line:
`<file>:<line>: <what was found>; expected <what>`.
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from simcore.base.errors import SimcoreError
from simcore.base.regular import open_regular

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"

#: Nodes the aliases of one document may repeat in all (each alias counts every node of
#: what it names); the repository's files repeat a few dozen.
MAX_REPEATED_NODES = 100_000
#: Nesting of sequences and mappings, aliases expanded; configurations nest about 8 deep.
MAX_DEPTH = 100

#: Plain scalars that YAML 1.1 reads as a number or a boolean and YAML 1.2 does not, or
#: as another number: what each would be mistaken for.
_YAML11_ONLY = (
    (re.compile(r"[-+]?0[0-7_]+"), "an octal number to YAML 1.1 (010 is 8), a decimal one "
     "to YAML 1.2", "a number without a leading zero, or a quoted string"),
    (re.compile(r"[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?"), "a sexagesimal number "
     "(YAML 1.1 reads 1:20 as 80)", "a plain number, or a quoted string"),
    (re.compile(r"[-+]?0b[0-1_]+"), "a binary number", "a decimal number"),
    (re.compile(r"[-+]?(0x)?[0-9a-fA-F]*_[0-9a-fA-F_.]*([eE][-+][0-9]+)?"),
     "a number with '_' (YAML 1.1 drops it)", "a number without '_', or a quoted string"),
    (re.compile(r"yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF"), "a YAML 1.1 boolean",
     "true or false, or a quoted string"),
)


_KINDS = {"int": "an integer", "float": "a number", "bool": "a boolean", "null": "null",
          "seq": "a sequence", "map": "a mapping", "timestamp": "a date"}


class RefusedYAMLError(yaml.MarkedYAMLError):
    """A document that parses but is refused: a repeated or non-string key, a YAML 1.1
    surprise, too many repeated nodes or too deep a nesting."""


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader that checks the document's node graph before building anything, and whose
    mappings refuse a key given twice or a key that is not a string."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return self.construct_document(node)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            if key_node.tag != _STR:
                kind = _KINDS.get(key_node.tag.rsplit(":", 1)[-1], key_node.tag)
                raise RefusedYAMLError(
                    problem=f"key {_text(key_node)} is {kind}; expected a string (quote "
                            "it)", problem_mark=key_node.start_mark)
            key = key_node.value
            first = seen.get(key)
            if first is not None:
                raise RefusedYAMLError(
                    problem=f"key {key!r} given twice (first on line {first}); expected each "
                            "key once in a mapping", problem_mark=key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)

    def construct_yaml_plain(self, node: yaml.ScalarNode) -> Any:
        """An int, float or bool, after refusing a form only YAML 1.1 reads so."""
        for pattern, found, expected in _YAML11_ONLY:
            if pattern.fullmatch(node.value):
                raise RefusedYAMLError(problem=f"{node.value!r} is {found}; expected "
                                       f"{expected}", problem_mark=node.start_mark)
        return _CONSTRUCTORS[node.tag](self, node)


_CONSTRUCTORS = {tag: _StrictLoader.yaml_constructors[tag] for tag in
                 ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                  "tag:yaml.org,2002:bool")}
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _StrictLoader.construct_mapping)
for _tag in _CONSTRUCTORS:
    _StrictLoader.add_constructor(_tag, _StrictLoader.construct_yaml_plain)


def _text(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return f"at column {node.start_mark.column + 1}"


def _check_size(root: yaml.Node) -> None:
    """Refuse a document whose aliases repeat more than MAX_REPEATED_NODES nodes, that
    nests deeper than MAX_DEPTH, or that holds itself; each node is visited once."""
    size: dict[int, int] = {}  # a node's expanded node count
    depth: dict[int, int] = {}  # its expanded nesting
    distinct = 0
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        children = ([n for pair in node.value for n in pair]
                    if isinstance(node, yaml.MappingNode) else
                    node.value if isinstance(node, yaml.SequenceNode) else [])
        if done:
            size[id(node)] = 1 + sum(size[id(c)] for c in children)
            depth[id(node)] = 1 + max((depth[id(c)] for c in children), default=0)
            if depth[id(node)] > MAX_DEPTH:
                raise RefusedYAMLError(problem=f"nesting deeper than {MAX_DEPTH}; expected "
                                       "at most that", problem_mark=node.start_mark)
            if size[id(node)] - distinct > MAX_REPEATED_NODES:
                raise RefusedYAMLError(
                    problem=f"aliases that repeat more than {MAX_REPEATED_NODES:,} nodes; "
                            "expected fewer (write the values out, or repeat smaller "
                            "anchors)", problem_mark=node.start_mark)
            continue
        if id(node) in size:
            continue
        if id(node) in depth:  # entered but not finished: the node is inside itself
            raise RefusedYAMLError(problem="an alias inside the anchor it names; expected a "
                                   "document that does not hold itself",
                                   problem_mark=node.start_mark)
        depth[id(node)] = -1
        distinct += 1
        stack.append((node, True))
        stack.extend((c, False) for c in children)


def parse_yaml(text: str | bytes, name: str, error: type[SimcoreError]) -> Any:
    """The document in `text` (named `name` in errors); a syntax error or a refused
    document (see the module) raises `error` with one line naming the place."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = " ".join(str(exc.problem or exc.context or "").split())
        if isinstance(exc, RefusedYAMLError):
            raise error(f"{where}: {problem}") from None
        raise error(f"{where}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise error(f"{name}: not valid YAML: {' '.join(str(exc).split())}") from None


def read_yaml(path: str | os.PathLike[str], error: type[SimcoreError]) -> Any:
    """The document in the file at `path`, as `parse_yaml` reads it; an unreadable file
    raises `error` too."""
    try:
        with open_regular(path, "r", encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise error(f"{path}: cannot read: {reason}") from None
    return parse_yaml(text, str(path), error)
