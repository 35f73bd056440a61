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

#: pymongo's spelling of the version string.
version = __version__

#: The version as a tuple, ``(0, 1, 0)``; a pre-release part stays a string.
version_tuple: tuple[Union[int, str], ...] = tuple(
    int(part) if part.isdigit() else part for part in __version__.split(".")
)


#: The pymongo API mongocore implements: what ``pymongo.version`` says under
#: :func:`mongocore.install_as_pymongo` (libraries compare it to choose code paths).
PYMONGO_VERSION = "4.20.1"


def get_version_string() -> str:
    """The version, as pymongo's function of the same name gives its own."""
    return __version__
