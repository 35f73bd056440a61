"""Unknown option names: the warning they raise and the nearest valid name.

The Connection String spec ("Keys") says a key a driver does not support MUST be
ignored and MUST be reported with a WARN level message. A misspelt key
(``retryWrite`` for ``retryWrites``) is the common case, and ignoring it changes
behaviour without a sound, so mongocore reports it loudly: on the ``mongocore.core.uri``
logger and as an :class:`UnknownOptionWarning` through Python's :mod:`warnings`
module, naming the nearest valid option. Keyword arguments are code, not a portable
connection string: there an unknown name is an error (see
:meth:`mongocore.core.options.ClientOptions.from_uri`), with the same suggestion.
"""

from __future__ import annotations

import os
import sys
import types
import warnings
from collections.abc import Mapping
from typing import Callable, Optional

__all__ = [
    "NOT_SUPPORTED",
    "UnknownOptionWarning",
    "nearest_name",
    "warn_unknown_option",
]

# A typo keeps most of a name: "retryWrite" scores 0.95 against "retryWrites",
# "replset" 0.82 against "replicaSet". Below this, a suggestion is more likely to
# mislead than to help ("safe" would suggest "tlsCAFile").
_CUTOFF = 0.7
# Two letters swapped or one replaced in a short name of the same length ("tsl" for
# "tls") scores only 0.67: for names of equal length a lower score is a typo still.
_SAME_LENGTH_CUTOFF = 0.6

#: Names of options other drivers or older specs define that mongocore knowingly
#: leaves out, with why: for these the warning (or error) says so instead of
#: suggesting a name that merely looks alike.
NOT_SUPPORTED: Mapping[str, str] = types.MappingProxyType(
    {
        "connect": (
            "a client always starts monitoring when it is created; MongoClient "
            "accepts connect only for compatibility"
        ),
        "serverselectiontryonce": (
            "only single-threaded drivers may offer it, and mongocore is multi-threaded"
        ),
        "tlscrlfile": "mongocore does not check certificate revocation lists",
        "waitqueuesize": "the connection pooling spec removed it; use waitQueueTimeoutMS",
        "waitqueuemultiple": "the connection pooling spec removed it; use waitQueueTimeoutMS",
    }
)


class UnknownOptionWarning(UserWarning):
    """A connection string names an option mongocore does not know; it was ignored.

    A subclass of :class:`UserWarning`, so Python's default filters show it. Make it
    an error with ``warnings.simplefilter("error", UnknownOptionWarning)`` (or the
    pytest setting ``filterwarnings = ["error::mongocore.core.uri.UnknownOptionWarning"]``).
    """


def nearest_name(
    key: str,
    names: Mapping[str, str],
    *,
    normalize: Callable[[str], str],
) -> Optional[str]:
    """The suggestion for ``key``: the value of the entry of ``names`` whose key is
    nearest to ``key`` once both are normalized, or None when none is close.

    ``names`` maps every accepted spelling (canonical names and aliases) to the name
    to suggest for it, so a typo of an alias finds the alias's suggestion.
    """
    import difflib  # noqa: PLC0415 - only a mistyped name needs it

    by_normalized: dict[str, str] = {}
    for name, suggestion in names.items():
        by_normalized.setdefault(normalize(name), suggestion)
    wanted = normalize(key)
    matches = difflib.get_close_matches(wanted, list(by_normalized), n=1, cutoff=_CUTOFF)
    if not matches:
        same_length = [name for name in by_normalized if len(name) == len(wanted)]
        matches = difflib.get_close_matches(wanted, same_length, n=1, cutoff=_SAME_LENGTH_CUTOFF)
    return by_normalized[matches[0]] if matches else None


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _first_frame_outside_package() -> int:
    """The ``stacklevel`` that points a warning at the application's line (the
    ``Client(...)`` or ``parse_uri(...)`` call), not at mongocore's internals."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        next_frame = frame.f_back
        if next_frame is None:
            break
        frame = next_frame
        level += 1
    return level


def warn_unknown_option(message: str) -> None:
    """Issue ``message`` as an :class:`UnknownOptionWarning` at the caller's line."""
    warnings.warn(message, UnknownOptionWarning, stacklevel=_first_frame_outside_package())
