"""The chainable find-cursor modifiers and cursor indexing.

Spec: CRUD, "Find" (the find command's options: ``hint``, ``maxTimeMS``, ``comment``,
``collation``, ``max``, ``min``, ``allowDiskUse``). A modifier sets one field of the
find command the cursor will send, so it must be called before the cursor is
iterated; each returns the cursor, so calls chain as they do in other drivers:
``coll.find(f).sort("a").hint([("a", 1)]).max_time_ms(500)``.

Also here: how ``cursor[start:stop]`` maps to a skip and a limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, TypeVar, Union

from mongocore.api.arguments import _collation_or_none, _index_document
from mongocore.api.types import CollationSpec
from mongocore.errors import ConfigurationError

__all__ = ["FindModifiers", "IndexSpec", "index_spec", "slice_bounds"]

#: An index by name, or by its keys: ``"a_1"``, ``[("a", 1)]``, ``{"a": 1}``.
IndexSpec = Union[str, Sequence[tuple[str, Any]], Mapping[str, Any]]

_Self = TypeVar("_Self", bound="FindModifiers")


def index_spec(spec: IndexSpec) -> Union[str, dict[str, Any]]:
    """An index name as it is, or index keys as an ordered document."""
    if isinstance(spec, str):
        return spec
    if isinstance(spec, Mapping):
        return dict(spec)
    if isinstance(spec, (list, tuple)):
        # Keys alone are ascending: ["a", ("b", -1)] is {"a": 1, "b": -1}.
        return _index_document(spec)
    raise TypeError(f"an index must be a name or a list of keys, not {type(spec).__name__}")


def _bound_document(spec: Any) -> dict[str, Any]:
    # max/min take field -> bound pairs, not an index name; a bound may be any value.
    if isinstance(spec, Mapping):
        return dict(spec)
    if isinstance(spec, (list, tuple)):
        bounds: dict[str, Any] = {}
        for pair in spec:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise TypeError("max and min take (field, bound) pairs")
            bounds[str(pair[0])] = pair[1]
        return bounds
    raise TypeError(f"max and min take (field, bound) pairs, not {type(spec).__name__}")


#: OP_QUERY's flag bits (pymongo's ``add_option`` masks) and the find command field each
#: stands for. Bit 4 (secondaryOk) has no find field: the read preference says it.
_FLAG_FIELDS = {8: "oplogReplay", 16: "noCursorTimeout", 128: "allowPartialResults"}
#: The bits of cursors mongocore does not have.
_UNSUPPORTED_FLAGS = {2: "tailable", 32: "awaitData", 64: "exhaust"}
_KNOWN_FLAGS = 4 | sum(_FLAG_FIELDS) | sum(_UNSUPPORTED_FLAGS)


def _option_fields(mask: int, *, removing: bool = False) -> list[str]:
    """The find fields ``add_option(mask)`` sets (or ``remove_option`` unsets)."""
    if not isinstance(mask, int) or isinstance(mask, bool):
        raise TypeError(f"mask must be an int, not {type(mask).__name__}")
    if mask & ~_KNOWN_FLAGS:
        raise ValueError(f"mask {mask!r} has bits that are no query flag")
    unsupported = [name for bit, name in _UNSUPPORTED_FLAGS.items() if mask & bit]
    if unsupported and not removing:
        raise ConfigurationError(
            f"query flag(s) {', '.join(unsupported)} are not supported by mongocore: its"
            " cursors are non-tailable, non-exhaust find cursors"
        )
    return [name for bit, name in _FLAG_FIELDS.items() if mask & bit]


def slice_bounds(index: slice) -> tuple[int, Optional[int]]:
    """``cursor[start:stop]`` as (skip, limit); limit None means "no limit". Steps and
    negative indexes need the whole result, so they are refused."""
    if index.step is not None:
        raise IndexError("cursors do not support slice steps")
    start = 0 if index.start is None else index.start
    if not isinstance(start, int) or isinstance(start, bool):
        raise TypeError("slice indexes must be ints")
    if start < 0:
        raise IndexError("cursors do not support negative indexes")
    if index.stop is None:
        return start, None
    stop = index.stop
    if not isinstance(stop, int) or isinstance(stop, bool):
        raise TypeError("slice indexes must be ints")
    if stop < start:
        raise IndexError(f"the stop index must not be before the start index in {index!r}")
    return start, stop - start


class FindModifiers:
    """The find options a cursor can be given after it is made (before it starts)."""

    _options: dict[str, Any]

    def _check_not_started(self) -> None:
        raise NotImplementedError

    def _set(self: _Self, name: str, value: Any) -> _Self:
        self._check_not_started()
        if value is None:
            self._options.pop(name, None)
        else:
            self._options[name] = value
        return self

    def hint(self: _Self, index: Optional[IndexSpec]) -> _Self:
        """Use this index (a name or keys); None removes the hint."""
        return self._set("hint", None if index is None else index_spec(index))

    def max_time_ms(self: _Self, max_time_ms: Optional[int]) -> _Self:
        """The server's time limit for the find and each getMore's processing."""
        if max_time_ms is not None and (
            not isinstance(max_time_ms, int) or isinstance(max_time_ms, bool)
        ):
            raise TypeError("max_time_ms must be an int or None")
        return self._set("maxTimeMS", max_time_ms)

    def comment(self: _Self, comment: Any) -> _Self:
        """A comment the server logs and profiles with the command."""
        return self._set("comment", comment)

    def collation(self: _Self, collation: Optional[CollationSpec]) -> _Self:
        """String comparison rules (``{"locale": "fr"}`` or a ``Collation``); None
        removes them."""
        return self._set("collation", _collation_or_none(collation))

    def max(self: _Self, spec: Union[Sequence[tuple[str, Any]], Mapping[str, Any]]) -> _Self:
        """Exclusive upper bounds on the hinted index's fields."""
        return self._set("max", _bound_document(spec))

    def min(self: _Self, spec: Union[Sequence[tuple[str, Any]], Mapping[str, Any]]) -> _Self:
        """Inclusive lower bounds on the hinted index's fields."""
        return self._set("min", _bound_document(spec))

    def allow_disk_use(self: _Self, allow_disk_use: bool) -> _Self:
        """Let a blocking sort spill to temporary files on the server."""
        if not isinstance(allow_disk_use, bool):
            raise TypeError("allow_disk_use must be a bool")
        return self._set("allowDiskUse", allow_disk_use)
