"""TopologyVersion: the server's ``{processId, counter}`` and how two compare.

Seed: server-discovery-and-monitoring.md, "topologyVersion" (in "ServerDescription")
and "topologyVersion Comparison".
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from mongocore.core.description.hello_fields import topology_version_fields


class TopologyVersion(NamedTuple):
    """``{processId: ObjectId, counter: int64}`` from hello or a State Change Error."""

    process_id: Any
    counter: int

    @classmethod
    def parse(cls, document: Any) -> Optional[TopologyVersion]:
        if document is None:
            return None
        if isinstance(document, TopologyVersion):
            return document
        fields = topology_version_fields(document)
        return None if fields is None else cls(*fields)


def compare_topology_version(
    current: Optional[TopologyVersion], new: Optional[TopologyVersion]
) -> int:
    """-1 if ``new`` is more recent than ``current``, 0 if equal, 1 if ``current`` is newer.

    Unknown or different processIds mean "assume the response is more recent".
    """
    if current is None or new is None:
        return -1
    if current.process_id is not new.process_id and current.process_id != new.process_id:
        return -1
    try:
        if current.counter == new.counter:
            return 0
        return -1 if current.counter < new.counter else 1
    except TypeError:
        # Counters that cannot be ordered (a TopologyVersion built by hand): like an
        # unknown processId, assume the response is more recent.
        return -1
