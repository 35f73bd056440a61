"""WriteConcern, under pymongo's module name (``pymongo.write_concern``)."""

from __future__ import annotations

from typing import Any, Optional, Union

from mongocore.api.types import Document
from mongocore.core.retry_policy import is_acknowledged
from mongocore.errors import (
    ConfigurationError,
)

__all__ = ["DEFAULT_WRITE_CONCERN", "WriteConcern", "validate_boolean"]


def validate_boolean(option: str, value: Any) -> bool:
    """``value`` if it is True or False, else TypeError (pymongo's validator, which
    libraries call on their own options)."""
    if not isinstance(value, bool):
        raise TypeError(f"{option} must be True or False, was: {option}={value!r}")
    return value


class WriteConcern:
    """A write concern: ``w`` (a number or a tag such as "majority"), ``wtimeout`` (ms),
    ``j`` (journal). With nothing set it is the server's default and not sent."""

    __slots__ = ("_acknowledged", "_document")

    def __init__(
        self,
        w: Union[int, str, None] = None,
        wtimeout: Optional[int] = None,
        j: Optional[bool] = None,
    ) -> None:
        if isinstance(w, bool) or (w is not None and not isinstance(w, (int, str))):
            raise ConfigurationError(f"w must be a number or a string, not {w!r}")
        if isinstance(w, int) and w < 0:
            raise ConfigurationError(f"w must be non-negative, not {w}")
        if w == 0 and j:
            raise ConfigurationError("w=0 cannot be combined with j=True")
        if wtimeout is not None and wtimeout < 0:
            raise ConfigurationError(f"wtimeout must be non-negative, not {wtimeout}")
        document: Document = {}
        if w is not None:
            document["w"] = w
        if wtimeout is not None:
            document["wtimeout"] = int(wtimeout)
        if j is not None:
            document["j"] = bool(j)
        self._document = document
        self._acknowledged = is_acknowledged(document)  # asked by every write

    @classmethod
    def from_options(
        cls, w: Union[int, str, None], wtimeout_ms: Optional[int], journal: Optional[bool]
    ) -> WriteConcern:
        return cls(w, wtimeout_ms, journal)

    @property
    def document(self) -> Document:
        """The ``writeConcern`` document to send (a copy; empty: the server's default)."""
        return dict(self._document)

    @property
    def acknowledged(self) -> bool:
        return self._acknowledged

    @property
    def is_server_default(self) -> bool:
        return not self._document

    def __eq__(self, other: object) -> bool:
        return isinstance(other, WriteConcern) and other._document == self._document

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._document.items())))

    def __repr__(self) -> str:
        return "WriteConcern(" + ", ".join(f"{k}={v!r}" for k, v in self._document.items()) + ")"


#: The server's default write concern (nothing sent).
DEFAULT_WRITE_CONCERN = WriteConcern()
