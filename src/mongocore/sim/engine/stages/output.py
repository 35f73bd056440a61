"""The stages that write: ``$out`` and ``$merge`` (MongoDB manual, "$out", "$merge"; a 7.0
server's merge processor). They write through the command layer's :class:`Writer`
(context.py) and output nothing.

``$out`` replaces the target collection's documents with the pipeline's output (an
``_id`` added to a document without one), keeping its indexes and options.

``$merge`` writes document by document: each output document is looked up in the target
by its ``on`` fields (``_id`` by default; other fields need a unique index on exactly
them, 51183) and then

- ``whenMatched``: ``replace`` (the ``_id`` may not change, 66), ``merge`` (its fields
  set on the target's document), ``keepExisting``, ``fail`` (an insert, so DuplicateKey,
  11000), or an update pipeline that sees the output document as ``$$new`` and the
  stage's ``let`` variables (evaluated on the output document) besides the command's;
- ``whenNotMatched``: ``insert``, ``discard``, ``fail`` (13113).

A failure stops the stage; the documents written before it stay, as on a server. The
stage's specification is checked, with the server's errors, when the pipeline is parsed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

from bson import ObjectId

from mongocore.sim.codes import CommandError
from mongocore.sim.engine.expressions import Node, parse
from mongocore.sim.engine.paths import Document
from mongocore.sim.engine.stages.common import type_name_of
from mongocore.sim.engine.stages.context import PipelineContext, Writer
from mongocore.sim.engine.stages.pipeline import parse_pipeline
from mongocore.sim.engine.stages.registry import Stage, register
from mongocore.sim.engine.values import MISSING, identical

__all__ = ["Merge", "Out"]

_WHEN_MATCHED = ("replace", "keepExisting", "merge", "fail")
_WHEN_NOT_MATCHED = ("insert", "discard", "fail")
_MERGE_FIELDS = ("into", "on", "let", "whenMatched", "whenNotMatched", "targetCollectionVersion")
_SUPPORTED = frozenset(
    {
        ("replace", "insert"), ("replace", "fail"), ("replace", "discard"),
        ("merge", "insert"), ("merge", "fail"), ("merge", "discard"),
        ("keepExisting", "insert"), ("fail", "insert"),
        ("pipeline", "insert"), ("pipeline", "fail"), ("pipeline", "discard"),
    }
)  # fmt: skip
_INTERNAL_DATABASES = ("admin", "config", "local")


def _writer(context: PipelineContext) -> Writer:
    if context.writer is None:
        raise CommandError(238, "$out and $merge need the command layer's writer")
    return context.writer


def _with_id(doc: Document) -> Document:
    return doc if "_id" in doc else {"_id": ObjectId(), **doc}


class Out(Stage):
    def __init__(self, db: str, coll: str, context: PipelineContext) -> None:
        self.db = db
        self.coll = coll
        self.context = context

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        written = [_with_id(doc) for doc in docs]
        _writer(self.context).replace_collection(self.db, self.coll, written)
        return iter(())


@register("$out")
def parse_out(spec: Any, context: PipelineContext) -> Stage:
    if isinstance(spec, str):
        db, coll = context.db, spec
    elif isinstance(spec, Mapping):
        for name in spec:
            if name not in ("db", "coll", "timeseries"):
                raise CommandError(40415, f"BSON field '$out.{name}' is an unknown field.")
        if "timeseries" in spec:
            raise CommandError(
                238, "$out to a time-series collection is not implemented by the simulator"
            )
        for name in ("db", "coll"):
            if name not in spec:
                raise CommandError(
                    40414, f"BSON field '$out.{name}' is missing but a required field"
                )
            if not isinstance(spec[name], str):
                raise CommandError(
                    14,
                    f"BSON field '$out.{name}' is the wrong type '{type_name_of(spec[name])}',"
                    " expected type 'string'",
                )
        db, coll = str(spec["db"]), str(spec["coll"])
    else:
        raise CommandError(
            16990, f"$out only supports a string or object argument, but found {type_name_of(spec)}"
        )
    if not coll or not db or "$" in coll or "\0" in coll:
        raise CommandError(73, f"Invalid $out target namespace, {db}.{coll}")
    if coll.startswith("system."):
        raise CommandError(17385, f"Can't $out to special collection: {coll}")
    if db in _INTERNAL_DATABASES:
        raise CommandError(31321, f"Can't $out to internal database: {db}")
    return Out(db, coll, context)


# -- $merge -----------------------------------------------------------------------------------


class Merge(Stage):
    def __init__(
        self,
        *,
        db: str,
        coll: str,
        on: tuple[str, ...],
        when_matched: Union[str, list[Any]],
        when_not_matched: str,
        let: list[tuple[str, Node]],
        context: PipelineContext,
    ) -> None:
        self.db = db
        self.coll = coll
        self.on = on
        self.when_matched = when_matched
        self.when_not_matched = when_not_matched
        self.let = let
        self.context = context

    @property
    def mode(self) -> str:
        return "pipeline" if isinstance(self.when_matched, list) else str(self.when_matched)

    def run(self, docs: Iterator[Document]) -> Iterator[Document]:
        writer = _writer(self.context)
        self._check_unique_index(writer)
        for doc in docs:
            self._merge_one(writer, doc)
        return iter(())

    def _check_unique_index(self, writer: Writer) -> None:
        if set(self.on) == {"_id"}:
            return
        wanted = set(self.on)
        for fields in writer.unique_key_fields(self.db, self.coll):
            if len(fields) == len(self.on) and set(fields) == wanted:
                return
        raise CommandError(51183, "Cannot find index to verify that join fields will be unique")

    def _merge_one(self, writer: Writer, doc: Document) -> None:
        if "_id" in self.on and "_id" not in doc:
            doc = _with_id(doc)
        query = {path: {"$eq": value} for path, value in self._key(doc).items()}
        mode = self.mode
        if mode == "fail":
            writer.insert(self.db, self.coll, _with_id(doc))
            return
        existing = writer.find_one(self.db, self.coll, query, self.context.collation)
        if existing is None:
            if self.when_not_matched == "fail":
                raise CommandError(
                    13113,
                    "$merge could not find a matching document in the target collection for at"
                    " least one document in the source collection",
                )
            if self.when_not_matched == "insert":
                writer.insert(self.db, self.coll, _with_id(doc))
            return
        if mode == "keepExisting":
            return
        if mode == "replace":
            new = doc if "_id" in doc else {"_id": existing["_id"], **doc}
        elif mode == "merge":
            new = dict(existing)
            new.update(doc)
        else:
            new = self._pipeline(existing, doc)
        if "_id" in existing and not identical(new.get("_id", MISSING), existing["_id"]):
            raise CommandError(
                66,
                "$merge failed to update the matching document, did you attempt to modify the"
                " _id or the shard key? :: caused by :: Performing an update on the path '_id'"
                " would modify the immutable field '_id'",
            )
        if not identical(new, existing):
            writer.replace(self.db, self.coll, existing, new)

    def _pipeline(self, existing: Document, doc: Document) -> Document:
        frame = self.context.expressions.frame(doc)
        values: dict[str, Any] = {"new": doc}
        for name, node in self.let:
            value = node(frame)
            values[name] = None if value is MISSING else value
        derived = self.context.derived(within="update", variables=values)
        pipeline = parse_pipeline(self.when_matched, derived)
        results = list(pipeline.run(iter([existing])))
        new = results[0] if results else existing
        if "_id" not in new and "_id" in existing:
            new = {"_id": existing["_id"], **new}
        return new

    def _key(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """The values of the ``on`` fields (missing, null and arrays refused)."""
        key: dict[str, Any] = {}
        for path in self.on:
            value: Any = doc
            parts = path.split(".")
            for index, part in enumerate(parts):
                value = value.get(part) if isinstance(value, Mapping) else None
                if isinstance(value, list):
                    raise CommandError(
                        51185, f"$merge write error: 'on' field '{path}' is an array"
                    )
                if index + 1 < len(parts) and not isinstance(value, Mapping):
                    value = None
                    break
            if value is None:
                raise CommandError(
                    51132,
                    f"$merge write error: 'on' field '{path}' cannot be missing, null,"
                    " undefined or an array",
                )
            key[path] = value
        return key


def _into(value: Any, db: str) -> tuple[str, str]:
    if isinstance(value, str):
        return db, value
    if isinstance(value, Mapping):
        for name in value:
            if name not in ("db", "coll"):
                raise CommandError(40415, f"BSON field 'into.{name}' is an unknown field.")
        target_db = value.get("db", db)
        target_coll = value.get("coll")
        if not isinstance(target_db, str) or not isinstance(target_coll, str):
            raise CommandError(13111, "$merge 'into' field's 'db' and 'coll' must be strings")
        return target_db, target_coll
    raise CommandError(
        51178,
        "$merge 'into' field  must be either a string or an object, but found "
        + type_name_of(value),
    )


def _on(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        fields = [value]
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise CommandError(
                    51134,
                    f"$merge 'on' array elements must be strings, but found {type_name_of(item)}",
                )
        fields = list(value)
        if not fields:
            raise CommandError(
                51187, "If explicitly specifying $merge 'on', must include at least one field"
            )
    else:
        raise CommandError(
            51186,
            "$merge 'on' field  must be either a string or an array of strings, but found "
            + type_name_of(value),
        )
    seen: set[str] = set()
    for name in fields:
        if name in seen:
            raise CommandError(31465, f"Found a duplicate field '{name}'")
        seen.add(name)
    return tuple(fields)


@register("$merge")
def parse_merge(spec: Any, context: PipelineContext) -> Stage:
    db = context.db
    on: tuple[str, ...] = ("_id",)
    when_matched: Union[str, list[Any]] = "merge"
    when_not_matched = "insert"
    let_spec: Optional[Mapping[str, Any]] = None
    if isinstance(spec, str):
        target_db, target_coll = db, spec
    elif isinstance(spec, Mapping):
        for name in spec:
            if name not in _MERGE_FIELDS:
                raise CommandError(40415, f"BSON field '$merge.{name}' is an unknown field.")
        if "into" not in spec:
            raise CommandError(40414, "BSON field '$merge.into' is missing but a required field")
        target_db, target_coll = _into(spec["into"], db)
        if "on" in spec:
            on = _on(spec["on"])
        matched = spec.get("whenMatched", "merge")
        if isinstance(matched, list):
            # Checked now, with the names the stage binds for it ($$new and its let's).
            names = spec["let"] if isinstance(spec.get("let"), Mapping) else {}
            bound: dict[str, Any] = {"new": {}, **{str(name): None for name in names}}
            parse_pipeline(matched, context.derived(within="update", variables=bound))
            when_matched = list(matched)
        elif isinstance(matched, str):
            if matched not in _WHEN_MATCHED:
                raise CommandError(
                    2,
                    f"Enumeration value '{matched}' for field 'whenMatched' is not a valid value.",
                )
            when_matched = matched
        else:
            raise CommandError(
                51191,
                "$merge 'whenMatched' field  must be either a string or an array, but found "
                + type_name_of(matched),
            )
        not_matched = spec.get("whenNotMatched", "insert")
        if not isinstance(not_matched, str) or not_matched not in _WHEN_NOT_MATCHED:
            raise CommandError(
                2,
                f"Enumeration value '{not_matched}' for field '$merge.whenNotMatched' is not a"
                " valid value.",
            )
        when_not_matched = not_matched
        if "let" in spec:
            if not isinstance(spec["let"], Mapping):
                raise CommandError(
                    14, "BSON field '$merge.let' is the wrong type, expected type 'object'"
                )
            let_spec = spec["let"]
    else:
        raise CommandError(
            51182, f"$merge only supports a string or object argument, not {type_name_of(spec)}"
        )
    mode = "pipeline" if isinstance(when_matched, list) else when_matched
    if (mode, when_not_matched) not in _SUPPORTED:
        raise CommandError(
            51181,
            f"Combination of $merge modes 'whenMatched: {mode}' and 'whenNotMatched:"
            f" {when_not_matched}' is not supported",
        )
    let: list[tuple[str, Node]] = []
    if mode == "pipeline":
        for name, value in (let_spec or {}).items():
            if name == "new":
                if value != "$$ROOT":
                    raise CommandError(
                        51273,
                        "'let' may not define a value for the reserved 'new' variable other than"
                        " '$$ROOT'",
                    )
                continue
            let.append((str(name), parse(value, context.scope)))
    elif let_spec is not None:
        raise CommandError(51199, f"Cannot use 'let' variables with 'whenMatched: {mode}' mode")
    if not target_coll or not target_db or "$" in target_coll or "\0" in target_coll:
        raise CommandError(73, f"Invalid $merge target namespace: '{target_db}.{target_coll}'")
    if target_coll.startswith("system."):
        raise CommandError(31319, f"Cannot $merge to special collection: {target_coll}")
    if target_db in _INTERNAL_DATABASES:
        raise CommandError(31320, f"Cannot $merge to internal database: {target_db}")
    return Merge(
        db=target_db,
        coll=target_coll,
        on=on,
        when_matched=when_matched,
        when_not_matched=when_not_matched,
        let=let,
        context=context,
    )
