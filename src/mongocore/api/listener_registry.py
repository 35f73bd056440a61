"""The listeners of every client created from now on: pymongo's ``monitoring.register()``.

A process-wide registry is application state, so it lives here, with the clients that
read it when they are created, and not in the pure core (whose event types and
``EventPublisher`` know nothing of it). :mod:`mongocore.monitoring` exports
:func:`register` under pymongo's module name.
"""

from __future__ import annotations

from mongocore.core.events import Listener, check_listeners

__all__ = ["register", "registered_listeners"]

#: The listeners of every client created from now on (register()).
_REGISTERED: list[Listener] = []


def register(listener: Listener) -> None:
    """Give ``listener`` to every client created from now on, before the client's own
    ``event_listeners`` (pymongo's ``monitoring.register``). Clients that exist
    already are not changed; there is no way to take it back, as in pymongo."""
    check_listeners([listener])
    _REGISTERED.append(listener)


def registered_listeners() -> tuple[Listener, ...]:
    """The listeners register() gave, in order."""
    return tuple(_REGISTERED)
