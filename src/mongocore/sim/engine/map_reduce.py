"""Map-reduce as a 7.0 server runs it (MongoDB manual, "mapReduce", "Map-Reduce"):
the command's fields and their errors, the grouping of what the map function emits,
the reduce and finalize calls, and what each output action does to the output
collection.

The JavaScript itself is not run here: :class:`Functions` is what the command layer
provides (the simulator's :class:`mongocore.sim.javascript.MapReduceScript`). The
command layer also selects the input (``query``, ``sort``, ``limit``, read as one
find) and writes the output documents this module computes.

- :func:`parse` checks the command as a server's parser does (unknown fields 40415,
  missing ones 40414, the functions' and ``out``'s types, BadValue for a bad ``out``);
- :func:`run` calls the map function on each input document in order, groups the
  emitted values by key (keys compare as BSON values do, under the collation), calls
  the reduce function once for each key that has more than one value (a key emitted
  once keeps its value unreduced, as the manual says), then finalize on every key, and
  returns ``{_id: key, value: value}`` documents in key order;
- :func:`output_writes` gives what each output action writes: ``replace`` makes the
  output collection hold the results alone, ``merge`` replaces the document of each
  result's key (or inserts it), ``reduce`` reduces a result with the stored value of
  its key first (module doc of the function).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol

from bson import Code

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.values import compare, key

__all__ = [
    "Functions",
    "MapReduceSpec",
    "Output",
    "output_writes",
    "parse",
    "reply",
    "run",
    "sorted_by_key",
]

Document = dict[str, Any]

#: The command's own fields (map_reduce.idl); the generic ones every command may carry
#: (lsid, $db, $readPreference, ...) are the command layer's to accept.
_FIELDS = frozenset(
    {
        "mapReduce", "map", "reduce", "out", "query", "sort", "collation", "limit",
        "finalize", "scope", "jsMode", "verbose", "bypassDocumentValidation",
        "writeConcern", "readConcern", "maxTimeMS", "comment",
    }
)  # fmt: skip
_GENERIC = frozenset(
    {
        "$db", "lsid", "txnNumber", "$clusterTime", "$readPreference", "apiVersion",
        "apiStrict", "apiDeprecationErrors", "autocommit", "startTransaction",
        "$audit", "$client", "mayBypassWriteBlocking",
    }
)  # fmt: skip
_ACTIONS = ("replace", "merge", "reduce")


class Functions(Protocol):
    """The map, reduce and finalize functions, compiled with the command's scope."""

    def map(self, document: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        """The ``(key, value)`` pairs the map function emits for ``document``."""

    def reduce(self, key: Any, values: list[Any]) -> Any:
        """The reduce function's value for ``key`` and ``values``."""

    def finalize(self, key: Any, value: Any) -> Any:
        """The finalize function's value for ``key`` and its reduced ``value``."""


@dataclass(frozen=True)
class Output:
    """Where the results go: inline (in the reply) or a collection, by an action."""

    inline: bool
    action: str = "replace"
    collection: str = ""
    db: Optional[str] = None


@dataclass(frozen=True)
class MapReduceSpec:
    """A parsed ``mapReduce`` command."""

    collection: str
    map: str
    reduce: str
    out: Output
    finalize: Optional[str] = None
    query: Mapping[str, Any] = field(default_factory=dict)
    sort: Optional[Mapping[str, Any]] = None
    limit: int = 0
    scope: Mapping[str, Any] = field(default_factory=dict)
    collation: Optional[Mapping[str, Any]] = None
    bypass_document_validation: bool = False


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "int" if isinstance(value, int) else "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _code(cmd: Mapping[str, Any], name: str) -> str:
    value = cmd[name]
    # A server takes a string or BSON JavaScript; code with scope is refused since 4.4
    # (the scope field is the way to pass values).
    if not isinstance(value, str) or (isinstance(value, Code) and value.scope is not None):
        raise CommandError(2, f"'{name}' must be of string or code type")
    return str(value)


def _document(cmd: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = cmd[name]
    if not isinstance(value, Mapping):
        raise CommandError(
            14,
            f"BSON field 'MapReduce.{name}' is the wrong type '{_type_name(value)}', "
            "expected type 'object'",
        )
    return value


_INTERNAL_DATABASES = ("admin", "local", "config")


def _output(value: Any) -> Output:
    """``out``: a collection name (replace), or {inline: 1}, or {replace|merge|reduce:
    name, db, sharded, nonAtomic}, checked in a server's order."""
    if isinstance(value, str):
        return Output(inline=False, action="replace", collection=value)
    if not isinstance(value, Mapping):
        raise CommandError(2, "'out' must be either a string or an object")
    if "inline" in value:
        if len(value) != 1:
            raise CommandError(72, "'inline' must be specified alone")
        inline = value["inline"]
        if isinstance(inline, bool) or not isinstance(inline, (int, float)) or inline != 1:
            raise CommandError(2, "'inline' takes only numeric '1'")
        return Output(inline=True)
    allowed = 4
    if "sharded" in value:
        if not isinstance(value["sharded"], bool):
            raise CommandError(2, "sharded field value must be boolean")
        if not value["sharded"]:
            raise CommandError(2, "sharded field value must be true")
    else:
        allowed -= 1
    action = next((name for name in _ACTIONS if name in value), None)
    if action is None:
        raise CommandError(2, "'out' requires 'replace', 'merge' or 'reduce'")
    collection = value[action]
    if not isinstance(collection, str):
        raise CommandError(
            2, f"'{action}' supports only string consisting of output collection name"
        )
    db = value.get("db")
    if "db" in value:
        if not isinstance(db, str):
            raise CommandError(2, "db field value must be string")
        if db in _INTERNAL_DATABASES:
            raise CommandError(115, "cannot target internal database as output")
    else:
        allowed -= 1
    if "nonAtomic" in value:
        if not isinstance(value["nonAtomic"], bool):
            raise CommandError(2, "nonAtomic field value must be boolean")
        if not value["nonAtomic"]:
            raise CommandError(2, "nonAtomic field value must be true")
    else:
        allowed -= 1
    if len(value) != allowed:
        raise CommandError(
            2,
            "'out' supports only output type with collection name, optional 'sharded' and "
            "optional 'db'",
        )
    return Output(inline=False, action=action, collection=collection, db=db)


def parse(cmd: Mapping[str, Any], *, generic: frozenset[str] = frozenset()) -> MapReduceSpec:
    """The command, checked as a 7.0 server checks it (``generic``: the arguments every
    command takes, which the command layer knows)."""
    for name in cmd:
        if name not in _FIELDS and name not in _GENERIC and name not in generic:
            raise CommandError(40415, f"BSON field 'MapReduce.{name}' is an unknown field.")
    collection = cmd.get("mapReduce")
    if not isinstance(collection, str):
        raise CommandError(73, f"collection name has invalid type {_type_name(collection)}")
    for name in ("map", "reduce", "out"):
        if name not in cmd:
            raise CommandError(
                40414, f"BSON field 'MapReduce.{name}' is missing but a required field"
            )
    map_code, reduce_code = _code(cmd, "map"), _code(cmd, "reduce")
    finalize = _code(cmd, "finalize") if cmd.get("finalize") is not None else None
    query = _document(cmd, "query") if cmd.get("query") is not None else {}
    sort = _document(cmd, "sort") if cmd.get("sort") is not None else None
    scope = _document(cmd, "scope") if cmd.get("scope") is not None else {}
    collation = _document(cmd, "collation") if cmd.get("collation") is not None else None
    limit = cmd.get("limit", 0)
    if limit is None:
        limit = 0
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise CommandError(
            14,
            f"BSON field 'MapReduce.limit' is the wrong type '{_type_name(limit)}', "
            "expected types '[long, int, decimal, double]'",
        )
    if limit != int(limit):
        raise CommandError(2, f"BSON field 'MapReduce.limit' has a non-integer value: {limit}")
    if limit < 0:
        # The limit goes to the pipeline's $limit, which takes a positive number.
        raise CommandError(15958, "the limit must be positive")
    return MapReduceSpec(
        collection=collection,
        map=map_code,
        reduce=reduce_code,
        out=_output(cmd["out"]),
        finalize=finalize,
        query=query,
        sort=sort,
        limit=int(limit),
        scope=scope,
        collation=collation,
        bypass_document_validation=bool(cmd.get("bypassDocumentValidation", False)),
    )


def run(
    documents: Iterable[Mapping[str, Any]], functions: Functions, *, finalize: bool = False
) -> list[Document]:
    """The ``{_id, value}`` results of mapping ``documents`` (module doc). Keys group
    by BSON equality (a collation applies to the query and the sort only)."""
    groups: dict[Any, tuple[Any, list[Any]]] = {}
    for document in documents:
        for emitted_key, value in functions.map(document):
            group = groups.setdefault(key(emitted_key), (emitted_key, []))
            group[1].append(value)
    results = []
    for emitted_key, values in groups.values():
        value = values[0] if len(values) == 1 else functions.reduce(emitted_key, values)
        if finalize:
            value = functions.finalize(emitted_key, value)
        results.append({"_id": emitted_key, "value": value})
    return sorted_by_key(results)


def sorted_by_key(results: list[Document]) -> list[Document]:
    """``results`` in the order of their ``_id`` (BSON order)."""

    def by_id(a: Document, b: Document) -> int:
        return compare(a["_id"], b["_id"])

    return sorted(results, key=functools.cmp_to_key(by_id))


def output_writes(
    output: Output,
    stored: Callable[[Any], Optional[Mapping[str, Any]]],
    results: list[Document],
    functions: Functions,
) -> list[Document]:
    """The documents to write to the output collection, each replacing the one with
    its ``_id`` or inserted (``stored``: the document the collection holds for an
    ``_id``, or None). ``replace`` and ``merge`` write the results as they are;
    ``reduce`` reduces a result whose key is stored with the stored value, the stored
    one first (a server's $merge with ``[$value, $$new.value]``; finalize is not run
    again)."""
    if output.action != "reduce":
        return list(results)
    writes = []
    for result in results:
        previous = stored(result["_id"])
        if previous is None:
            writes.append(result)
            continue
        value = functions.reduce(result["_id"], [previous.get("value"), result["value"]])
        writes.append({"_id": result["_id"], "value": value})
    return writes


def reply(spec: MapReduceSpec, results: list[Document]) -> Document:
    """The command's reply: the results inline, or where they were written."""
    out = spec.out
    if out.inline:
        return {"results": results, "ok": 1.0}
    if out.db is not None:
        return {"result": {"db": out.db, "collection": out.collection}, "ok": 1.0}
    return {"result": out.collection, "ok": 1.0}
