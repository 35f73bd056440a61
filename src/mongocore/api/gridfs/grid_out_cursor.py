"""GridOutCursor: a find on the files collection whose results are GridOut files
(GridFS spec, "Generic Find on Files Collection": the filter is not checked, the find
options go to the find command).

It is a :class:`~mongocore.api.cursor.Cursor` of the files collection, with its
modifiers (``sort``, ``skip``, ``limit``, ``batch_size``, ``max_time_ms``,
``allow_disk_use``, ...); iterating it gives a :class:`GridOut` for each files
document, on the same session.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NoReturn, Optional

from mongocore.api.client_session import ClientSession
from mongocore.api.collection import Collection
from mongocore.api.cursor import Cursor
from mongocore.api.gridfs.file_model import check_no_transaction, without_type_registry
from mongocore.api.gridfs.grid_out import GridOut
from mongocore.api.types import SortSpec


class GridOutCursor(Cursor):
    """A cursor over the stored files a query matches, as GridOut objects. Made by
    :meth:`GridFSBucket.find <mongocore.api.gridfs.bucket.GridFSBucket.find>` and
    :meth:`GridFS.find <mongocore.api.gridfs.grid_fs.GridFS.find>`."""

    def __init__(  # noqa: PLR0917 - positional as pymongo's
        self,
        collection: Collection,
        filter: Optional[Mapping[str, Any]] = None,
        skip: int = 0,
        limit: int = 0,
        no_cursor_timeout: bool = False,
        sort: SortSpec = None,
        batch_size: int = 0,
        session: Optional[ClientSession] = None,
        *,
        timeout_ms: Optional[float] = None,
    ) -> None:
        check_no_transaction(session)
        root = without_type_registry(collection)
        #: The bucket's root collection, which the GridOut objects read from.
        self._root = root
        super().__init__(
            root.files,
            filter,
            skip=skip,
            limit=limit,
            no_cursor_timeout=no_cursor_timeout,
            sort=sort,
            batch_size=batch_size,
            session=session,
            timeout_ms=timeout_ms,
        )

    def _grid_out(self, document: Mapping[str, Any]) -> GridOut:
        check_no_transaction(self.session)
        return GridOut(self._root, file_document=document, session=self.session)

    def __iter__(self) -> Iterator[GridOut]:  # type: ignore[override]
        return (self._grid_out(document) for document in super().__iter__())

    def __next__(self) -> GridOut:  # type: ignore[override]
        return self._grid_out(super().__next__())

    def next(self) -> GridOut:  # type: ignore[override]
        """The next stored file."""
        return self.__next__()

    def try_next(self) -> Optional[GridOut]:  # type: ignore[override]
        document = super().try_next()
        return None if document is None else self._grid_out(document)

    def to_list(self, length: Optional[int] = None) -> list[GridOut]:  # type: ignore[override]
        """The remaining stored files (at most ``length`` of them)."""
        if length is not None and length < 1:
            raise ValueError("to_list() length must be greater than 0")
        return [self._grid_out(document) for document in super().to_list(length)]

    def _clone_base(self) -> GridOutCursor:
        # clone() copies the query into a cursor of the same root collection.
        return GridOutCursor(self._root, session=self._given_session, timeout_ms=self._timeout_ms)

    def clone(self) -> GridOutCursor:
        """A new, unstarted cursor with this one's query and options."""
        twin = super().clone()
        assert isinstance(twin, GridOutCursor)
        return twin

    def __enter__(self) -> GridOutCursor:
        return self

    def add_option(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError("Method does not exist for GridOutCursor")

    def remove_option(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotImplementedError("Method does not exist for GridOutCursor")
