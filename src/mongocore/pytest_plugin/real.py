"""A real deployment the fixtures are pointed at (``--mongodb-uri``): what it is, and
what was in it before the tests ran.

Each look at it is a mongocore client of its own, closed at once (every thread
joined): a client kept for the session would start monitor threads whenever it
discovers a server, inside the window of a test's thread-leak check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any, Optional
from urllib.parse import urlsplit

from mongocore.pytest_plugin.reset import Commands, DataBaseline, drop_data

__all__ = ["Real", "redacted"]

#: How long the session's client looks for the deployment before the plugin gives up.
SELECTION_TIMEOUT_MS = 20_000


def redacted(uri: str) -> str:
    """``uri`` without its password, for messages."""
    parts = urlsplit(uri)
    if parts.password is None:
        return uri
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


class _ClientCommands:
    def __init__(self, client: Any) -> None:
        self._client = client

    def command(self, db: str, cmd: dict[str, Any]) -> dict[str, Any]:
        return self._client[db].command(cmd)  # type: ignore[no-any-return]


class Real:
    """The deployment at ``uri``: ``connect()`` finds its kind and what is in it."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.kind = ""
        self._baseline: Optional[DataBaseline] = None

    @contextlib.contextmanager
    def _client(self) -> Iterator[Any]:
        from mongocore.mongo_client import MongoClient  # noqa: PLC0415 - loads with a deployment

        client = MongoClient(
            self.uri,
            serverSelectionTimeoutMS=SELECTION_TIMEOUT_MS,
            serverMonitoringMode="poll",  # no streaming: no RTT thread to wait for
        )
        try:
            yield client
        finally:
            client.close()

    def connect(self) -> Real:
        """Find the deployment's kind and what is in it, once."""
        if self._baseline is not None:
            return self
        with self._client() as client:
            hello = client.admin.command("hello")
            if client.options.load_balanced:
                self.kind = "load_balanced"
            elif hello.get("msg") == "isdbgrid":
                self.kind = "sharded_cluster"
            elif hello.get("setName"):
                self.kind = "replica_set"
            else:
                self.kind = "standalone"
            self._baseline = DataBaseline.of(_ClientCommands(client), users=True)
        return self

    @contextlib.contextmanager
    def commands(self) -> Iterator[Commands]:
        with self._client() as client:
            yield _ClientCommands(client)

    def drop_data(self) -> list[str]:
        """Drop what the tests made since ``connect()`` (reset.py)."""
        baseline = self.connect()._baseline
        assert baseline is not None
        with self.commands() as commands:
            with contextlib.suppress(Exception):
                # A real server knows fail points only with test commands enabled.
                commands.command("admin", {"configureFailPoint": "failCommand", "mode": "off"})
            return drop_data(commands, baseline)
