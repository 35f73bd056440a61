"""Bulk writes: batches of insert, update and delete commands.

Spec: CRUD, "Bulk Write" (ordered writes stop at the first error, unordered ones
run every statement); batch splitting by maxWriteBatchSize and message size.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Optional

from mongocore.api.arguments import _raise_single_write_errors
from mongocore.api.client_session import ClientSession
from mongocore.api.operations import _WriteModel
from mongocore.api.results import BulkWriteResult
from mongocore.api.types import Document
from mongocore.core.wire.limits import COMMAND_OVERHEAD, op_msg_overhead, split_batches
from mongocore.errors import (
    BulkWriteError,
    MongoCoreError,
    error_code,
)
from mongocore.io.command_monitoring import next_operation_id
from mongocore.io.operation import AttemptContext, Command

if TYPE_CHECKING:
    from mongocore.api.collection import Collection
    from mongocore.core.address import Address


# --- bulk writes -----------------------------------------------------------------------


#: Room kept in each write message for what the executor adds to the command body
#: after the batch is cut (lsid, txnNumber, $clusterTime, $db, $readPreference).
_COMMAND_FIELDS_ALLOWANCE = 1024


class _Batch(NamedTuple):
    kind: str
    #: (request index, statement) in send order.
    statements: list[tuple[int, Document]]


_SEQUENCE_OF = {"insert": "documents", "update": "updates", "delete": "deletes"}


class _BulkWrite:
    """insert_many and bulk_write (and the single-statement writes): group requests
    into commands, cut each group into batches that fit the server's limits, run one
    command per batch, merge the replies."""

    def __init__(
        self,
        collection: Collection,
        requests: Sequence[_WriteModel],
        *,
        ordered: bool,
        session: ClientSession,
        timeout_ms: Optional[float],
        options: Mapping[str, Any],
    ) -> None:
        self.collection = collection
        self.requests = requests
        self.ordered = ordered
        self.session = session
        self.timeout_ms = timeout_ms
        self.options = dict(options)
        # "bulkWrite() ... may not include UpdateMany or DeleteMany": the whole
        # operation is then unsupported, every command of it without a transaction id.
        self.retryable = not any(r._multi for r in requests)
        self.operation_id = next_operation_id()
        # Server selection's log messages name a bulk of one kind of write by its
        # command (insert, update, delete) and a mixed one bulkWrite (Server Selection,
        # "Logging": the public method's name where it differs from the command's).
        self.operation_name = "bulkWrite" if len({r._kind for r in requests}) > 1 else None
        #: Where the last command ran: the next goes there too while it is writable.
        self.server: Optional[Address] = None
        self.inserted_ids: dict[int, Any] = {}
        self.last_reply: Optional[Mapping[str, Any]] = None
        self.result: Document = {
            "writeErrors": [],
            "writeConcernErrors": [],
            "nInserted": 0,
            "nUpserted": 0,
            "nMatched": 0,
            "nModified": 0,
            "nRemoved": 0,
            "upserted": [],
        }

    def _groups(self) -> list[_Batch]:
        groups: list[_Batch] = []
        if self.ordered:
            for index, request in enumerate(self.requests):
                statement = request._statement()
                if groups and groups[-1].kind == request._kind:
                    groups[-1].statements.append((index, statement))
                else:
                    groups.append(_Batch(request._kind, [(index, statement)]))
        else:
            by_kind: dict[str, _Batch] = {}
            for index, request in enumerate(self.requests):
                group = by_kind.setdefault(request._kind, _Batch(request._kind, []))
                group.statements.append((index, request._statement()))
            groups = [by_kind[k] for k in ("insert", "update", "delete") if k in by_kind]
        for group in groups:
            if group.kind == "insert":
                for index, statement in group.statements:
                    self.inserted_ids[index] = statement["_id"]
        return groups

    def execute(self, *, single: bool = False) -> BulkWriteResult:
        collection = self.collection
        # In a transaction every write is acknowledged: the commit has the write concern.
        acknowledged = collection.write_concern.acknowledged or self.session.in_transaction
        try:
            for group in self._groups():
                self._run_group(group)
                if self.ordered and self.result["writeErrors"]:
                    break
        except MongoCoreError as exc:
            if acknowledged and not single:
                # The seed encourages access to the intermediary result of a write
                # whose later command failed: the counts of the commands before it.
                exc.partial_result = copy.deepcopy(self.result)
            raise
        if not acknowledged:
            return BulkWriteResult({}, False, self.inserted_ids)
        result = self.result
        if single:
            # One statement, one command: its own errors, as the server gave them.
            if self.last_reply is not None:
                _raise_single_write_errors(self.last_reply)
        elif result["writeErrors"] or result["writeConcernErrors"]:
            raise BulkWriteError(result)
        # No copy: this bulk is used once, and nothing else holds its result.
        return BulkWriteResult(result, True, self.inserted_ids)

    def _run_group(self, group: _Batch) -> None:
        collection = self.collection
        identifier = _SEQUENCE_OF[group.kind]
        encoded = [collection._encode(statement) for _, statement in group.statements]
        batches: list[range] = []
        position = 0
        while True:

            def build(ctx: AttemptContext, position: int = position) -> Command:
                if not batches:
                    # Cut every batch now, with this connection's limits; a batch keeps
                    # its statements (and transaction number) on a retry.
                    body_size = len(collection._encode(self._body(group.kind)))
                    overhead = op_msg_overhead(body_size + _COMMAND_FIELDS_ALLOWANCE, identifier)
                    max_document = None
                    if group.kind != "insert":
                        max_document = ctx.connection.limits.max_bson_object_size + COMMAND_OVERHEAD
                    batches.extend(
                        split_batches(encoded, overhead, ctx.connection.limits, max_document)
                    )
                indexes = batches[position]
                return Command(
                    self._body(group.kind),
                    {identifier: [encoded[i] for i in indexes]},
                    {identifier: [group.statements[i][1] for i in indexes]},
                )

            outcome = collection._write(
                group.kind,
                build,
                self.session,
                retryable=self.retryable,
                timeout_ms=self.timeout_ms,
                operation_id=self.operation_id,
                operation_name=self.operation_name,
                continue_on=self.server,
            )
            reply = outcome.reply
            self.server = outcome.address
            self._merge(group, batches[position], reply)
            position += 1
            if position >= len(batches):
                return
            if self.ordered and self.result["writeErrors"]:
                return

    def _body(self, kind: str) -> Document:
        body: Document = {kind: self.collection.name, "ordered": self.ordered}
        options = self.options
        if kind == "insert" and "let" in options:
            # let is a field of update and delete (an insert has no expressions).
            options = {name: value for name, value in options.items() if name != "let"}
        return self.collection._write_command_fields(body, **options)

    def _merge(self, group: _Batch, indexes: range, reply: Mapping[str, Any]) -> None:
        self.last_reply = reply
        result = self.result
        n = int(reply.get("n", 0))
        if group.kind == "insert":
            result["nInserted"] += n
        elif group.kind == "delete":
            result["nRemoved"] += n
        else:
            upserted = reply.get("upserted") or []
            for ordinal, upsert in enumerate(upserted):
                # Some compatible servers leave out "index"; a single statement is
                # then index 0, and several are taken in the reply's order.
                index = error_code(upsert.get("index"))
                position = group.statements[indexes[ordinal if index is None else index]][0]
                result["upserted"].append({"index": position, "_id": upsert["_id"]})
            result["nUpserted"] += len(upserted)
            result["nMatched"] += n - len(upserted)
            result["nModified"] += int(reply.get("nModified", 0))
        for error in reply.get("writeErrors") or []:
            entry = dict(error)
            original = group.statements[indexes[error_code(error.get("index")) or 0]]
            entry["index"] = original[0]
            entry["op"] = original[1]
            result["writeErrors"].append(entry)
        wce = reply.get("writeConcernError")
        if isinstance(wce, Mapping):
            entry = dict(wce)
            if reply.get("errorLabels"):
                entry["errorLabels"] = list(reply["errorLabels"])
            result["writeConcernErrors"].append(entry)
