"""Collection writes: insert, update, replace, delete, findAndModify, bulk_write.

Spec: CRUD ("Write" and "Find And Modify"); which writes are retryable is the
retryable-writes seed's "Supported Write Operations".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Final, Optional, Union

from mongocore.api.arguments import (
    _check_filter,
    _check_replacement,
    _check_update,
    _collation_or_none,
    _command_fields,
    _hint,
    _options,
    _projection,
    _raise_single_write_errors,
    _raise_write_concern_error,
    _sort_document,
    _with_id,
)
from mongocore.api.bulk import _BulkWrite
from mongocore.api.client_session import ClientSession, bound_session
from mongocore.api.collection_base import CollectionBase
from mongocore.api.operations import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
    WriteModel,
    _Delete,
    _Update,
    _WriteModel,
)
from mongocore.api.results import (
    BulkWriteResult,
    DeleteResult,
    InsertManyResult,
    InsertOneResult,
    UpdateResult,
)
from mongocore.api.types import CollationSpec, Document, Filter, Hint, Projection, SortSpec
from mongocore.core import codec
from mongocore.core.address import Address
from mongocore.core.retry_policy import RetryKind
from mongocore.io.command_monitoring import next_operation_id
from mongocore.io.operation import AttemptContext, Command, CommandOutcome, new_operation

_new_tuple = tuple.__new__
_WRITE = RetryKind.WRITE  # bound once: an enum member read from its class costs more
_NONE = RetryKind.NONE


class ReturnDocument:
    """Which document find_one_and_replace/update return: before or after the change.

    As in pymongo, the two values are the booleans of findAndModify's ``new``:
    ``return_document=True`` is ``ReturnDocument.AFTER``."""

    BEFORE: Final = False
    AFTER: Final = True


class CollectionWrites(CollectionBase):
    # --- writes ----------------------------------------------------------------------------

    def _write(
        self,
        name: str,
        build: Callable[[AttemptContext], Command],
        session: ClientSession,
        *,
        retryable: bool,
        timeout_ms: Optional[float],
        operation_id: Optional[int] = None,
        operation_name: Optional[str] = None,
        continue_on: Optional[Address] = None,
    ) -> CommandOutcome:
        op = new_operation(
            name=name,
            database=self._database._name,
            build=build,
            session=session,
            retry=_WRITE if retryable else _NONE,
            acknowledged=self._write_concern._acknowledged or session.in_transaction,
            timeout_ms=timeout_ms,
            operation_id=operation_id,
            operation_name=operation_name,
            continue_on=continue_on,
        )
        return self._run(op)

    def _write_command_fields(self, body: Document, **options: Any) -> Document:
        if "writeConcern" not in body and not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        body.update(_options(**options))
        return body

    def insert_one(
        self,
        document: Mapping[str, Any],
        bypass_document_validation: Optional[bool] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> InsertOneResult:
        """Insert one document (a retryable write). A missing ``_id`` is generated."""
        # The bulk machinery's result, without its per-call work: one statement is one
        # batch of one document. The document is encoded with the command (encode_op_msg
        # sends it in the body when the body stays within maxBsonObjectSize, else as a
        # document sequence, checked for DocumentTooLarge before anything is sent).
        # (type() first: isinstance against an abstract class is a Python call.)
        if type(document) is not dict and not isinstance(document, Mapping):
            raise TypeError(f"document must be a mapping (a dict), not {type(document).__name__}")
        statement = _with_id(document)
        if session is None:
            session = bound_session(self._client)
        owned = session is None
        write_concern = self._write_concern
        # (The implicit session without _write_session's call.)
        use = (
            ClientSession(self._client, None, True)  # implicit
            if owned
            else self._write_session(session, write_concern)
        )
        try:
            body: Document = {"insert": self._name, "ordered": True}
            if write_concern._document:  # not the server's default
                body["writeConcern"] = write_concern.document
            if bypass_document_validation is not None:
                body["bypassDocumentValidation"] = bypass_document_validation
            if comment is not None:
                body["comment"] = comment
            documents = {"documents": [statement]}

            def build(ctx: AttemptContext) -> Command:
                # Command(...) without the NamedTuple's generated __new__ (a Python call).
                # (The documents for the events too: with the user's codec options the
                # sequences become BSON values, see _Target._run.)
                return _new_tuple(Command, (dict(body), documents, documents))

            # In a transaction every write is acknowledged: the commit has the write concern.
            acknowledged = write_concern._acknowledged or use.in_transaction
            # What _write does, without its call.
            op = new_operation(
                name="insert",
                database=self._database._name,
                build=build,
                session=use,
                retry=_WRITE,
                acknowledged=acknowledged,
                timeout_ms=timeout_ms,
                operation_id=next_operation_id(),
            )
            reply = self._run(op).reply
            if not acknowledged:
                return InsertOneResult(statement["_id"], False)
            if "writeErrors" in reply or "writeConcernError" in reply:
                _raise_single_write_errors(reply)
            return InsertOneResult(statement["_id"], True)
        finally:
            if owned:
                use.end_session()

    def insert_many(
        self,
        documents: Iterable[Mapping[str, Any]],
        ordered: bool = True,
        bypass_document_validation: Optional[bool] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> InsertManyResult:
        """Insert documents, split into as few commands as the server's limits allow
        (a retryable write: each command has its own transaction number)."""
        requests = [InsertOne(d) for d in documents]
        if not requests:
            raise TypeError("documents must be a non-empty list")
        result = self._bulk(
            requests,
            ordered=ordered,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
        )[0]
        ids = result.inserted_ids
        return InsertManyResult(
            [ids[i] for i in range(len(requests)) if i in ids], result.acknowledged
        )

    def _update(
        self,
        model: _Update,
        *,
        bypass_document_validation: Optional[bool],
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        comment: Any,
        let: Optional[Mapping[str, Any]],
    ) -> UpdateResult:
        result, reply = self._bulk(
            [model],
            ordered=True,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
            single=True,
        )
        if not result.acknowledged or reply is None:
            return UpdateResult(None, False)
        raw = dict(reply)
        upserted = raw.get("upserted")
        # The shape other drivers give: updatedExisting, and upserted as the _id.
        if isinstance(upserted, list) and upserted:
            raw["upserted"] = upserted[0].get("_id")
            raw["updatedExisting"] = False
        else:
            raw.pop("upserted", None)
            raw["updatedExisting"] = bool(raw.get("n"))
        return UpdateResult(raw, True)

    def update_one(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: bool = False,
        bypass_document_validation: Optional[bool] = None,
        collation: Optional[CollationSpec] = None,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        sort: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> UpdateResult:
        """Update the first document matching ``filter`` (a retryable write); with
        ``sort`` (MongoDB 8.0+), the first in that order."""
        model = UpdateOne(
            filter,
            update,
            upsert,
            array_filters=array_filters,
            hint=hint,
            collation=collation,
            sort=sort,
        )
        return self._update(
            model,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def update_many(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        upsert: bool = False,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        bypass_document_validation: Optional[bool] = None,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> UpdateResult:
        """Update every document matching ``filter`` (never retried)."""
        model = UpdateMany(
            filter, update, upsert, array_filters=array_filters, hint=hint, collation=collation
        )
        return self._update(
            model,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def replace_one(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        replacement: Mapping[str, Any],
        upsert: bool = False,
        bypass_document_validation: Optional[bool] = None,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        sort: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> UpdateResult:
        """Replace the first document matching ``filter`` (a retryable write); with
        ``sort`` (MongoDB 8.0+), the first in that order."""
        model = ReplaceOne(filter, replacement, upsert, hint=hint, collation=collation, sort=sort)
        return self._update(
            model,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def _delete(
        self,
        model: _Delete,
        *,
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        comment: Any,
        let: Optional[Mapping[str, Any]],
    ) -> DeleteResult:
        result, reply = self._bulk(
            [model],
            ordered=True,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
            single=True,
        )
        if not result.acknowledged or reply is None:
            return DeleteResult(None, False)
        return DeleteResult(reply, True)

    def delete_one(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> DeleteResult:
        """Delete the first document matching ``filter`` (a retryable write)."""
        return self._delete(
            DeleteOne(filter, hint=hint, collation=collation),
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def delete_many(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        collation: Optional[CollationSpec] = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> DeleteResult:
        """Delete every document matching ``filter`` (never retried)."""
        return self._delete(
            DeleteMany(filter, hint=hint, collation=collation),
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )

    def bulk_write(  # noqa: PLR0917 - positional as pymongo's
        self,
        requests: Sequence[WriteModel],
        ordered: bool = True,
        bypass_document_validation: Optional[bool] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        let: Optional[Mapping[str, Any]] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> BulkWriteResult:
        """Run a list of write requests (InsertOne, UpdateOne, UpdateMany, ReplaceOne,
        DeleteOne, DeleteMany).

        Ordered: requests run in order, consecutive ones of a kind in one command, and
        the first write error stops the rest. Unordered: inserts, then updates, then
        deletes, each statement attempted. Retryable only if no request is an
        UpdateMany or DeleteMany. Write errors and write concern errors raise
        BulkWriteError with the result so far.
        """
        requests = list(requests)
        if not requests:
            raise TypeError("requests must be a non-empty list")
        for request in requests:
            if not isinstance(request, _WriteModel):
                raise TypeError(f"{request!r} is not a write request (InsertOne, UpdateOne, ...)")
        return self._bulk(
            requests,
            ordered=ordered,
            bypass_document_validation=bypass_document_validation,
            session=session,
            timeout_ms=timeout_ms,
            comment=comment,
            let=let,
        )[0]

    def _bulk(
        self,
        requests: Sequence[_WriteModel],
        *,
        ordered: bool,
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        comment: Any,
        bypass_document_validation: Optional[bool] = None,
        let: Optional[Mapping[str, Any]] = None,
        single: bool = False,
    ) -> tuple[BulkWriteResult, Optional[Mapping[str, Any]]]:
        """The result, and the last command's reply (a single write's raw result)."""
        write_concern = self._write_concern
        use = self._write_session(session, write_concern)
        owned = use.implicit
        try:
            bulk = _BulkWrite(
                self._collection(),
                requests,
                ordered=ordered,
                session=use,
                timeout_ms=timeout_ms,
                options=_options(
                    bypassDocumentValidation=bypass_document_validation,
                    let=None if let is None else dict(let),
                    comment=comment,
                ),
            )
            return bulk.execute(single=single), bulk.last_reply
        finally:
            if owned:
                use.end_session()

    def _find_and_modify(
        self,
        filter: Filter,
        *,
        projection: Projection,
        sort: SortSpec,
        upsert: Optional[bool],
        return_document: bool,
        session: Optional[ClientSession],
        timeout_ms: Optional[float],
        hint: Hint,
        let: Optional[Mapping[str, Any]],
        comment: Any,
        options: Mapping[str, Any],
        remove: bool = False,
        update: Any = None,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
    ) -> Optional[Document]:
        _check_filter(filter)
        # pymongo's ReturnDocument.BEFORE and AFTER are False and True.
        if not isinstance(return_document, bool):
            raise TypeError(
                "return_document must be ReturnDocument.BEFORE or ReturnDocument.AFTER"
                f" (False or True), not {return_document!r}"
            )
        if upsert is not None and not isinstance(upsert, bool):
            raise TypeError(f"upsert must be True or False, not {upsert!r}")
        if array_filters is not None and not isinstance(array_filters, (list, tuple)):
            raise TypeError(
                f"array_filters must be a list of documents, not {type(array_filters).__name__}"
            )
        fields = _command_fields(options)
        # The command's own fields are given by the parameters, not by kwargs.
        for reserved in ("findAndModify", "query", "update", "remove", "new"):
            if reserved in fields:
                raise TypeError(f"{reserved!r} cannot be given as a keyword argument")
        collation = _collation_or_none(fields.pop("collation", None))
        write_concern = self._write_concern
        use = self._write_session(session, write_concern)
        owned = use.implicit
        projected = _projection(projection)
        sort_doc = None if sort is None else _sort_document(sort)
        hint_doc = None if hint is None else _hint(hint)

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"findAndModify": self._name, "query": dict(filter)}
            # (``new`` always, as pymongo sends it: False for a delete.)
            body["new"] = return_document
            if remove:
                body["remove"] = True
            else:
                body["update"] = update
            if let is not None:
                body["let"] = dict(let)
            if comment is not None:
                body["comment"] = comment
            body.update(fields)
            if projected is not None:
                body["fields"] = projected
            if sort_doc is not None:
                body["sort"] = sort_doc
            if upsert is not None:
                body["upsert"] = upsert
            if array_filters is not None:
                body["arrayFilters"] = list(array_filters)
            if hint_doc is not None:
                body["hint"] = hint_doc
            if collation is not None:
                body["collation"] = collation
            return Command(self._write_command_fields(body))

        try:
            reply = self._write(
                "findAndModify", build, use, retryable=True, timeout_ms=timeout_ms
            ).reply
        finally:
            if owned:
                use.end_session()
        _raise_write_concern_error(reply)
        value = reply.get("value")
        acknowledged = write_concern.acknowledged or use.in_transaction
        if not isinstance(value, Mapping) or not acknowledged:
            # An unacknowledged (w=0) write's outcome is unknown, as pymongo has it.
            return None
        if self._decoding is None:
            return dict(value)
        return codec.decode_document(value, self._decoding)  # type: ignore[no-any-return]

    def find_one_and_delete(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        projection: Projection = None,
        sort: SortSpec = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> Optional[Document]:
        """Delete the first matching document and return it (a retryable write).

        ``kwargs`` are findAndModify fields (``maxTimeMS``, ``collation``, ...), as in
        pymongo; mongocore also takes them in snake_case (``max_time_ms``)."""
        return self._find_and_modify(
            filter,
            projection=projection,
            sort=sort,
            upsert=None,
            return_document=ReturnDocument.BEFORE,
            session=session,
            timeout_ms=timeout_ms,
            hint=hint,
            let=let,
            comment=comment,
            options=kwargs,
            remove=True,
        )

    def find_one_and_replace(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        replacement: Mapping[str, Any],
        projection: Projection = None,
        sort: SortSpec = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> Optional[Document]:
        """Replace the first matching document; return it before or after (retryable).

        ``kwargs`` are findAndModify fields (``maxTimeMS``, ``collation``,
        ``bypassDocumentValidation``, ...), in pymongo's spelling or snake_case."""
        _check_replacement(replacement)
        return self._find_and_modify(
            filter,
            projection=projection,
            sort=sort,
            upsert=upsert,
            return_document=return_document,
            session=session,
            timeout_ms=timeout_ms,
            hint=hint,
            let=let,
            comment=comment,
            options=kwargs,
            update=dict(replacement),
        )

    def find_one_and_update(  # noqa: PLR0917 - positional as pymongo's
        self,
        filter: Filter,
        update: Union[Mapping[str, Any], Sequence[Mapping[str, Any]]],
        projection: Projection = None,
        sort: SortSpec = None,
        upsert: bool = False,
        return_document: bool = ReturnDocument.BEFORE,
        array_filters: Optional[Sequence[Mapping[str, Any]]] = None,
        hint: Hint = None,
        session: Optional[ClientSession] = None,
        let: Optional[Mapping[str, Any]] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> Optional[Document]:
        """Update the first matching document; return it before or after (retryable).

        ``kwargs`` are findAndModify fields (``maxTimeMS``, ``collation``,
        ``bypassDocumentValidation``, ...), in pymongo's spelling or snake_case."""
        _check_update(update)
        return self._find_and_modify(
            filter,
            projection=projection,
            sort=sort,
            upsert=upsert,
            return_document=return_document,
            session=session,
            timeout_ms=timeout_ms,
            hint=hint,
            let=let,
            comment=comment,
            options=kwargs,
            update=dict(update) if isinstance(update, Mapping) else list(update),
            array_filters=array_filters,
        )
