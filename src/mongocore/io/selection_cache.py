"""What server selection keeps of the current TopologyDescription between selections.

Seed: server-selection.rst 1.5, "Multi-threaded or asynchronous server selection", as
the architecture guide reads it ("precompute what every selection needs once per
description"). Between two heartbeats every operation selects on the same immutable
description, so the shell keeps, for that description only, the pure core's
:class:`~mongocore.core.selection.selectors.SelectionFacts` and the latency window
of each read preference it has been asked for. The description itself stays
immutable: nothing is written onto it, and a new description starts a new cache.

Threads share a cache without a lock: every entry is a pure function of the
description and the read preference, so two threads that compute one at once store
equal values, and a dictionary's get and set are atomic.
"""

from __future__ import annotations

from typing import Optional

from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.selection.selectors import SelectionFacts, latency_window

__all__ = ["MAX_CACHED_WINDOWS", "SelectionCache"]

#: Beyond this many entries (distinct read preferences) a cache stops keeping latency
#: windows, so an application that builds endless read preferences cannot grow it
#: without bound.
MAX_CACHED_WINDOWS = 64

_MODE_PRIMARY = Mode.PRIMARY


class SelectionCache:
    """The facts and latency windows of one description."""

    __slots__ = ("description", "facts", "windows")

    def __init__(self, description: TopologyDescription) -> None:
        self.description = description
        self.facts = SelectionFacts(description)
        #: read preference (None for writes and mode primary) -> its latency window.
        self.windows: dict[Optional[ReadPreference], tuple[ServerDescription, ...]] = {}

    def window(self, read_preference: Optional[ReadPreference]) -> tuple[ServerDescription, ...]:
        """The latency window for ``read_preference`` (None: a write), computed once.

        Raises what :func:`~mongocore.core.selection.selectors.latency_window` raises
        (an incompatible description, an unusable maxStalenessSeconds), every time.
        """
        # Mode primary selects what a write selects (it takes no tags and no
        # maxStalenessSeconds): both share the entry under None, found without
        # ReadPreference.__hash__, a Python call on every read.
        key = (
            None
            if read_preference is None or read_preference.mode is _MODE_PRIMARY
            else read_preference
        )
        windows = self.windows
        window = windows.get(key)
        if window is None:
            window = latency_window(self.facts, read_preference)
            if len(windows) < MAX_CACHED_WINDOWS:
                windows[key] = window
        return window
