"""Capped collections as a 7.0 server keeps them (MongoDB manual, "Capped
Collections", ``create``'s ``capped``, ``size`` and ``max``; ``collMod``'s
``cappedSize`` and ``cappedMax``).

A capped collection keeps its documents in insertion order (a collection scan, and
``$natural``, return them so) and holds at most ``size`` bytes of documents (by their
BSON size) and, with ``max``, at most that many documents: an insert that goes past
either bound removes the oldest documents first. Since 6.0 documents may be deleted
and since 5.3 an update may change a document's size, as in any collection. What a
server refuses on them: a TTL index (67), a write inside a transaction (263).

This module holds the rules as functions of the options and the documents; the
command layer applies them (sim/catalog.py, sim/store.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import bson

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.values import is_number, numeric_value

__all__ = [
    "CappedOptions",
    "capped_options",
    "document_size",
    "modified_capped",
    "overflow",
]

#: A size up to this many bytes gives the collection a cap of this many bytes.
MINIMUM_SIZE = 4096
#: A larger size is raised to a multiple of this.
SIZE_UNIT = 256
#: The largest size a server takes (1 PB).
MAXIMUM_SIZE = 1024**5


@dataclass(frozen=True)
class CappedOptions:
    """The bounds of a capped collection: bytes, and documents (None: no maximum)."""

    size: int
    max: Optional[int] = None

    def to_document(self) -> dict[str, Any]:
        """The collection's options as listCollections lists them."""
        doc: dict[str, Any] = {"capped": True, "size": self.size}
        if self.max is not None:
            doc["max"] = self.max
        return doc


def _integer(command: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not is_number(value):
        raise CommandError(
            14,
            f"BSON field '{command}.{name}' is the wrong type '{type(value).__name__}', "
            "expected types '[long, int, decimal, double]'",
        )
    number = numeric_value(value)
    if not math.isfinite(float(number)):
        raise CommandError(2, f"BSON field '{command}.{name}' value must be a finite number")
    return int(number)


def _bounded_size(size: int) -> int:
    if size > MAXIMUM_SIZE:
        raise CommandError(2, "Cannot create a capped collection with size greater than 1 PB")
    if size <= MINIMUM_SIZE:
        return MINIMUM_SIZE
    return -(-size // SIZE_UNIT) * SIZE_UNIT


def _document_max(value: int) -> Optional[int]:
    # A maximum of zero or less means none, as a server takes it.
    return value if value > 0 else None


def capped_options(cmd: Mapping[str, Any]) -> Optional[CappedOptions]:
    """The bounds a ``create`` command gives, or None if it does not create a capped
    collection (``size`` and ``max`` without ``capped: true`` are ignored, as a server
    ignores them)."""
    if not cmd.get("capped"):
        return None
    if "size" not in cmd or cmd["size"] is None:
        raise CommandError(72, "the 'size' field is required when 'capped' is true")
    size = _bounded_size(_integer("create", "size", cmd["size"]))
    maximum = None
    if cmd.get("max") is not None:
        maximum = _document_max(_integer("create", "max", cmd["max"]))
    return CappedOptions(size=size, max=maximum)


def modified_capped(cmd: Mapping[str, Any], options: Optional[CappedOptions]) -> CappedOptions:
    """The bounds after a ``collMod`` with ``cappedSize`` and/or ``cappedMax``."""
    if options is None:
        raise CommandError(
            72,
            "Unsupported collMod: cappedSize and cappedMax need a capped collection",
        )
    size, maximum = options.size, options.max
    if "cappedSize" in cmd:
        requested = _integer("collMod", "cappedSize", cmd["cappedSize"])
        if requested <= 0:
            raise CommandError(2, "cappedSize must be greater than 0")
        size = _bounded_size(requested)
    if "cappedMax" in cmd:
        maximum = _document_max(_integer("collMod", "cappedMax", cmd["cappedMax"]))
    return CappedOptions(size=size, max=maximum)


def document_size(doc: Mapping[str, Any]) -> int:
    """A document's size as the collection counts it: its BSON length."""
    return len(bson.encode(doc))


def overflow(sizes: Sequence[int], options: CappedOptions) -> int:
    """How many of the oldest documents go so that the collection fits its bounds
    (``sizes``: the BSON size of each document, oldest first, the new one last). The
    newest document always stays."""
    count = len(sizes)
    total = sum(sizes)
    removed = 0
    while removed < count - 1 and (
        total > options.size or (options.max is not None and count - removed > options.max)
    ):
        total -= sizes[removed]
        removed += 1
    return removed


def ttl_refused(namespace: str) -> CommandError:
    """The error of a TTL index on a capped collection."""
    return CommandError(
        67, f"TTL indexes are not supported for capped collections. ns: {namespace}"
    )


def transaction_refused(namespace: str) -> CommandError:
    """The error of a write to a capped collection inside a transaction."""
    return CommandError(
        263,
        f"Collection '{namespace}' is a capped collection. Writes in transactions are not "
        "allowed on capped collections.",
    )
