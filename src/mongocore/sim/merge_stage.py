"""The ``$merge`` aggregation stage (MongoDB manual, "$merge (aggregation)"; a 7.0
server's merge processor).

``{$merge: {into, on, let, whenMatched, whenNotMatched}}`` (or ``{$merge: "<coll>"}``)
writes the pipeline's output into ``into`` (a collection name, or ``{db, coll}``),
document by document, as a server's merge strategies do: each output document is
looked up in the target by its ``on`` fields (``_id`` by default; other fields need a
unique index on exactly them, else 51183) and then

- ``whenMatched``: ``replace`` (a replacement update: the ``_id`` may not change, 66),
  ``merge`` (a ``$set`` of its fields), ``keepExisting`` (a ``$setOnInsert``),
  ``fail`` (an insert, so a match fails with DuplicateKey, 11000, ``keyPattern`` and
  ``keyValue`` included), or an update pipeline that sees the output document as
  ``$$new`` and the stage's ``let`` variables (evaluated on the output document);
- ``whenNotMatched``: ``insert`` (an upsert), ``discard``, ``fail``
  (MergeStageNoMatchingDocument, 13113).

Every write goes through the store (sim/store.py): it is logged to the oplog (so it
replicates and change streams see it), checked against the target's validator (unless
``bypassDocumentValidation``) and unique indexes, and applied with the aggregation's
collation. A failure stops the stage; the documents written before it stay, as on a
server. The stage's spec is checked, with a server's errors, before the pipeline runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Union

from bson import ObjectId

from mongocore.sim import aggregation
from mongocore.sim.codes import CommandError
from mongocore.sim.collation import Collation
from mongocore.sim.update_pipeline import check_pipeline
from mongocore.sim.variables import Variables

if TYPE_CHECKING:
    from mongocore.sim.store import DataStore

__all__ = ["MergeSpec", "parse", "plan"]

_WHEN_MATCHED = ("replace", "keepExisting", "merge", "fail")
_WHEN_NOT_MATCHED = ("insert", "discard", "fail")
_FIELDS = ("into", "on", "let", "whenMatched", "whenNotMatched", "targetCollectionVersion")
# The (whenMatched, whenNotMatched) pairs a server supports ("pipeline" for an array).
_SUPPORTED = frozenset(
    {
        ("replace", "insert"),
        ("replace", "fail"),
        ("replace", "discard"),
        ("merge", "insert"),
        ("merge", "fail"),
        ("merge", "discard"),
        ("keepExisting", "insert"),
        ("fail", "insert"),
        ("pipeline", "insert"),
        ("pipeline", "fail"),
        ("pipeline", "discard"),
    }
)
_INTERNAL_DATABASES = ("admin", "config", "local")


@dataclass
class MergeSpec:
    """A parsed ``$merge`` stage."""

    db: str
    coll: str
    on: tuple[str, ...] = ("_id",)
    when_matched: Union[str, list[Any]] = "merge"
    when_not_matched: str = "insert"
    let: Optional[Mapping[str, Any]] = None
    #: The command's own ``let`` variables, visible in the whenMatched pipeline too.
    command_let: dict[str, Any] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return "pipeline" if isinstance(self.when_matched, list) else self.when_matched

    # -- writing -------------------------------------------------------------------------

    def write(
        self,
        store: DataStore,
        docs: Sequence[Mapping[str, Any]],
        *,
        collation: Optional[Collation],
        bypass_validation: bool,
    ) -> None:
        """Merge ``docs`` into the target, one document at a time."""
        self._check_unique_index(store)
        for doc in docs:
            self._merge_one(store, dict(doc), collation, bypass_validation)

    def _check_unique_index(self, store: DataStore) -> None:
        if set(self.on) == {"_id"}:
            return
        for info in store.indexes(self.db, self.coll):
            keys = [str(key) for key in info.get("key", {})]
            if (
                info.get("unique")
                and not info.get("partialFilterExpression")
                and len(keys) == len(self.on)
                and set(keys) == set(self.on)
            ):
                return
        raise CommandError(51183, "Cannot find index to verify that join fields will be unique")

    def _merge_one(
        self,
        store: DataStore,
        doc: dict[str, Any],
        collation: Optional[Collation],
        bypass: bool,
    ) -> None:
        if "_id" in self.on and "_id" not in doc:
            doc = {"_id": ObjectId(), **doc}
        query = {path: _equal_to(value) for path, value in self._key(doc).items()}
        mode, not_matched = self.mode, self.when_not_matched
        if mode == "fail":
            store.insert(self.db, self.coll, doc, bypass_validation=bypass)
            return
        variables: Optional[Variables] = None
        if mode == "replace":
            update: Any = doc
        elif mode == "merge":
            update = {"$set": doc}
        elif mode == "keepExisting":
            update = {"$setOnInsert": doc}
        else:
            update = self.when_matched
            variables = Variables({**self.command_let, **self._variables(doc)})
        upsert = not_matched == "insert" and mode != "pipeline"
        try:
            matched, _, upserted = store.update(
                self.db,
                self.coll,
                query,
                update,
                upsert=upsert,
                collation=collation,
                variables=variables,
                bypass_validation=bypass,
            )
        except CommandError as exc:
            if exc.code != 66:
                raise
            raise CommandError(
                66,
                "$merge failed to update the matching document, did you attempt to modify the"
                f" _id or the shard key? :: caused by :: {exc.errmsg}",
                extra=exc.extra,
            ) from exc
        if matched or upserted is not None:
            return
        if not_matched == "fail":
            raise CommandError(
                13113,
                "$merge could not find a matching document in the target collection for at"
                " least one document in the source collection",
            )
        if not_matched == "insert":
            # A pipeline's upsert inserts the output document itself.
            store.insert(self.db, self.coll, doc, bypass_validation=bypass)

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

    def _variables(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        """``new`` and the stage's ``let`` variables, evaluated on the output document."""
        values: dict[str, Any] = {"new": dict(doc)}
        for name, expression in (self.let or {}).items():
            value = aggregation.evaluate(expression, dict(doc))
            values[str(name)] = None if value is aggregation.MISSING else value
        return values


# -- parsing ----------------------------------------------------------------------------


def plan(db: str, pipeline: Any, variables: Optional[Variables] = None) -> Optional[MergeSpec]:
    """The ``$merge`` stage ending ``pipeline`` (None without one), checked as a server
    parses it; a ``$merge`` anywhere else fails with 40601."""
    if not isinstance(pipeline, list):
        return None
    for stage in pipeline[:-1]:
        if isinstance(stage, Mapping) and "$merge" in stage:
            raise CommandError(40601, "$merge can only be the final stage in the pipeline")
    last = pipeline[-1] if pipeline else None
    if not isinstance(last, Mapping) or "$merge" not in last:
        return None
    spec = parse(last["$merge"], db)
    if variables is not None:
        spec.command_let = dict(variables.values)
    return spec


def parse(value: Any, db: str) -> MergeSpec:
    """A ``$merge`` stage's argument, with a 7.0 server's errors."""
    if isinstance(value, str):
        return _checked(MergeSpec(db, value))
    if not isinstance(value, Mapping):
        raise CommandError(
            51182, f"$merge only supports a string or object argument, not {_type_name(value)}"
        )
    for key in value:
        if key not in _FIELDS:
            raise CommandError(40415, f"BSON field '$merge.{key}' is an unknown field.")
    if "into" not in value:
        raise CommandError(40414, "BSON field '$merge.into' is missing but a required field")
    target_db, target_coll = _into(value["into"], db)
    spec = MergeSpec(target_db, target_coll)
    if "on" in value:
        spec.on = _on(value["on"])
    when_matched = value.get("whenMatched", "merge")
    if isinstance(when_matched, list):
        check_pipeline(when_matched)
        spec.when_matched = list(when_matched)
    elif isinstance(when_matched, str):
        if when_matched not in _WHEN_MATCHED:
            raise CommandError(
                2,
                f"Enumeration value '{when_matched}' for field 'whenMatched' is not a valid value.",
            )
        spec.when_matched = when_matched
    else:
        raise CommandError(
            51191,
            "$merge 'whenMatched' field  must be either a string or an array, but found"
            f" {_type_name(when_matched)}",
        )
    when_not_matched = value.get("whenNotMatched", "insert")
    if not isinstance(when_not_matched, str) or when_not_matched not in _WHEN_NOT_MATCHED:
        raise CommandError(
            2,
            f"Enumeration value '{when_not_matched}' for field '$merge.whenNotMatched' is not"
            " a valid value.",
        )
    spec.when_not_matched = when_not_matched
    if "let" in value:
        let = value["let"]
        if not isinstance(let, Mapping):
            raise CommandError(
                14, "BSON field '$merge.let' is the wrong type, expected type 'object'"
            )
        spec.let = dict(let)
    return _checked(spec)


def _checked(spec: MergeSpec) -> MergeSpec:
    mode = spec.mode
    if (mode, spec.when_not_matched) not in _SUPPORTED:
        raise CommandError(
            51181,
            f"Combination of $merge modes 'whenMatched: {mode}' and 'whenNotMatched:"
            f" {spec.when_not_matched}' is not supported",
        )
    if mode == "pipeline":
        new = (spec.let or {}).get("new", "$$ROOT")
        if new != "$$ROOT":
            raise CommandError(
                51273,
                "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'",
            )
    elif spec.let is not None:
        raise CommandError(51199, f"Cannot use 'let' variables with 'whenMatched: {mode}' mode")
    if not spec.coll or not spec.db or "$" in spec.coll or "\0" in spec.coll:
        raise CommandError(73, f"Invalid $merge target namespace: '{spec.db}.{spec.coll}'")
    if spec.coll.startswith("system."):
        raise CommandError(31319, f"Cannot $merge to special collection: {spec.coll}")
    if spec.db in _INTERNAL_DATABASES:
        raise CommandError(31320, f"Cannot $merge to internal database: {spec.db}")
    return spec


def _into(value: Any, db: str) -> tuple[str, str]:
    if isinstance(value, str):
        return db, value
    if isinstance(value, Mapping):
        for key in value:
            if key not in ("db", "coll"):
                raise CommandError(40415, f"BSON field 'into.{key}' is an unknown field.")
        target_db = value.get("db", db)
        target_coll = value.get("coll")
        if not isinstance(target_db, str) or not isinstance(target_coll, str):
            raise CommandError(13111, "$merge 'into' field's 'db' and 'coll' must be strings")
        return target_db, target_coll
    raise CommandError(
        51178,
        f"$merge 'into' field  must be either a string or an object, but found {_type_name(value)}",
    )


def _on(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        fields = [value]
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise CommandError(
                    51134,
                    f"$merge 'on' array elements must be strings, but found {_type_name(item)}",
                )
        fields = list(value)
        if not fields:
            raise CommandError(
                51187, "If explicitly specifying $merge 'on', must include at least one field"
            )
    else:
        raise CommandError(
            51186,
            "$merge 'on' field  must be either a string or an array of strings, but found"
            f" {_type_name(value)}",
        )
    seen: set[str] = set()
    for name in fields:
        if name in seen:
            raise CommandError(31465, f"Found a duplicate field '{name}'")
        seen.add(name)
    return tuple(fields)


def _equal_to(value: Any) -> Any:
    """A query value matching ``value`` (a document of operator names needs ``$eq``)."""
    if isinstance(value, Mapping) and any(str(key).startswith("$") for key in value):
        return {"$eq": value}
    return value


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else type(value).__name__
