"""YAML input files read strictly: every configuration file, the trace catalogue, the
published numbers and the machine descriptions go through `read_yaml` or `parse_yaml`.

Plain YAML keeps the last value of a key given twice in one mapping, so a typo that repeats
a key silently discards the first setting; here it is an error naming the file, the key
and both lines. Merge keys (`<<: *anchor`) may still be overridden, as YAML intends. Every
problem (unreadable file, syntax error, repeated key) is one line:
`<file>:<line>: <what was found>; expected <what>`.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from simcore.base.errors import SimcoreError

_MERGE = "tag:yaml.org,2002:merge"


class DuplicateKeyError(yaml.MarkedYAMLError):
    """A key given twice in one mapping."""


class _StrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """SafeLoader whose mappings refuse a key given twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: SafeLoader's own error follows
                continue
            if first is not None:
                raise DuplicateKeyError(
                    problem=f"key {key!r} given twice (first on line {first}); expected each "
                            "key once in a mapping", problem_mark=key_node.start_mark)
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _StrictLoader.construct_mapping)


def parse_yaml(text: str | bytes, name: str, error: type[SimcoreError]) -> Any:
    """The document in `text` (named `name` in errors); a syntax error or a repeated key
    raises `error` with one line naming the place."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = " ".join(str(exc.problem or exc.context or "").split())
        if isinstance(exc, DuplicateKeyError):
            raise error(f"{where}: {problem}") from None
        raise error(f"{where}: not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise error(f"{name}: not valid YAML: {' '.join(str(exc).split())}") from None


def read_yaml(path: str | os.PathLike[str], error: type[SimcoreError]) -> Any:
    """The document in the file at `path`, as `parse_yaml` reads it; an unreadable file
    raises `error` too."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise error(f"{path}: cannot read: {reason}") from None
    return parse_yaml(text, str(path), error)
