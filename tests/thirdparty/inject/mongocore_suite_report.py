"""A pytest plugin (``-p mongocore_suite_report``) that writes how each test of a
third-party suite went, and for a test that fails, what it asked of the server: each
command it sent (its name, its top-level fields, the ``$`` operators and the BSON value
types anywhere in it) and each error the server answered (command errors, write
errors, write concern errors).

tests/thirdparty/harness.py loads it into the suite's pytest and names the file to
write with ``MONGOCORE_SUITE_REPORT``: one JSON object a line, with ``test`` (the pytest
node id), ``outcome`` (passed, failed, skipped, xfailed, xpassed; error: a module that
could not be collected), ``message`` (the
exception's line), ``text`` (the whole report of a failure or the reason of a skip),
``sent`` and ``failed``. The rules of specs/thirdparty/*.toml match a failure by these
facts (the server's error code, the command, an operator, the failure's text) rather
than by test ids. The command listener is registered through ``pymongo.monitoring``,
which under ``install_as_pymongo()`` is mongocore's: ``mongocore_as_pymongo`` is named
first on the command line, so it has run before this module imports pymongo. In an
import-only port (``MONGOCORE_SUITE_DRIVER=port``) it is ``mongocore.monitoring``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

_HELLO = {"hello", "ismaster", "isMaster", "saslStart", "saslContinue", "endSessions"}


def _walk(value: Any, operators: set[str], types: set[str], depth: int = 0) -> None:
    if depth > 40:
        return
    if isinstance(value, dict) or (hasattr(value, "items") and hasattr(value, "keys")):
        for key, item in value.items():
            # An operator, or a path through one: "a.$.b" (positional), "ref._ref.$id".
            for part in str(key).split("."):
                if part.startswith("$"):
                    operators.add(part)
            _walk(item, operators, types, depth + 1)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _walk(item, operators, types, depth + 1)
    elif value is not None and not isinstance(value, (str, bool, int, float, bytes)):
        types.add(type(value).__name__)
    elif isinstance(value, float):
        types.add("float")


def _describe(name: str, command: Any) -> dict[str, Any]:
    operators: set[str] = set()
    types: set[str] = set()
    body = {k: v for k, v in command.items() if k not in ("lsid", "$clusterTime", "$db")}
    _walk(body, operators, types)
    fields = {str(k) for k in body}
    if name == "createIndexes":  # the options an index was created with
        for index in body.get("indexes") or ():
            fields.update(f"indexes.{k}" for k in index if k != "key")
            fields.update(f"indexes.key.{k}" for k in index.get("key") or ())
    return {
        "command": name,
        "fields": sorted(fields),
        "operators": sorted(operators),
        "types": sorted(types),
    }


class _Recorder:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.failed: list[dict[str, Any]] = []
        self._by_request: dict[Any, dict[str, Any]] = {}

    def reset(self) -> None:
        self.sent, self.failed, self._by_request = [], [], {}

    # -- pymongo.monitoring.CommandListener -----------------------------------------

    def started(self, event: Any) -> None:
        if event.command_name in _HELLO:
            return
        entry = _describe(event.command_name, event.command)
        if entry not in self.sent:  # a loop of inserts is one entry
            self.sent.append(entry)
        self._by_request[(event.request_id, event.connection_id)] = entry

    def _error(self, event: Any, error: Any, kind: str) -> None:
        entry = self._by_request.get((event.request_id, event.connection_id), {})
        self.failed.append(
            {
                **entry,
                "command": event.command_name,
                "kind": kind,
                "code": error.get("code"),
                "codeName": error.get("codeName"),
                "errmsg": str(error.get("errmsg", ""))[:500],
            }
        )

    def succeeded(self, event: Any) -> None:
        reply = event.reply or {}
        for error in reply.get("writeErrors") or ():
            self._error(event, error, "writeError")
        if reply.get("writeConcernError"):
            self._error(event, reply["writeConcernError"], "writeConcernError")

    def failed_event(self, event: Any) -> None:
        failure = event.failure
        if not isinstance(failure, dict):
            # mongocore's event carries the exception; pymongo's, the server's document.
            details = getattr(failure, "details", None)
            failure = dict(details) if isinstance(details, dict) else {}
            failure.setdefault("code", getattr(event.failure, "code", None))
            failure.setdefault("errmsg", str(event.failure))
        self._error(event, failure, "commandError")


_RECORDER = _Recorder()
_REPORTS: dict[str, list[pytest.TestReport]] = {}


def pytest_configure(config: pytest.Config) -> None:
    # Not at the top: under install_as_pymongo, mongocore_as_pymongo must have run first.
    if os.environ.get("MONGOCORE_SUITE_DRIVER") == "port":
        from mongocore import monitoring  # noqa: PLC0415
    else:
        from pymongo import monitoring  # type: ignore[no-redef,unused-ignore]  # noqa: PLC0415

    class Listener(monitoring.CommandListener):  # type: ignore[misc,unused-ignore]
        def started(self, event: Any) -> None:
            _RECORDER.started(event)

        def succeeded(self, event: Any) -> None:
            _RECORDER.succeeded(event)

        def failed(self, event: Any) -> None:
            _RECORDER.failed_event(event)

    monitoring.register(Listener())


def _outcome(reports: list[pytest.TestReport]) -> dict[str, Any]:
    failed = [r for r in reports if r.failed]
    if failed:
        report = failed[0]
        crash = getattr(report.longrepr, "reprcrash", None)
        lines = str(report.longrepr).splitlines() or [""]
        message = crash.message if crash is not None else lines[-1]
        outcome = "xpassed" if hasattr(report, "wasxfail") else "failed"
        return {"outcome": outcome, "message": str(message), "text": report.longreprtext}
    skipped = [r for r in reports if r.skipped]
    if skipped:
        report = skipped[0]
        outcome = "xfailed" if hasattr(report, "wasxfail") else "skipped"
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longreprtext
        return {"outcome": outcome, "message": str(reason), "text": str(reason)}
    return {"outcome": "passed"}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    _RECORDER.reset()
    yield
    line: dict[str, Any] = {"test": item.nodeid, **_outcome(_REPORTS.pop(item.nodeid, []))}
    if line["outcome"] == "failed":
        line.update(sent=_RECORDER.sent, failed=_RECORDER.failed)
    with open(os.environ["MONGOCORE_SUITE_REPORT"], "a", encoding="utf-8") as out:
        out.write(json.dumps(line, default=str) + "\n")
    _RECORDER.reset()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _REPORTS.setdefault(report.nodeid, []).append(report)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module that cannot be collected (an import error) is an outcome of its own."""
    if report.failed:
        line = {
            "test": report.nodeid,
            "outcome": "error",
            "message": "collection error: " + (str(report.longrepr).splitlines() or [""])[-1],
            "text": report.longreprtext,
            "sent": [],
            "failed": [],
        }
        with open(os.environ["MONGOCORE_SUITE_REPORT"], "a", encoding="utf-8") as out:
            out.write(json.dumps(line, default=str) + "\n")
