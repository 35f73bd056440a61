"""The package's name and version, as the handshake and ``mongocore --version`` give them.

A module of its own so that ``mongocore/__init__.py`` can import it before the modules
that read these values back from the package.
"""

from __future__ import annotations

from typing import Union

__all__ = [
    "DRIVER_NAME",
    "PYMONGO_VERSION",
    "__version__",
    "get_version_string",
    "version",
    "version_tuple",
]

__version__ = "0.1.0"

DRIVER_NAME = "mongocore"

#: The pymongo API mongocore implements: what ``pymongo.version`` says under
#: :func:`mongocore.install_as_pymongo` (libraries compare it to choose code paths).
PYMONGO_VERSION = "4.20.1"

#: pymongo's names for the version, which libraries written for pymongo compare to
#: choose their code paths (MongoEngine's ``pymongo.version_tuple >= (4,)``): they give
#: the pymongo API level, so that a library ported by its import lines alone (``import
#: mongocore as pymongo``) takes the paths of the pymongo mongocore stands for, not
#: those of a pymongo 0.1. ``__version__`` and :func:`get_version_string` are
#: mongocore's own.
version = PYMONGO_VERSION

#: :data:`version` as a tuple, ``(4, 20, 1)``.
version_tuple: tuple[Union[int, str], ...] = tuple(
    int(part) if part.isdigit() else part for part in PYMONGO_VERSION.split(".")
)


def get_version_string() -> str:
    """The version, as pymongo's function of the same name gives its own."""
    return __version__
