"""Index specifications: ``IndexModel``, and the key and name rules create_index uses.

Implements the index specification of the createIndexes command (each index: ``key``,
``name`` and its options) in pymongo's shape: ``IndexModel(keys, **options)``, with
the name generated from the keys when none is given (``"a_1_b_-1"``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Union

__all__ = [
    "ASCENDING",
    "DESCENDING",
    "GEO2D",
    "GEOSPHERE",
    "HASHED",
    "TEXT",
    "IndexKeys",
    "IndexModel",
    "index_key_document",
    "index_name",
]

# The index directions and types, with pymongo's values.
ASCENDING: Final = 1
"""An ascending index on the field."""
DESCENDING: Final = -1
"""A descending index on the field."""
GEO2D: Final = "2d"
"""A two-dimensional geospatial index (legacy coordinate pairs)."""
GEOSPHERE: Final = "2dsphere"
"""A spherical geospatial index (GeoJSON)."""
HASHED: Final = "hashed"
"""A hashed index (for hashed sharding)."""
TEXT: Final = "text"
"""A text index."""

#: What names an index's keys: a single field, a list of fields or of (field,
#: direction) pairs, or a mapping from field to direction.
IndexKeys = Union[str, Sequence[Union[str, tuple[str, Any]]], Mapping[str, Any]]


def index_key_document(keys: IndexKeys) -> dict[str, Any]:
    """The ``key`` document of an index: ``{"a": 1, "b": -1}``.

    A field given without a direction is ascending (1). A direction is an int (1,
    -1), a string ("2d", "2dsphere", "hashed", "text", ...) or a document (for
    plugins). Raises TypeError for a value of the wrong type and ValueError for no
    keys at all.
    """
    if isinstance(keys, str):
        pairs: list[tuple[Any, Any]] = [(keys, 1)]
    elif isinstance(keys, Mapping):
        pairs = list(keys.items())
    elif isinstance(keys, (list, tuple)):
        pairs = [_pair(item) for item in keys]
    else:
        raise TypeError(
            "index keys must be a field name, a list of (field, direction) pairs or a "
            f"mapping, not {type(keys).__name__}"
        )
    if not pairs:
        raise ValueError("index keys must name at least one field")
    document: dict[str, Any] = {}
    for field, direction in pairs:
        if not isinstance(field, str):
            raise TypeError(f"an index field name must be a string, not {field!r}")
        if isinstance(direction, bool) or not isinstance(direction, (int, str, Mapping)):
            raise TypeError(
                f"the direction of index field {field!r} must be 1, -1, a string such as "
                f"'2dsphere' or 'text', or a document, not {direction!r}"
            )
        document[field] = direction
    return document


def index_name(key_document: Mapping[str, Any]) -> str:
    """The default name of an index on these keys: each field and direction joined by
    underscores (``{"a": 1, "b": -1}`` gives ``"a_1_b_-1"``)."""
    return "_".join(f"{field}_{direction}" for field, direction in key_document.items())


def _pair(item: object) -> tuple[Any, Any]:
    if isinstance(item, str):
        return (item, 1)
    if isinstance(item, (list, tuple)) and len(item) == 2:
        return (item[0], item[1])
    raise TypeError(
        "each item of a list of index keys must be a field name or a (field, direction) "
        f"pair, not {item!r}"
    )


class IndexModel:
    """One index for ``create_indexes``: its keys and its options.

    ``IndexModel("sku")``, ``IndexModel([("sku", ASCENDING), ("at", DESCENDING)],
    unique=True)``, ``IndexModel({"loc": GEOSPHERE}, name="geo")``. Keyword options go
    into the index specification as given (``unique``, ``sparse``,
    ``expireAfterSeconds``, ``partialFilterExpression``, ``collation``, ``hidden``,
    ...); without ``name`` one is generated from the keys.
    """

    __slots__ = ("_document",)

    def __init__(self, keys: IndexKeys, **kwargs: Any) -> None:
        key_document = index_key_document(keys)
        options = dict(kwargs)
        name = options.pop("name", None)
        if name is None:
            name = index_name(key_document)
        elif not isinstance(name, str):
            raise TypeError(f"name must be a string, not {type(name).__name__}")
        if "collation" in options:
            options["collation"] = _collation_document(options["collation"])
        self._document: dict[str, Any] = {"key": key_document, "name": name, **options}

    @property
    def document(self) -> dict[str, Any]:
        """The index specification sent in createIndexes' ``indexes`` (a copy)."""
        document = dict(self._document)
        document["key"] = dict(self._document["key"])
        return document

    @property
    def name(self) -> str:
        """The index name, given or generated."""
        name: str = self._document["name"]
        return name

    def __repr__(self) -> str:
        options = {k: v for k, v in self._document.items() if k != "key"}
        shown = "".join(f", {key}={value!r}" for key, value in options.items())
        return f"IndexModel({self._document['key']!r}{shown})"


def _collation_document(collation: object) -> Any:
    """A collation given as a document, or as an object with a ``document`` (such as
    pymongo's ``Collation``), becomes a plain document."""
    document = getattr(collation, "document", None)
    if isinstance(document, Mapping):
        return dict(document)
    if isinstance(collation, Mapping):
        return dict(collation)
    raise TypeError(f"collation must be a document, not {type(collation).__name__}")
