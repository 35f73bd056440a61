"""ReadConcern, under pymongo's module name (``pymongo.read_concern``)."""

from __future__ import annotations

from typing import Optional

from mongocore.api.types import Document
from mongocore.errors import (
    ConfigurationError,
)

__all__ = ["DEFAULT_READ_CONCERN", "ReadConcern"]


class ReadConcern:
    """A read concern level ("local", "majority", ...); None is the server's default."""

    __slots__ = ("level",)

    def __init__(self, level: Optional[str] = None) -> None:
        if level is not None and not isinstance(level, str):
            raise ConfigurationError(f"the read concern level must be a string, not {level!r}")
        self.level = level

    @property
    def ok_for_legacy(self) -> bool:
        """Whether a server too old for read concerns would read the same: only the
        default and "local" (pymongo's attribute)."""
        return self.level is None or self.level == "local"

    @property
    def document(self) -> Document:
        return {} if self.level is None else {"level": self.level}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReadConcern) and other.level == self.level

    def __hash__(self) -> int:
        return hash(self.level)

    def __repr__(self) -> str:
        return f"ReadConcern({self.level!r})"


#: The server's default read concern (nothing sent).
DEFAULT_READ_CONCERN = ReadConcern()
