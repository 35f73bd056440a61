"""Change streams, server side: the ``$changeStream`` aggregation stage and its cursors
(change streams spec; the server's ``$changeStream`` stage as MongoDB 7.0 runs it).

``aggregate`` with ``$changeStream`` first opens a stream on a collection, on a database
(``aggregate: 1``) or, on admin with ``allChangesForCluster: true``, on the whole
deployment. A standalone has no oplog and refuses (40573). The stream starts now, after
a resume token (``resumeAfter``, or ``startAfter``, which may follow an invalidate), or at
``startAtOperationTime``; it reads the replica set's change log (sim/change_log.py),
shapes each event (sim/change_events.py), and runs the rest of the pipeline (``$match``,
``$project``, ``$addFields``/``$set``, ``$unset``, ``$replaceRoot``/``$replaceWith``) on it
with the document store's aggregation. Every batch carries ``postBatchResumeToken``.

A change stream cursor is tailable and awaitData: a getMore with nothing to return waits
for an oplog append, up to its ``maxTimeMS`` (one second by default), on the
deployment's condition variable (which releases the deployment's lock), and then
answers an empty batch. After an invalidate event the cursor is closed.

Errors carry the labels a server adds: NonResumableChangeStreamError for
ChangeStreamFatalError (280) and ChangeStreamHistoryLost (286), and
ResumableChangeStreamError for the errors a client may resume after.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

from bson import Int64, Timestamp

from mongocore.sim import aggregation
from mongocore.sim.change_events import Scope, StreamOptions, build_event, invalidate_event
from mongocore.sim.change_log import ChangeLog, ChangeRecord, change_log_of
from mongocore.sim.codes import RETRYABLE_WRITE_CODES, CommandError
from mongocore.sim.resume_token import Position, after, at, parse_token

if TYPE_CHECKING:
    from mongocore.sim.commands import CommandContext, Cursor, CursorTable
    from mongocore.sim.failpoints import FailPoints

__all__ = [
    "ChangeStream",
    "aggregate",
    "change_stream_labels",
    "fail_get_more",
    "get_more",
    "is_change_stream",
    "labels_for",
]

Document = dict[str, Any]
Reply = dict[str, Any]

DEFAULT_FIRST_BATCH = 101
DEFAULT_AWAIT_SECONDS = 1.0  # an awaitData getMore without maxTimeMS waits one second

#: Errors after which a client may resume (the server's ResumableChangeStreamError
#: rule: retriable, network and retargeting errors, RetryChangeStream,
#: FailedToSatisfyReadPreference).
RESUMABLE_CODES = RETRYABLE_WRITE_CODES | frozenset({63, 133, 150, 234, 13388})
NON_RESUMABLE_CODES = frozenset({280, 286})

_OPTIONS = frozenset(
    {
        "resumeAfter",
        "startAfter",
        "startAtOperationTime",
        "fullDocument",
        "fullDocumentBeforeChange",
        "allChangesForCluster",
        "showExpandedEvents",
        "showSystemEvents",
        "allowToRunOnConfigDB",
        "allowToRunOnSystemNS",
    }
)
_FULL_DOCUMENT = ("default", "updateLookup", "whenAvailable", "required")
_BEFORE_CHANGE = ("off", "whenAvailable", "required")
#: Stages a change stream pipeline may have after $changeStream.
_ALLOWED_STAGES = frozenset(
    {
        "$match",
        "$project",
        "$addFields",
        "$set",
        "$unset",
        "$replaceRoot",
        "$replaceWith",
        "$redact",
        "$changeStreamSplitLargeEvent",
    }
)
#: Other stages a 7.0 server knows: refused in a change stream, not unrecognized.
_OTHER_STAGES = frozenset(
    {
        "$bucket",
        "$bucketAuto",
        "$changeStream",
        "$collStats",
        "$count",
        "$currentOp",
        "$densify",
        "$documents",
        "$facet",
        "$fill",
        "$geoNear",
        "$graphLookup",
        "$group",
        "$indexStats",
        "$limit",
        "$listLocalSessions",
        "$listSearchIndexes",
        "$listSessions",
        "$lookup",
        "$merge",
        "$out",
        "$planCacheStats",
        "$sample",
        "$search",
        "$searchMeta",
        "$setWindowFields",
        "$shardedDataDistribution",
        "$skip",
        "$sort",
        "$sortByCount",
        "$unionWith",
        "$unwind",
    }
)
_INTERNAL_DATABASES = ("admin", "config", "local")


def is_change_stream(cmd: Mapping[str, Any]) -> bool:
    """Does this aggregate's pipeline start with $changeStream?"""
    pipeline = cmd.get("pipeline")
    return (
        isinstance(pipeline, list)
        and bool(pipeline)
        and isinstance(pipeline[0], Mapping)
        and "$changeStream" in pipeline[0]
    )


def labels_for(code: int, *, change_stream: bool = True) -> list[str]:
    """The change stream labels a server adds to an error with ``code``."""
    if code in NON_RESUMABLE_CODES:
        return ["NonResumableChangeStreamError"]
    if change_stream and code in RESUMABLE_CODES:
        return ["ResumableChangeStreamError"]
    return []


def change_stream_labels(name: str, cmd: Mapping[str, Any], code: Optional[int]) -> list[str]:
    """The change stream labels a server adds to the error of command ``name`` (a
    getMore's are added where its cursor is known: get_more, fail_get_more)."""
    if code is None:
        return []
    return labels_for(code, change_stream=name == "aggregate" and is_change_stream(cmd))


def _labelled(exc: CommandError) -> CommandError:
    if not exc.labels:
        exc.labels = labels_for(exc.code)
    return exc


class ChangeStream:
    """One open change stream: what it watches, its options, and where it is."""

    def __init__(
        self,
        log: ChangeLog,
        scope: Scope,
        options: StreamOptions,
        *,
        pipeline: list[Mapping[str, Any]],
        position: Position,
        pending: Optional[ChangeRecord] = None,
    ) -> None:
        self.log = log
        self.scope = scope
        self.options = options
        self.pipeline = pipeline
        self.position = position
        self.pending = pending  # an invalidating event whose invalidate is still to come
        self.closed = False
        self.reads = 0  # how often it was read (a getMore reads again after each wait)

    def read(self, limit: Optional[int], reader: Any) -> list[Document]:
        """The next events, at most ``limit``; advances the stream past what it scanned."""
        batch: list[Document] = []
        self.reads += 1
        if self.pending is not None:
            self._invalidate(self.pending, batch, reader)
            return batch
        _check_history(self.log, self.position)  # a stream that fell too far behind
        for record in self.log.after(self.position):
            if limit is not None and len(batch) >= limit:
                return batch
            if not self.scope.covers(record, self.options.show_expanded_events):
                self.position = record.position
                continue
            event = build_event(record, self.options, _lookup(reader))
            self._emit(event, batch, reader)
            self.position = record.position
            if self.scope.invalidated_by(record):
                if limit is not None and len(batch) >= limit:
                    self.pending = record
                else:
                    self._invalidate(record, batch, reader)
                return batch
        end = self.log.store.last_optime.ts
        if end > self.position.ts:
            # Past everything logged (as a server's high-water mark, only once the oplog
            # moved beyond the last event returned).
            self.position = after(end)
        return batch

    @property
    def resume_token(self) -> Document:
        return self.position.token()

    def _invalidate(self, record: ChangeRecord, batch: list[Document], reader: Any) -> None:
        self._emit(invalidate_event(record), batch, reader)
        self.position = record.position.invalidated()
        self.pending = None
        self.closed = True

    def _emit(self, event: Document, batch: list[Document], reader: Any) -> None:
        if not self.pipeline:
            batch.append(event)
            return
        out = aggregation.run([event], self.pipeline, view=reader, db="admin")
        for doc in out:
            if "_id" not in doc or doc["_id"] != event["_id"]:
                raise CommandError(
                    280,
                    "Encountered an event whose _id field, which contains the resume token, was"
                    " modified by the pipeline. Modifying the _id field of an event makes it"
                    " impossible to resume the stream from that point. Only transformations"
                    " that retain the unmodified _id field are allowed.",
                )
            batch.append(doc)


def _lookup(reader: Any) -> Callable[[str, str, Any], Optional[Document]]:
    def lookup(db: str, coll: str, doc_id: Any) -> Optional[Document]:
        collection = reader.collection(db, coll)
        hit = collection.get(doc_id, reader.as_of) if collection is not None else None
        return None if hit is None else dict(hit[1])

    return lookup


# -- aggregate ---------------------------------------------------------------------------


def aggregate(ctx: CommandContext) -> Reply:
    """An aggregate whose pipeline starts with $changeStream: open the stream."""
    try:
        return _open(ctx)
    except CommandError as exc:
        raise _labelled(exc) from None


def _open(ctx: CommandContext) -> Reply:
    cmd = ctx.cmd
    if "cursor" not in cmd:
        raise CommandError(
            9, "The 'cursor' option is required, except for aggregate with the explain argument"
        )
    if cmd.get("explain"):
        raise CommandError(238, "explain is not supported by the simulator")
    log = change_log_of(ctx.store)
    if log is None:
        raise CommandError(40573, "The $changeStream stage is only supported on replica sets")
    pipeline = list(cmd["pipeline"])
    spec = pipeline[0]["$changeStream"]
    if not isinstance(spec, Mapping):
        raise CommandError(
            50808, f"$changeStream stage expects a document as argument, got {type(spec).__name__}"
        )
    for name in spec:
        if name not in _OPTIONS:
            raise CommandError(40415, f"BSON field '$changeStream.{name}' is an unknown field.")
    scope, ns = _scope(ctx, spec)
    options = StreamOptions(
        full_document=_enum(spec, "fullDocument", _FULL_DOCUMENT),
        full_document_before_change=_enum(spec, "fullDocumentBeforeChange", _BEFORE_CHANGE),
        show_expanded_events=bool(spec.get("showExpandedEvents", False)),
    )
    stages = _stages(pipeline[1:])
    position, pending = _start(log, scope, spec)
    stream = ChangeStream(log, scope, options, pipeline=stages, position=position, pending=pending)
    size = _batch_size((cmd.get("cursor") or {}).get("batchSize"))
    batch = stream.read(DEFAULT_FIRST_BATCH if size is None else size, ctx.reader)
    cursor_id = 0 if stream.closed else ctx.cursors.open_stream(ns, stream)
    return {
        "cursor": {
            "firstBatch": batch,
            "postBatchResumeToken": stream.resume_token,
            "id": Int64(cursor_id),
            "ns": ns,
        },
        "ok": 1.0,
    }


def _scope(ctx: CommandContext, spec: Mapping[str, Any]) -> tuple[Scope, str]:
    """What the stream watches, and its cursor's namespace."""
    db = ctx.db
    if spec.get("allChangesForCluster"):
        if db != "admin" or ctx.target != 1:
            raise CommandError(
                73,
                "A $changeStream with 'allChangesForCluster:true' may only be opened on the"
                " 'admin' database, and with no collection name",
            )
        return Scope(), "admin.$cmd.aggregate"
    if db in _INTERNAL_DATABASES:
        raise CommandError(73, f"$changeStream may not be opened on the internal {db} database")
    if ctx.target == 1:
        return Scope(db), f"{db}.$cmd.aggregate"
    coll = ctx.collection_name()
    if coll.startswith("system.") and not spec.get("allowToRunOnSystemNS"):
        raise CommandError(
            73, f"$changeStream may not be opened on the internal {db}.{coll} collection"
        )
    return Scope(db, coll), f"{db}.{coll}"


def _enum(spec: Mapping[str, Any], name: str, allowed: Sequence[str]) -> str:
    value = spec.get(name, allowed[0])
    if value not in allowed:
        raise CommandError(
            2, f"Enumeration value '{value}' for field '$changeStream.{name}' is not a valid value."
        )
    return str(value)


def _stages(stages: Sequence[Any]) -> list[Mapping[str, Any]]:
    """The pipeline after $changeStream, checked as a server checks it."""
    out: list[Mapping[str, Any]] = []
    for stage in stages:
        if not isinstance(stage, Mapping) or len(stage) != 1:
            raise CommandError(
                40323, "A pipeline stage specification object must contain exactly one field."
            )
        name = str(next(iter(stage)))
        if name == "$changeStream":
            raise CommandError(
                40602, "$changeStream is only valid as the first stage in a pipeline."
            )
        if name not in _ALLOWED_STAGES:
            if name in _OTHER_STAGES:
                raise CommandError(20, f"{name} is not permitted in a $changeStream pipeline")
            raise CommandError(40324, f"Unrecognized pipeline stage name: '{name}'")
        if name == "$changeStreamSplitLargeEvent":
            continue  # simulated events never exceed the BSON limit
        out.append(stage)
    return out


def _start(
    log: ChangeLog, scope: Scope, spec: Mapping[str, Any]
) -> tuple[Position, Optional[ChangeRecord]]:
    """Where the stream starts, and an invalidate it owes (resuming after a drop)."""
    given = [name for name in ("resumeAfter", "startAfter", "startAtOperationTime") if name in spec]
    if len(given) > 1:
        raise CommandError(
            40674, f"Only one type of resume option is allowed, but multiple were found: {given}"
        )
    if not given:
        return after(log.store.last_optime.ts), None
    name = given[0]
    if name == "startAtOperationTime":
        ts = spec[name]
        if not isinstance(ts, Timestamp):
            raise CommandError(
                14,
                "BSON field '$changeStream.startAtOperationTime' is the wrong type"
                f" '{type(ts).__name__}', expected type 'timestamp'",
            )
        position = at(ts)
        _check_history(log, position)
        return position, None
    position = parse_token(spec[name])
    if position.invalidate and name == "resumeAfter":
        raise CommandError(
            260,
            "Attempting to resume a change stream using 'resumeAfter' is not allowed from an"
            " invalidate notification.",
        )
    _check_history(log, position)
    if not position.event:
        return position, None
    record = log.find(position)
    if record is None:
        raise CommandError(
            280, f"cannot resume stream; the resume token was not found. {position.token()}"
        )
    if not position.invalidate and scope.invalidated_by(record):
        return position, record
    return position, None


def _check_history(log: ChangeLog, position: Position) -> None:
    if log.lost(position):
        raise CommandError(
            286,
            "Resume of change stream was not possible, as the resume point may no longer be in"
            " the oplog.",
        )


def _batch_size(value: Any) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise CommandError(
            51024, f"BSON field 'batchSize' value must be >= 0, actual value '{value}'"
        )
    return int(value)


# -- getMore -----------------------------------------------------------------------------


def get_more(ctx: CommandContext, cursor: Cursor, ns: str) -> Reply:
    """A getMore on a change stream cursor: the next events, waiting for some if none."""
    stream: ChangeStream = cursor.stream
    if cursor.ns != ns:
        raise CommandError(
            13, f"Requested getMore on namespace '{ns}', but cursor belongs to '{cursor.ns}'"
        )
    try:
        limit = _batch_size(ctx.cmd.get("batchSize")) or None
        await_seconds = _await_seconds(ctx.cmd.get("maxTimeMS"))
        deadline = time.monotonic() + await_seconds
        while True:
            batch = stream.read(limit, ctx.reader)
            remaining = deadline - time.monotonic()
            if batch or stream.closed or remaining <= 0 or not _wait(ctx, remaining):
                break
    except CommandError as exc:
        ctx.cursors.discard(cursor.id)  # a failed getMore kills its cursor
        raise _labelled(exc) from None
    cursor_id = cursor.id
    if stream.closed:
        ctx.cursors.discard(cursor.id)
        cursor_id = 0
    return {
        "cursor": {
            "nextBatch": batch,
            "postBatchResumeToken": stream.resume_token,
            "id": Int64(cursor_id),
            "ns": ns,
        },
        "ok": 1.0,
    }


def _await_seconds(value: Any) -> float:
    if value is None:
        return DEFAULT_AWAIT_SECONDS
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise CommandError(2, "maxTimeMS must be a non-negative number")
    return float(value) / 1000.0


def _wait(ctx: CommandContext, seconds: float) -> bool:
    """Wait for an oplog append on the deployment's condition variable (releasing its lock);
    False when the server is going away or cannot wait."""
    process = ctx.process
    if process is None:
        return False
    if not process.alive or process.deployment.stopping:
        return False
    process.cond.wait(seconds)
    return process.alive and not process.deployment.stopping


def fail_get_more(failpoints: FailPoints, cursors: CursorTable, cmd: Mapping[str, Any]) -> None:
    """``failGetMoreAfterCursorCheckout``: fail a getMore once it holds its cursor, as a
    server does, with the labels a server computes (unlike ``failCommand``'s)."""
    error = failpoints.fail_get_more()
    if error is None:
        return
    cursor_id = cmd.get("getMore")
    cursor = cursors.find(cursor_id) if isinstance(cursor_id, int) else None
    if cursor is not None:
        cursors.discard(cursor.id)
    error.labels = labels_for(
        error.code, change_stream=cursor is not None and cursor.stream is not None
    )
    raise error
