"""The state every part of a Collection reads: its database and name."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Optional, cast

from mongocore.api.arguments import (
    _collation_document,
    _command_fields,
    _raise_write_concern_error,
)
from mongocore.api.client_session import ClientSession
from mongocore.api.target import _Target
from mongocore.api.types import Document
from mongocore.core.codec import AnyCodecOptions
from mongocore.core.selection.read_preference import ReadPreference
from mongocore.errors import InvalidName
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.api.collection import Collection
    from mongocore.api.database import Database


def _check_collection_name(name: str) -> None:
    """Raise InvalidName for a collection name the server would refuse, as pymongo does:
    empty, with "..", starting or ending with ".", with a NUL, or with "$" (but for the
    server's own ``$cmd`` and ``oplog.$main``)."""
    if not name or ".." in name:
        raise InvalidName(f"collection names cannot be empty or contain '..': {name!r}")
    if "$" in name and not name.startswith(("oplog.$main", "$cmd")):
        raise InvalidName(f"collection names must not contain '$': {name!r}")
    if name[0] == "." or name[-1] == ".":
        raise InvalidName(f"collection names must not start or end with '.': {name!r}")
    if "\x00" in name:
        raise InvalidName("collection names must not contain the null character")


class CollectionBase(_Target):
    """A collection's database, name and options; its reads, writes and index methods
    are mixins over this base, assembled by :class:`~mongocore.api.collection.Collection`."""

    def __init__(  # noqa: PLR0917 - pymongo's parameters, positional as its
        self,
        database: Database[Any],
        name: str,
        create: Optional[bool] = False,
        codec_options: Optional[AnyCodecOptions] = None,
        read_preference: Optional[ReadPreference] = None,
        write_concern: Optional[WriteConcern] = None,
        read_concern: Optional[ReadConcern] = None,
        session: Optional[ClientSession] = None,
        **kwargs: Any,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be an instance of str, not {type(name)}")
        _check_collection_name(name)
        self._database = database
        self._client = database.client
        self._name = name
        self._set_codec_options(codec_options or database.codec_options)
        self._read_preference = read_preference or database.read_preference
        self._write_concern = write_concern or database.write_concern
        self._read_concern = read_concern or database.read_concern
        self._timeout_ms = database._timeout_ms
        if create or kwargs:
            # pymongo deprecates these too (Database.create_collection creates).
            warnings.warn(
                "The `create` and `kwargs` arguments to Collection are deprecated and "
                "will be removed in PyMongo 5.0",
                DeprecationWarning,
                stacklevel=2,
            )
            self._create(kwargs, session)

    @property
    def name(self) -> str:
        return self._name

    @property
    def full_name(self) -> str:
        return f"{self._database.name}.{self._name}"

    @property
    def database(self) -> Database:
        return self._database

    def _create(self, options: Mapping[str, Any], session: Optional[ClientSession]) -> None:
        """The create command of this collection, ``options`` its fields (pymongo's
        spelling or snake_case; ``collation`` a document or a Collation)."""
        body: Document = {"create": self._name}
        fields = _command_fields(options)
        if "size" in fields:
            # The server takes the size of a capped collection as a number.
            fields["size"] = float(fields["size"])
        if "collation" in fields:
            fields["collation"] = _collation_document(fields["collation"])
        body.update(fields)
        if (
            "writeConcern" not in body
            and not self._write_concern.is_server_default
            and not (session is not None and session.in_transaction)
        ):
            body["writeConcern"] = self._write_concern.document
        reply = self._client.command(
            self._database.name,
            body,
            None,
            session=session,
            timeout_ms=self._timeout_ms,
            operation_name="createCollection",
        )
        _raise_write_concern_error(reply)

    def _admin_command(
        self,
        body: Document,
        session: Optional[ClientSession],
        comment: Any,
        *,
        database: Optional[str] = None,
        timeout_ms: Optional[float] = None,
    ) -> Document:
        """A catalog command (never retried), with the collection's write concern;
        ``timeout_ms``: the operation's own timeoutMS (else the collection's)."""
        if comment is not None:
            body["comment"] = comment
        if not self._write_concern.is_server_default:
            body["writeConcern"] = self._write_concern.document
        reply = self._client.command(
            database or self._database.name,
            body,
            None,
            session=session,
            timeout_ms=self._timeout_ms if timeout_ms is None else timeout_ms,
        )
        _raise_write_concern_error(reply)
        return reply

    def _collection(self) -> Collection:
        """This object as the Collection it is part of: the reads, writes and index
        mixins only ever run inside a Collection, which cursors and bulk writes keep."""
        return cast("Collection", self)

    def _cursor_collection(self) -> Collection:
        return self._collection()
