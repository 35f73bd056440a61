"""The live topology view of ``mongocore watch``: SDAM events in, lines or a table out.

What is shown is what the server-discovery-and-monitoring spec calls the client's
view of the deployment: the TopologyDescription (its TopologyType and setName) and,
for each ServerDescription, the address, ServerType, round trip time, setName and
the error of the last failed check. The view is rebuilt from an immutable
description on every change, so rendering never races the monitors.

Two renderers: plain lines (one block per topology change, for pipes, logs and
tests) and, when the optional ``rich`` package is installed and the output is a
terminal, a live table. Nothing here imports ``rich`` at module level: the command
line works without it.
"""

from __future__ import annotations

import datetime
import importlib
import queue
import time
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional, TextIO, Union

from mongocore.core.description.server import ServerDescription
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType
from mongocore.core.events import (
    ServerClosedEvent,
    ServerDescriptionChangedEvent,
    ServerListener,
    ServerOpeningEvent,
    TopologyDescriptionChangedEvent,
    TopologyListener,
)

__all__ = [
    "EventFeed",
    "ServerRow",
    "TopologyChange",
    "change_line",
    "format_rtt",
    "load_rich",
    "plain_lines",
    "rich_table",
    "server_rows",
    "want_rich",
]


class ServerRow(NamedTuple):
    """One line of the view: a server as the client currently describes it."""

    address: str
    type: str
    rtt: str
    set_name: str
    error: str


def format_rtt(seconds: Optional[float]) -> str:
    """The round trip time in milliseconds, or ``-`` before the first successful check."""
    if seconds is None:
        return "-"
    return f"{seconds * 1000:.1f} ms"


def server_rows(description: TopologyDescription) -> list[ServerRow]:
    """The servers of ``description``, sorted by address so the view does not jump."""
    return [
        ServerRow(
            address=str(sd.address),
            type=sd.type.value,
            rtt=format_rtt(sd.round_trip_time),
            set_name=sd.set_name or "",
            error=sd.error or "",
        )
        for sd in sorted(description.servers.values(), key=_address_key)
    ]


def _address_key(sd: ServerDescription) -> tuple[str, int]:
    return (sd.address.host, sd.address.port or 0)


def _heading(description: TopologyDescription) -> str:
    heading = f"topology {description.type.value}"
    if description.set_name:
        heading += f" setName={description.set_name}"
    if description.compatibility_error:
        heading += f" incompatible: {description.compatibility_error}"
    return heading


def _timestamp(when: Optional[datetime.datetime]) -> str:
    if when is None:
        return ""
    return when.strftime("%H:%M:%S.") + f"{when.microsecond // 1000:03d} "


def plain_lines(
    description: TopologyDescription, *, when: Optional[datetime.datetime] = None
) -> list[str]:
    """The view as plain text: a heading, then one aligned line per server."""
    lines = [_timestamp(when) + _heading(description)]
    rows = server_rows(description)
    if not rows:
        lines.append("  (no servers)")
        return lines
    width = max(len(r.address) for r in rows)
    type_width = max(len(r.type) for r in rows)
    for row in rows:
        parts = [f"  {row.address:<{width}}  {row.type:<{type_width}}  rtt {row.rtt}"]
        if row.set_name:
            parts.append(f"setName {row.set_name}")
        if row.error:
            parts.append(f"error: {row.error}")
        lines.append("  ".join(parts))
    return lines


def change_line(event: TopologyChange) -> Optional[str]:
    """One line saying what a server event changed; None for events not worth a line."""
    if isinstance(event, ServerOpeningEvent):
        return f"+ {event.address} added to the topology"
    if isinstance(event, ServerClosedEvent):
        return f"- {event.address} removed from the topology"
    if isinstance(event, ServerDescriptionChangedEvent):
        old, new = event.previous_description, event.new_description
        line = f"~ {event.address} {old.type.value} -> {new.type.value}"
        if new.error:
            line += f" ({new.error})"
        elif old.type is new.type and old.type is not ServerType.UNKNOWN:
            line += " (hello changed)"
        return line
    return None


# --- collecting SDAM events -------------------------------------------------------------

TopologyChange = Union[
    TopologyDescriptionChangedEvent,
    ServerDescriptionChangedEvent,
    ServerOpeningEvent,
    ServerClosedEvent,
]


#: The longest the thread that handles signals blocks at a time. The OS may deliver
#: SIGINT or SIGTERM to any thread, and Python runs the handler in the main thread
#: only once that thread runs Python code again: a wait without a timeout there
#: could miss a Ctrl-C for as long as nothing else wakes it.
SIGNAL_LATENCY = 0.2


class _Stop:
    """Put into an EventFeed's inbox to end the watch loop."""


class _TopologyFeed(TopologyListener):
    def __init__(self, inbox: queue.SimpleQueue[Any]) -> None:
        self._inbox = inbox

    def description_changed(self, event: TopologyDescriptionChangedEvent) -> None:
        self._inbox.put(event)


class _ServerFeed(ServerListener):
    def __init__(self, inbox: queue.SimpleQueue[Any]) -> None:
        self._inbox = inbox

    def opened(self, event: ServerOpeningEvent) -> None:
        self._inbox.put(event)

    def description_changed(self, event: ServerDescriptionChangedEvent) -> None:
        self._inbox.put(event)

    def closed(self, event: ServerClosedEvent) -> None:
        self._inbox.put(event)


class EventFeed:
    """SDAM events from the monitor threads, handed to the one thread that renders.

    Listeners run on monitor threads; printing there would interleave output and make
    a slow terminal slow the monitors down. ``queue.SimpleQueue.put`` is reentrant, so
    a signal handler may ``stop()`` the feed at any moment.
    """

    def __init__(self) -> None:
        self._inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.listeners = (_TopologyFeed(self._inbox), _ServerFeed(self._inbox))

    def stop(self) -> None:
        self._inbox.put(_Stop())

    def next_event(self, deadline: Optional[float]) -> Optional[TopologyChange]:
        """The next event; None once stopped, or when ``deadline`` (monotonic) has passed.

        Events that arrived before the deadline are still handed out after it, so a
        watch of no duration shows what the client knew when it started.
        """
        while True:
            timeout = SIGNAL_LATENCY
            if deadline is not None:
                timeout = min(timeout, max(0.0, deadline - time.monotonic()))
            try:
                item: Union[TopologyChange, _Stop] = self._inbox.get(
                    block=timeout != 0.0, timeout=timeout
                )
            except queue.Empty:
                if timeout == 0.0:
                    return None
                continue  # the deadline is checked again above
            if isinstance(item, _Stop):
                return None
            return item


# --- rich -------------------------------------------------------------------------------


class RichModules(NamedTuple):
    console: Any
    live: Any
    table: Any
    text: Any
    group: Any


def load_rich() -> Optional[RichModules]:
    """The parts of ``rich`` the live view uses, or None when it is not installed."""
    try:
        return RichModules(
            console=importlib.import_module("rich.console"),
            live=importlib.import_module("rich.live"),
            table=importlib.import_module("rich.table"),
            text=importlib.import_module("rich.text"),
            group=importlib.import_module("rich.console").Group,
        )
    except ImportError:
        return None


_TYPE_STYLES = {
    ServerType.RS_PRIMARY: "bold green",
    ServerType.RS_SECONDARY: "cyan",
    ServerType.MONGOS: "green",
    ServerType.STANDALONE: "green",
    ServerType.LOAD_BALANCER: "green",
    ServerType.UNKNOWN: "red",
    ServerType.RS_GHOST: "yellow",
    ServerType.RS_OTHER: "yellow",
    ServerType.POSSIBLE_PRIMARY: "yellow",
}


def rich_table(
    rich: RichModules, description: TopologyDescription, changes: Sequence[str] = ()
) -> Any:
    """A rich renderable: the servers table, then the most recent changes."""
    table = rich.table.Table(title=_heading(description), title_justify="left", expand=False)
    for name in ("address", "type", "RTT", "setName", "error"):
        table.add_column(name, justify="right" if name == "RTT" else "left")
    for sd in sorted(description.servers.values(), key=_address_key):
        style = _TYPE_STYLES.get(sd.type, "")
        table.add_row(
            str(sd.address),
            rich.text.Text(sd.type.value, style=style),
            format_rtt(sd.round_trip_time),
            sd.set_name or "",
            rich.text.Text(sd.error or "", style="red"),
        )
    if not changes:
        return table
    recent = rich.text.Text("\n".join(changes), style="dim")
    return rich.group(table, recent)


def want_rich(out: TextIO, plain: bool) -> Optional[RichModules]:
    """rich, if it should be used for ``out``: a terminal, rich installed, not ``--plain``."""
    if plain:
        return None
    isatty = getattr(out, "isatty", None)
    if isatty is None or not isatty():
        return None
    return load_rich()
