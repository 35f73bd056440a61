"""Collection search index management: create, update, list and drop Atlas Search (and
Vector Search) indexes, with pymongo's methods and SearchIndexModel.

Spec: Index Management, "Search Index Management Helpers". The helpers send
createSearchIndexes, updateSearchIndex, dropSearchIndex and an aggregate with
``$listSearchIndexes``, to the primary, with neither the collection's read concern
nor its write concern (the spec: search index commands take none). None is retried. A
server that does not host Atlas Search (a community mongod, the simulator) refuses
them (SearchNotEnabled, 31082), which is raised as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from mongocore.api.client_session import ClientSession
from mongocore.api.collection_base import CollectionBase
from mongocore.api.command_cursor import CommandCursor
from mongocore.api.types import Document
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import OperationFailure
from mongocore.read_concern import ReadConcern

__all__ = ["CollectionSearchIndexes", "SearchIndexModel"]

#: dropSearchIndex and updateSearchIndex on a collection that does not exist: as
#: pymongo, no error ("ns not found", NamespaceNotFound).
_NAMESPACE_NOT_FOUND = 26


class SearchIndexModel:
    """A search index to create: its ``definition``, an optional ``name`` and ``type``
    ("search", the server's default, or "vectorSearch"), and any other field of the
    index's document (pymongo's ``pymongo.operations.SearchIndexModel``)."""

    __slots__ = ("_document",)

    def __init__(
        self,
        definition: Mapping[str, Any],
        name: Optional[str] = None,
        type: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        document: Document = {}
        if name is not None:
            document["name"] = name
        document["definition"] = definition
        if type is not None:
            document["type"] = type
        document.update(kwargs)
        self._document = document

    @property
    def document(self) -> Mapping[str, Any]:
        """The index's document, as createSearchIndexes takes it."""
        return self._document

    def __repr__(self) -> str:
        fields = ", ".join(f"{key}={value!r}" for key, value in self._document.items())
        return f"SearchIndexModel({fields})"


class CollectionSearchIndexes(CollectionBase):
    def create_search_index(
        self,
        model: Union[Mapping[str, Any], SearchIndexModel],
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> str:
        """Create one search index; returns its name. ``model`` is a SearchIndexModel or
        a mapping of its arguments (``definition``, ``name``, ``type``). ``kwargs`` are
        fields of the createSearchIndexes command."""
        if not isinstance(model, SearchIndexModel):
            model = SearchIndexModel(**dict(model))
        return self.create_search_indexes([model], session, comment, **kwargs)[0]

    def create_search_indexes(
        self,
        models: Sequence[SearchIndexModel],
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> list[str]:
        """Create search indexes in one createSearchIndexes command; returns their names."""
        indexes: list[Mapping[str, Any]] = []
        for model in models:
            if not isinstance(model, SearchIndexModel):
                raise TypeError(f"{model!r} is not an instance of SearchIndexModel")
            indexes.append(model.document)
        body: Document = {"createSearchIndexes": self._name, "indexes": indexes, **kwargs}
        reply = self._search_command(body, session, comment)
        return [str(index["name"]) for index in reply.get("indexesCreated") or []]

    def update_search_index(
        self,
        name: str,
        definition: Mapping[str, Any],
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> None:
        """Replace a search index's definition (updateSearchIndex)."""
        body: Document = {
            "updateSearchIndex": self._name,
            "name": name,
            "definition": definition,
            **kwargs,
        }
        self._search_command(body, session, comment, missing_is_ok=True)

    def drop_search_index(
        self,
        name: str,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> None:
        """Drop a search index by name (dropSearchIndex)."""
        body: Document = {"dropSearchIndex": self._name, "name": name, **kwargs}
        self._search_command(body, session, comment, missing_is_ok=True)

    def list_search_indexes(
        self,
        name: Optional[str] = None,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        **kwargs: Any,
    ) -> CommandCursor:
        """A cursor over the collection's search indexes (``$listSearchIndexes``), or
        the one named ``name``. ``kwargs`` are aggregate options (``batchSize``, ...)."""
        stage: Document = {} if name is None else {"name": name}
        options = dict(kwargs)
        batch_size = options.pop("batchSize", options.pop("batch_size", None))
        if comment is not None:
            options["comment"] = comment
        # The primary, and no read concern: the collection's is not sent.
        plain = self._collection().with_options(read_concern=ReadConcern())
        return plain.aggregate(
            [{"$listSearchIndexes": stage}],
            session,
            batch_size=batch_size,
            read_preference=ReadPreference(Mode.PRIMARY),
            **options,
        )

    def _search_command(
        self,
        body: Document,
        session: Optional[ClientSession],
        comment: Any,
        *,
        missing_is_ok: bool = False,
    ) -> Document:
        """A search index command on the primary, without a write concern."""
        if comment is not None:
            body["comment"] = comment
        try:
            # The generic command path: no write concern is added.
            return self._client.command(
                self._database.name,
                body,
                ReadPreference(Mode.PRIMARY),
                session=session,
                timeout_ms=self._timeout_ms,
            )
        except OperationFailure as exc:
            if missing_is_ok and exc.code == _NAMESPACE_NOT_FOUND:
                return {"ok": 1.0}
            raise
