"""The ``updateDescription`` of a change stream's update events (change streams spec,
"UpdateDescription"; the server's delta-oplog parser).

A 7.0 server logs an update as a diff and turns the diff into ``updatedFields``,
``removedFields``, ``truncatedArrays`` and, with ``showExpandedEvents``,
``disambiguatedPaths``. The simulator logs full images, so the description is rebuilt
from the document before and after the write, at the granularity a server's diff has:

- an update with operators reports each path an operator named (``$set: {"a.b": 1}``
  gives ``a.b``; a path created under a missing field is reported at the first missing
  field, with its whole new value; ``$push`` and ``$addToSet`` report the appended
  elements by index; other array operators the whole array); a positional path
  (``$``, ``$[]``, ``$[name]``) is compared element by element from its array;
- a pipeline update (or a change of unknown origin) is compared field by field,
  recursing into embedded documents and arrays; a shortened array is reported in
  ``truncatedArrays``.

A path is ambiguous when one of its field names (not an array index) is numeric (past
the first) or contains a dot; ``disambiguatedPaths`` lists its parts, indexes as ints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import bson

__all__ = ["describe_update"]

Document = dict[str, Any]
Part = tuple[str, bool]  # a path component and whether it is an array index

_NUMERIC = re.compile(r"0|[1-9][0-9]*")
_APPENDING = ("$push", "$addToSet")


def describe_update(
    pre: Mapping[str, Any], post: Mapping[str, Any], update: Any, *, disambiguate: bool
) -> Document:
    """The updateDescription of the change from ``pre`` to ``post`` made by ``update``."""
    builder = _Builder()
    if isinstance(update, Mapping) and update:
        for operator, path in _operator_paths(update):
            _describe_path(builder, pre, post, path.split("."), operator)
    if builder.empty and not _same(pre, post):
        builder = _Builder()
        _diff_documents(builder, pre, post, [])
    return builder.description(disambiguate)


def _operator_paths(update: Mapping[str, Any]) -> list[tuple[str, str]]:
    paths: list[tuple[str, str]] = []
    for operator, spec in update.items():
        if not isinstance(spec, Mapping) or operator == "$setOnInsert":
            continue
        for path, value in spec.items():
            paths.append((operator, str(path)))
            if operator == "$rename" and isinstance(value, str):
                paths.append((operator, value))
    return paths


class _Builder:
    def __init__(self) -> None:
        self.updated: Document = {}
        self.removed: list[str] = []
        self.truncated: list[Document] = []
        self.ambiguous: Document = {}
        self._seen: set[str] = set()

    @property
    def empty(self) -> bool:
        return not (self.updated or self.removed or self.truncated)

    def update(self, path: Sequence[Part], value: Any) -> None:
        dotted = self._note(path)
        if dotted is not None:
            self.updated[dotted] = value

    def remove(self, path: Sequence[Part]) -> None:
        dotted = self._note(path)
        if dotted is not None:
            self.removed.append(dotted)

    def truncate(self, path: Sequence[Part], size: int) -> None:
        dotted = self._note(path, twice=True)
        if dotted is not None:
            self.truncated.append({"field": dotted, "newSize": size})

    def _note(self, path: Sequence[Part], *, twice: bool = False) -> Any:
        dotted = ".".join(name for name, _ in path)
        if dotted in self._seen and not twice:
            return None
        self._seen.add(dotted)
        ambiguous = False
        for position, (name, is_index) in enumerate(path):
            if is_index or ambiguous:
                continue
            numeric = position > 0 and _NUMERIC.fullmatch(name) is not None
            ambiguous = numeric or "." in name
        if ambiguous:
            self.ambiguous[dotted] = [int(name) if is_index else name for name, is_index in path]
        return dotted

    def description(self, disambiguate: bool) -> Document:
        out: Document = {
            "updatedFields": self.updated,
            "removedFields": self.removed,
            "truncatedArrays": self.truncated,
        }
        if disambiguate:
            out["disambiguatedPaths"] = self.ambiguous
        return out


def _same(a: Any, b: Any) -> bool:
    """Equal as BSON (types and field order count), as a server's diff compares."""
    try:
        return bson.encode({"v": a}) == bson.encode({"v": b})
    except (bson.errors.InvalidDocument, TypeError, OverflowError):
        return bool(a == b)


def _child(node: Any, name: str) -> tuple[bool, Any, bool]:
    """(present, value, is an array index) of ``name`` under ``node``."""
    if isinstance(node, Mapping):
        return name in node, node.get(name), False
    if isinstance(node, list):
        if _NUMERIC.fullmatch(name) and int(name) < len(node):
            return True, node[int(name)], True
        return False, None, True
    return False, None, False


def _describe_path(
    builder: _Builder, pre: Any, post: Any, names: Sequence[str], operator: str
) -> None:
    walked: list[Part] = []
    for name in names:
        if name.startswith("$"):
            # A positional path: which elements it reached shows in the arrays themselves.
            _diff_values(builder, pre, post, walked)
            return
        pre_has, pre_child, is_index = _child(pre, name)
        post_has, post_child, post_index = _child(post, name)
        walked.append((name, is_index or post_index))
        if not pre_has:
            if post_has:
                builder.update(walked, post_child)
            return
        if not post_has:
            builder.remove(walked)
            return
        pre, post = pre_child, post_child
    if _same(pre, post):
        return
    if (
        operator in _APPENDING
        and isinstance(pre, list)
        and isinstance(post, list)
        and len(post) > len(pre)
        and _same(pre, post[: len(pre)])
    ):
        for index in range(len(pre), len(post)):
            builder.update([*walked, (str(index), True)], post[index])
        return
    builder.update(walked, post)


def _diff_values(builder: _Builder, pre: Any, post: Any, path: list[Part]) -> None:
    if isinstance(pre, Mapping) and isinstance(post, Mapping):
        _diff_documents(builder, pre, post, path)
    elif isinstance(pre, list) and isinstance(post, list):
        _diff_arrays(builder, pre, post, path)
    elif not _same(pre, post):
        builder.update(path, post)


def _diff_documents(
    builder: _Builder, pre: Mapping[str, Any], post: Mapping[str, Any], path: list[Part]
) -> None:
    changed: list[str] = []
    added: list[str] = []
    nested: list[str] = []
    for name, value in post.items():
        if name not in pre:
            added.append(name)
        elif _same(pre[name], value):
            continue
        elif (isinstance(pre[name], Mapping) and isinstance(value, Mapping)) or (
            isinstance(pre[name], list) and isinstance(value, list)
        ):
            nested.append(name)
        else:
            changed.append(name)
    # A server's diff lists modified fields, then new ones, then removals, then the
    # embedded documents and arrays it descends into.
    for name in changed + added:
        builder.update([*path, (name, False)], post[name])
    for name in pre:
        if name not in post:
            builder.remove([*path, (name, False)])
    for name in nested:
        _diff_values(builder, pre[name], post[name], [*path, (name, False)])


def _diff_arrays(builder: _Builder, pre: list[Any], post: list[Any], path: list[Part]) -> None:
    if len(post) < len(pre):
        builder.truncate(path, len(post))
    for index, value in enumerate(post):
        element = [*path, (str(index), True)]
        if index >= len(pre):
            builder.update(element, value)
        elif not _same(pre[index], value):
            _diff_values(builder, pre[index], value, element)
