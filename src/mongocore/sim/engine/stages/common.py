"""What several stages share: sort keys with their directions, the memory limit of a
blocking stage, integer arguments, and the frames expressions evaluate in."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from typing import Any, Callable, Optional

import bson

from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.engine.paths import Document, split
from mongocore.sim.engine.render import value_string
from mongocore.sim.engine.sort import sort_values
from mongocore.sim.engine.stages.context import PipelineContext
from mongocore.sim.engine.types import type_name
from mongocore.sim.engine.values import MISSING, UNDEFINED, is_nan, is_number, key, numeric_value

__all__ = [
    "Descending",
    "MemoryGauge",
    "SortSpec",
    "group_key",
    "parse_sort_spec",
    "type_name_of",
]


def type_name_of(value: Any) -> str:
    """The server's name for a value's type in messages ("missing" included)."""
    return type_name(value)


class Descending:
    """A key ordered backwards (a descending field of a sort)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: Descending) -> bool:
        return bool(other.value < self.value)

    def __gt__(self, other: Descending) -> bool:
        return bool(other.value > self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Descending) and self.value == other.value

    def __le__(self, other: Descending) -> bool:
        return bool(other.value <= self.value)

    def __ge__(self, other: Descending) -> bool:
        return bool(other.value >= self.value)

    def __hash__(self) -> int:
        return hash(self.value)


class SortSpec:
    """A ``$sort`` document compiled to one key function (mixed directions included):
    an array offers its smallest element to an ascending field and its largest to a
    descending one, as the server's sort key generator does."""

    def __init__(
        self, fields: list[tuple[tuple[str, ...], int]], collation: Optional[Collation]
    ) -> None:
        self.fields = fields
        self.collation = collation

    def key(self, doc: Mapping[str, Any]) -> tuple[Any, ...]:
        out: list[Any] = []
        collation = self.collation
        for parts, direction in self.fields:
            keys = [key(v, collation) for v in sort_values(doc, parts)]
            if direction > 0:
                out.append(min(keys))
            else:
                out.append(Descending(max(keys)))
        return tuple(out)

    def sort(self, docs: Iterable[Document], keep: Optional[int] = None) -> list[Document]:
        """The documents in order (ties in their incoming order); only the first
        ``keep`` when given."""
        if keep is not None:
            return heapq.nsmallest(keep, docs, key=self.key)
        return sorted(docs, key=self.key)


def parse_sort_spec(spec: Any, collation: Optional[Collation], *, stage: str = "$sort") -> SortSpec:
    """A sort document of ``$sort`` (or of a stage's ``sortBy``), with the server's errors."""
    if not isinstance(spec, Mapping):
        raise CommandError(15973, f"the {stage} key specification must be an object")
    if not spec:
        raise CommandError(15976, f"{stage} stage must have at least one sort key")
    fields: list[tuple[tuple[str, ...], int]] = []
    for name, direction in spec.items():
        path = str(name)
        if isinstance(direction, Mapping):
            raise CommandError(238, "$meta sort keys are not implemented by the simulator")
        if not is_number(direction) or numeric_value(direction) not in (1, -1):
            raise CommandError(
                15975, "$sort key ordering must be 1 (for ascending) or -1 (for descending)"
            )
        check_path(path)
        fields.append((split(path), int(numeric_value(direction))))
    return SortSpec(fields, collation)


def check_path(path: str) -> None:
    """A field path (no leading ``$``) checked as the server's FieldPath checks it."""
    if not path:
        raise CommandError(40352, "FieldPath cannot be constructed with empty string")
    if path.endswith("."):
        raise CommandError(40353, "FieldPath must not end with a '.'.")
    for part in path.split("."):
        if not part:
            raise CommandError(15998, "FieldPath field names may not be empty strings.")
        if part.startswith("$"):
            raise CommandError(
                16410,
                "FieldPath field names may not start with '$'. Consider using $getField or"
                " $setField.",
            )


def group_key(value: Any, collation: Optional[Collation]) -> Any:
    """The key two values share when ``$group`` puts them together (missing groups
    with undefined, below null, as the server's Value comparison ranks it)."""
    if value is MISSING:
        return key(UNDEFINED)
    return key(value, collation)


def integer_argument(stage: str, value: Any) -> int:
    """``$limit`` and ``$skip``: a non-negative 64-bit integer (the server's
    parseIntegerElementToNonNegativeLong, in its words)."""
    code = 5107201 if stage == "$limit" else 5107200
    prefix = f"invalid argument to {stage} stage: "
    if not is_number(value):
        raise CommandError(code, f"{prefix}Expected a number in: {stage}: {value_string(value)}")
    number = numeric_value(value)
    if is_nan(number):  # NaN
        raise CommandError(
            code, f"{prefix}Expected an integer, but found NaN in: {stage}: {value_string(value)}"
        )
    if number in (math.inf, -math.inf):
        raise CommandError(
            code, f"{prefix}Cannot represent as a 64-bit integer: {stage}: {value_string(value)}"
        )
    if number != int(number):
        raise CommandError(code, f"{prefix}Expected an integer: {stage}: {value_string(value)}")
    integer = int(number)
    if not -(2**63) <= integer < 2**63:
        raise CommandError(
            code, f"{prefix}Cannot represent as a 64-bit integer: {stage}: {value_string(value)}"
        )
    if integer < 0:
        raise CommandError(
            code, f"{prefix}Expected a non-negative number in: {stage}: {value_string(value)}"
        )
    return integer


class MemoryGauge:
    """The memory a blocking stage holds, approximated by the BSON size of what it
    holds, checked against the limit only when the command said ``allowDiskUse:
    false`` (7.0 spills to disk otherwise)."""

    def __init__(self, context: PipelineContext, error: Callable[[], CommandError]) -> None:
        self.enabled = context.allow_disk_use is False
        self.limit = context.memory_limit
        self.used = 0
        self._error = error

    def add(self, value: Any) -> None:
        if not self.enabled:
            return
        self.used += _size(value)
        if self.used > self.limit:
            raise self._error()


def _size(value: Any) -> int:
    if isinstance(value, Mapping):
        try:
            return len(bson.encode(value))
        except Exception:  # a value bson cannot encode is counted as nothing
            return 0
    try:
        return len(bson.encode({"": value}))
    except Exception:
        return 0
