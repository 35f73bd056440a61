"""Collection index management: create, list and drop indexes.

Spec: Index Management.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from mongocore.api.arguments import _index_keys, _index_name, _options
from mongocore.api.client_session import ClientSession
from mongocore.api.collection_base import CollectionBase
from mongocore.api.command_cursor import CommandCursor, _cursor_options
from mongocore.api.cursor_options import IndexSpec
from mongocore.api.index_model import IndexModel
from mongocore.api.types import Document
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.io.operation import AttemptContext, Command


class CollectionIndexes(CollectionBase):
    def list_indexes(
        self,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        batch_size: Optional[int] = None,
        timeout_ms: Optional[float] = None,
    ) -> CommandCursor:
        """The collection's indexes (listIndexes; a retryable read). A collection that
        does not exist has none.

        A "should-use-primary" helper (server selection, "Use of read preferences with
        commands"): it reads from the primary and takes no read preference."""

        def build(ctx: AttemptContext) -> Command:
            body: Document = {"listIndexes": self._name, "cursor": _cursor_options(batch_size)}
            body.update(_options(comment=comment))
            return Command(body)

        return self._database._cursor_command(
            "listIndexes",
            build,
            session,
            read_preference=ReadPreference(Mode.PRIMARY),
            timeout_ms=self._timeout_ms if timeout_ms is None else timeout_ms,
            batch_size=batch_size,
            read_concern=False,
            empty_on_missing=True,
        )

    def list_index_names(self, session: Optional[ClientSession] = None, **kwargs: Any) -> list[str]:
        with self.list_indexes(session, **kwargs) as cursor:
            return [str(index["name"]) for index in cursor]

    def index_information(
        self, session: Optional[ClientSession] = None, comment: Any = None
    ) -> dict[str, Document]:
        """Index name -> its description (``key`` as a list of (field, direction))."""
        info: dict[str, Document] = {}
        with self.list_indexes(session, comment=comment) as cursor:
            for index in cursor:
                entry = dict(index)
                name = str(entry.pop("name"))
                entry["key"] = list(dict(entry["key"]).items())
                info[name] = entry
        return info

    def create_index(
        self,
        keys: IndexSpec,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> str:
        """Create an index (createIndexes, never retried); returns its name.

        ``kwargs`` are the index's options as the server spells them (``name``,
        ``unique``, ``sparse``, ``expireAfterSeconds``, ``partialFilterExpression``,
        ...), except ``maxTimeMS`` and ``commitQuorum``, which go to the command."""
        command_options: Document = {
            k: kwargs.pop(k) for k in ("maxTimeMS", "commitQuorum") if k in kwargs
        }
        index = IndexModel(keys, **kwargs).document
        return self._create_indexes([index], session, comment, command_options, timeout_ms)[0]

    def create_indexes(
        self,
        indexes: Sequence[Any],
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> list[str]:
        """Create several indexes in one createIndexes command; returns their names.

        ``indexes`` are IndexModel objects (anything with a ``document`` mapping: the
        index's ``key``, ``name`` and options). ``kwargs`` are command fields
        (``maxTimeMS``, ``commitQuorum``)."""
        documents: list[Document] = []
        for model in indexes:
            document = getattr(model, "document", None)
            if not isinstance(document, Mapping):
                raise TypeError(f"{model!r} is not an IndexModel")
            entry = dict(document)
            entry.setdefault("name", _index_name(dict(entry["key"])))
            documents.append(entry)
        return self._create_indexes(documents, session, comment, kwargs, timeout_ms)

    def _create_indexes(
        self,
        documents: list[Document],
        session: Optional[ClientSession],
        comment: Any,
        options: Mapping[str, Any],
        timeout_ms: Optional[float] = None,
    ) -> list[str]:
        body: Document = {"createIndexes": self._name, "indexes": documents, **options}
        self._admin_command(body, session, comment, timeout_ms=timeout_ms)
        return [str(document["name"]) for document in documents]

    def drop_index(
        self,
        index_or_name: IndexSpec,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> None:
        """Drop one index, by name or by its keys (``"*"`` drops all but ``_id``'s)."""
        if isinstance(index_or_name, str):
            name = index_or_name
        else:
            name = _index_name(_index_keys(index_or_name))
        body: Document = {"dropIndexes": self._name, "index": name, **kwargs}
        self._admin_command(body, session, comment, timeout_ms=timeout_ms)

    def drop_indexes(
        self,
        session: Optional[ClientSession] = None,
        comment: Any = None,
        *,
        timeout_ms: Optional[float] = None,
        **kwargs: Any,
    ) -> None:
        """Drop every index but the one on ``_id``."""
        self.drop_index("*", session, comment, timeout_ms=timeout_ms, **kwargs)
