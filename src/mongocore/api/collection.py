"""Collection: ``client.db.coll``, with its reads, writes and indexes.

Specs: CRUD (the operations, their options and result shapes, bulk write
semantics: ordered writes stop at the first error, unordered ones run every
statement), the find/getMore/killCursors commands (cursors, ``limit`` and
``batchSize``, ``singleBatch``), and the enumeration commands (listDatabases,
listCollections, listIndexes). Every operation runs through the executor of
:mod:`mongocore.io.executor`, which applies the retryable reads and writes rules;
which operations retry is decided in the collection modules, per the seeds'
"Supported ... Operations":

- retryable writes (when retryWrites is on, with an acknowledged write concern):
  insert_one, insert_many, update_one, replace_one, delete_one,
  find_one_and_delete/replace/update, and bulk_write when it has no UpdateMany or
  DeleteMany request. Each command sent (one per batch) has its own txnNumber.
- retryable reads (when retryReads is on): find, find_one, aggregate without $out
  or $merge, distinct, count, count_documents, estimated_document_count,
  list_databases, list_collections, list_indexes, and the aggregate of ``watch()``
  (:mod:`mongocore.api.watch`). getMore never retries (a change stream resumes).
- never retried: update_many, delete_many, aggregate with $out/$merge, index and
  collection management, and ``Database.command`` (the generic command method).

Objects here are cheap views: ``client["db"]["coll"]`` makes no I/O. Documents are
returned as plain dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, NoReturn, Optional

from mongocore.api.client_session import ClientSession
from mongocore.api.collection_base import _check_collection_name
from mongocore.api.collection_indexes import CollectionIndexes
from mongocore.api.collection_reads import CollectionReads
from mongocore.api.collection_search_indexes import CollectionSearchIndexes
from mongocore.api.collection_writes import CollectionWrites
from mongocore.api.target import _check_timeout_ms
from mongocore.api.types import Document, _DocumentType
from mongocore.api.watch import CollectionWatch
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import InvalidName
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

__all__ = ["Collection"]


class Collection(
    CollectionWrites,
    CollectionReads,
    CollectionIndexes,
    CollectionSearchIndexes,
    CollectionWatch,
    Generic[_DocumentType],
):
    """A collection: ``client["db"]["coll"]`` or ``client.db.coll``. Thread-safe; makes
    no I/O until used. ``coll.sub`` (or ``coll["sub"]``) is the collection ``coll.sub``."""

    def __getitem__(self, name: str) -> Collection[_DocumentType]:
        """The sub-collection ``<this name>.<name>``, with this collection's options."""
        collection: Collection[_DocumentType] = Collection(
            self._database,
            f"{self._name}.{name}",
            False,
            codec_options=self._codec_options,
            read_preference=self._read_preference,
            write_concern=self._write_concern,
            read_concern=self._read_concern,
        )
        collection._timeout_ms = self._timeout_ms
        return collection

    def __getattr__(self, name: str) -> Collection[_DocumentType]:
        """``collection.sub`` is ``collection["sub"]``, through ``__getitem__`` each
        time (as in pymongo: a subclass's ``__getitem__`` decides)."""
        if name.startswith("_"):
            full_name = f"{self._name}.{name}"
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}. To reach the collection"
                f" {full_name!r}, use database[{full_name!r}]."
            )
        return self.__getitem__(name)

    # Iterating a collection is a mistake: without these, Python would iterate it
    # through __getitem__ with 0, 1, 2, ... (sub-collections "coll.0", "coll.1", ...).
    def __iter__(self) -> Collection[_DocumentType]:
        return self

    def __next__(self) -> NoReturn:
        raise TypeError(f"'{type(self).__name__}' object is not iterable")

    next = __next__

    def __bool__(self) -> NoReturn:
        raise NotImplementedError(
            f"{type(self).__name__} objects do not implement truth value testing or"
            " bool(). Please compare with None instead: collection is not None"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        method = self._name.rpartition(".")[2]
        raise TypeError(
            f"'Collection' object is not callable. If you meant to call the method"
            f" {method!r} of a Collection, Collection has no such method."
        )

    def with_options(
        self,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> Collection[_DocumentType]:
        """This collection with some options changed (the others are this one's).
        ``timeout_ms``: its operations' timeoutMS (0: no limit)."""
        collection: Collection[_DocumentType] = Collection(
            self._database,
            self._name,
            False,
            codec_options=codec_options or self._codec_options,
            read_preference=read_preference or self._read_preference,
            write_concern=write_concern or self._write_concern,
            read_concern=read_concern or self._read_concern,
        )
        collection._timeout_ms = _check_timeout_ms(timeout_ms, self._timeout_ms)
        return collection

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Collection):
            return NotImplemented
        return other._database == self._database and other._name == self._name

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self._database, self._name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._database!r}, {self._name!r})"

    def rename(
        self,
        new_name: str,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> Document:
        """Rename this collection within its database (renameCollection, run on the
        admin database, never retried); ``dropTarget=True`` replaces an existing
        collection of that name. Returns the server's reply."""
        if not isinstance(new_name, str):
            raise TypeError("new_name must be a string")
        if "$" in new_name and not new_name.startswith("oplog.$main"):  # not $cmd, as pymongo
            raise InvalidName(f"collection names must not contain '$': {new_name!r}")
        _check_collection_name(new_name)
        to = f"{self._database.name}.{new_name}"
        body: Document = {"renameCollection": self.full_name, "to": to, **kwargs}
        return self._admin_command(body, session, comment, database="admin")

    def options(self, session: Optional[ClientSession] = None, comment: Any = None) -> Document:
        """The options the collection was created with (listCollections); ``{}`` for
        a collection created implicitly or that does not exist."""
        with self._database.list_collections(
            session, {"name": self._name}, comment=comment
        ) as cursor:
            for info in cursor:
                options = dict(info.get("options") or {})
                options.pop("create", None)
                return options
        return {}

    def drop(
        self,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        encrypted_fields: Optional[Mapping[str, Any]] = None,
    ) -> None:
        """Drop the collection; a missing collection is not an error.
        ``encrypted_fields`` (queryable encryption) is not supported."""
        self._database.drop_collection(self._name, session, comment, encrypted_fields)
