"""The seeds' outcomes for unified tests whose upstream expectations contradict them.

A [[deviation]] entry of ``specs/deviations.toml`` for a unified suite names one of
the transformations below in its ``transform`` field. The runner applies it to a
copy of the test before running it, so the test asserts what the seed says instead
of what the newer upstream spec says. Each transformation is small and mechanical,
driven by the test's own ``failPoint`` (a ``failCommand`` with ``mode: {times: n}``)
and the first operation after it that sends one of the failed commands, and it
refuses (TransformError, failing the test) when a test does not have the shape it
expects, or when it would change nothing: an entry cannot cover a test that does not
deviate.

``retryable-reads-until-success`` (retryable-reads.rst 1.3.0, "Executing Retryable
Read Commands" step 3: retry "as many times as necessary until a retry attempt
succeeds or returns a non-retryable error"): a fail point failing the read ``n >= 2``
times with errors the seed calls retryable no longer ends the operation in an error;
it succeeds on attempt ``n + 1``, so the expected error is dropped and the last
expected commandStartedEvent of that command is repeated until there are ``n + 1``.

``retryable-writes-default-off`` (retryable-writes.rst 1.0, "retryWrites": "This
option MUST default to false"): for an operation of a client whose uriOptions do not
set retryWrites, the first attempt's error is the operation's outcome: a closed
connection gives a client (network) error, an error code that code (with the labels
the fail point itself returns), a writeConcernError its code after the write was
applied. No retry is sent: expected events after the failed command are dropped
(a writeConcernError only drops the retried command), and commands never carry a
``txnNumber``. A write refused by the fail point is not applied and ends the
operation, so the expected outcome is the collections as they were when the failed
command was sent (the runner reads them at that moment, see ``SNAPSHOT_BEFORE_COMMAND``).
The same transformation covers a test whose fail point is ``onPrimaryTransactionalWrite``:
that fail point acts only on statements of retryable writes (a txnNumber), so under the
seed it never acts and every write succeeds on its first attempt. Each command is then
expected once: of two identical consecutive expected commandStartedEvents, the second
(upstream's retry) is dropped, and the transformation refuses a client whose expected
events have no such pair. An operation upstream expects to succeed keeps its expected
result and the test its outcome (the write is applied once either way). An operation
upstream expects to fail ("... is never committed") must now succeed: its expected
error is dropped and no result is asserted (the seed does not say what it is), and
the test's outcome check becomes ``OUTCOME_CHANGED_FROM_SNAPSHOT``: each outcome
collection must differ from its content when that operation's first command was sent,
i.e. the write was committed; nothing else is asserted about the collections.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Callable, Optional

from tests.spec.unified.operations import commands_of

#: The transformation of the retryable-writes seed's retryWrites default.
WRITES_DEFAULT_OFF = "retryable-writes-default-off"

#: Runner-private keys a transformation adds to the test copy.
SNAPSHOT_BEFORE_COMMAND = "$$seedSnapshotBeforeCommand"
OUTCOME_FROM_SNAPSHOT = "$$seedOutcomeFromSnapshot"
OUTCOME_CHANGED_FROM_SNAPSHOT = "$$seedOutcomeChangedFromSnapshot"

#: The server fail point that acts only on statements of retryable writes.
TRANSACTIONAL_WRITE_FAIL_POINT = "onPrimaryTransactionalWrite"

#: retryable-reads.rst 1.3.0, "Retryable Error": the server error codes of the seed.
SEED_RETRYABLE_READ_CODES = frozenset({11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001})

RETRYABLE_WRITE_ERROR = "RetryableWriteError"


class TransformError(AssertionError):
    """The deviation's transformation does not fit the test it is listed for."""


Test = dict[str, Any]


def transform(name: str, document: Mapping[str, Any], test: Mapping[str, Any]) -> Test:
    """Apply the named seed transformation to a copy of ``test``."""
    transformations: dict[str, Callable[[Mapping[str, Any], Test], None]] = {
        "retryable-reads-until-success": _reads_until_success,
        WRITES_DEFAULT_OFF: _writes_default_off,
    }
    if name not in transformations:
        raise TransformError(
            f"the [[deviation]] entry names no known transformation ({name!r}); known: "
            f"{sorted(transformations)}"
        )
    result: Test = copy.deepcopy(dict(test))
    transformations[name](document, result)
    if _comparable(result) == _comparable(test):
        raise TransformError(
            f"transformation {name} changes nothing in this test: it does not deviate, "
            "so its [[deviation]] entry is wrong"
        )
    return result


def _comparable(value: Any) -> Any:
    """The test's assertions, for deciding whether a transformation changed any: the
    runner-private keys aside, and ``isError: true`` next to other error assertions
    (which it adds nothing to)."""
    if isinstance(value, Mapping):
        out = {
            k: _comparable(v)
            for k, v in value.items()
            if k
            not in (SNAPSHOT_BEFORE_COMMAND, OUTCOME_FROM_SNAPSHOT, OUTCOME_CHANGED_FROM_SNAPSHOT)
        }
        if "expectError" in out and isinstance(out["expectError"], dict):
            error = dict(out["expectError"])
            if len(error) > 1:
                error.pop("isError", None)
            out["expectError"] = error
        return out
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    return value


# --- the test's structure ----------------------------------------------------------------


class _Entities:
    """Which client each entity of the file and test belongs to, and client options."""

    def __init__(self, document: Mapping[str, Any], test: Mapping[str, Any]) -> None:
        self.owner: dict[str, str] = {}
        self.uri_options: dict[str, dict[str, Any]] = {}
        self.add(document.get("createEntities", []))
        for operation in test.get("operations", []):
            if operation.get("object") == "testRunner" and operation["name"] == "createEntities":
                self.add(operation["arguments"]["entities"])

    def add(self, definitions: Sequence[Mapping[str, Any]]) -> None:
        for definition in definitions:
            kind, spec = next(iter(definition.items()))
            name = spec["id"]
            if kind == "client":
                self.owner[name] = name
                self.uri_options[name] = dict(spec.get("uriOptions") or {})
            elif kind in ("database", "session"):
                self.owner[name] = self.owner.get(spec["client"], "")
            elif kind == "collection":
                self.owner[name] = self.owner.get(spec["database"], "")

    def client_of(self, entity: str) -> str:
        client = self.owner.get(entity)
        if not client:
            raise TransformError(f"entity {entity!r} belongs to no client")
        return client


class _FailPoint:
    def __init__(self, index: int, arguments: Mapping[str, Any]) -> None:
        command = arguments["failPoint"]
        if command.get("configureFailPoint") != "failCommand":
            raise TransformError(f"not a failCommand fail point: {dict(command)!r}")
        mode = command.get("mode")
        if not isinstance(mode, Mapping) or set(mode) != {"times"}:
            raise TransformError(f"the fail point's mode is not {{times: n}}: {mode!r}")
        self.index = index
        self.times = int(mode["times"])
        self.data: Mapping[str, Any] = command.get("data") or {}
        self.commands = set(self.data.get("failCommands", []))

    @property
    def kind(self) -> str:
        if self.data.get("closeConnection"):
            return "network"
        if "errorCode" in self.data:
            return "code"
        if "writeConcernError" in self.data:
            return "writeConcernError"
        raise TransformError(f"the fail point neither fails nor closes: {dict(self.data)!r}")


def _targets(test: Test) -> list[tuple[_FailPoint, int, str]]:
    """Each failPoint, the index of the first entity operation after it that sends a
    failed command, and that command."""
    found: list[tuple[_FailPoint, int, str]] = []
    operations = test["operations"]
    for index, operation in enumerate(operations):
        if operation.get("object") != "testRunner" or operation["name"] != "failPoint":
            continue
        point = _FailPoint(index, operation["arguments"])
        for later in range(index + 1, len(operations)):
            candidate = operations[later]
            if candidate.get("object") == "testRunner":
                continue
            sent = [c for c in commands_of(candidate) if c in point.commands]
            if sent:
                found.append((point, later, sent[0]))
                break
    return found


def _event_command(event: Mapping[str, Any]) -> tuple[str, Optional[str]]:
    """(event name, the command it is about, if the expectation says)."""
    name, fields = next(iter(event.items()))
    fields = fields or {}
    command = fields.get("commandName")
    if command is None and isinstance(fields.get("command"), Mapping) and fields["command"]:
        command = next(iter(fields["command"]))
    return name, command


def _command_events(test: Test, client: str) -> list[list[Any]]:
    """The expected command event lists of ``client`` (usually one)."""
    return [
        expected["events"]
        for expected in test.get("expectEvents", [])
        if expected["client"] == client and expected.get("eventType", "command") == "command"
    ]


# --- retryable reads ---------------------------------------------------------------------


def _read_retry_enabled(uri_options: Mapping[str, Any]) -> bool:
    value = {k.lower(): v for k, v in uri_options.items()}.get("retryreads", True)
    return bool(value)


def _reads_until_success(document: Mapping[str, Any], test: Test) -> None:
    entities = _Entities(document, test)
    for point, index, command in _targets(test):
        if point.times < 2:
            continue
        kind = point.kind
        if kind == "code" and int(point.data["errorCode"]) not in SEED_RETRYABLE_READ_CODES:
            continue
        if kind == "writeConcernError":
            continue
        operation = test["operations"][index]
        client = entities.client_of(operation["object"])
        if not _read_retry_enabled(entities.uri_options[client]):
            continue
        if "expectError" not in operation:
            raise TransformError(f"{operation['name']} was expected to fail upstream")
        del operation["expectError"]
        for events in _command_events(test, client):
            positions = [
                i
                for i, e in enumerate(events)
                if _event_command(e) == ("commandStartedEvent", command)
            ]
            others = [
                e
                for e in events
                if _event_command(e)[1] == command and _event_command(e)[0] != "commandStartedEvent"
            ]
            if not positions or others:
                raise TransformError(f"unexpected shape of the expected {command} events")
            wanted = point.times + 1
            last = positions[-1]
            for _ in range(wanted - len(positions)):
                events.insert(last + 1, copy.deepcopy(events[last]))


# --- retryable writes --------------------------------------------------------------------


def _retry_writes_set(uri_options: Mapping[str, Any]) -> bool:
    return "retrywrites" in {k.lower() for k in uri_options}


def _writes_default_off(document: Mapping[str, Any], test: Test) -> None:
    entities = _Entities(document, test)
    for client, options in entities.uri_options.items():
        if _retry_writes_set(options):
            continue
        for events in _command_events(test, client):
            for event in events:
                name, fields = next(iter(event.items()))
                command = (fields or {}).get("command")
                if (
                    name == "commandStartedEvent"
                    and isinstance(command, MutableMapping)
                    and "txnNumber" in command
                    and command["txnNumber"] != {"$$exists": False}
                ):
                    command["txnNumber"] = {"$$exists": False}
    if any(fail_point_name(o) == TRANSACTIONAL_WRITE_FAIL_POINT for o in test["operations"]):
        _transactional_writes_default_off(entities, test)
        return
    for point, index, command in _targets(test):
        operations = test["operations"]
        operation = operations[index]
        client = entities.client_of(operation["object"])
        if _retry_writes_set(entities.uri_options[client]):
            continue
        if any(o.get("object") != "testRunner" for o in operations[index + 1 :]):
            raise TransformError("the failing write is not the test's last operation")
        kind = point.kind
        labels = list(point.data.get("errorLabels") or [])
        expected: dict[str, Any] = {"isError": True}
        if kind == "network":
            expected["isClientError"] = True
            expected["errorLabelsOmit"] = [RETRYABLE_WRITE_ERROR]
        elif kind == "code":
            expected["errorCode"] = int(point.data["errorCode"])
            if labels:
                expected["errorLabelsContain"] = labels
            if RETRYABLE_WRITE_ERROR not in labels:
                expected["errorLabelsOmit"] = [RETRYABLE_WRITE_ERROR]
        else:
            expected["errorCode"] = int(point.data["writeConcernError"]["code"])
        operation.pop("expectResult", None)
        operation["expectError"] = expected
        for events in _command_events(test, client):
            _drop_retry_events(events, command, kind)
        if kind != "writeConcernError":
            # Refused by the fail point: not applied, and nothing after it was sent.
            operation[SNAPSHOT_BEFORE_COMMAND] = command
            if test.get("outcome"):
                test[OUTCOME_FROM_SNAPSHOT] = True


def fail_point_name(operation: Mapping[str, Any]) -> Optional[str]:
    """The fail point a ``failPoint`` test operation configures (None for other operations)."""
    if operation.get("object") != "testRunner" or operation["name"] != "failPoint":
        return None
    return str(operation["arguments"]["failPoint"].get("configureFailPoint"))


def _transactional_writes_default_off(entities: _Entities, test: Test) -> None:
    """``onPrimaryTransactionalWrite`` under the seed: without a txnNumber no write is a
    retryable write, so the fail point never acts and every write succeeds at once."""
    operations = test["operations"]
    points = [i for i, o in enumerate(operations) if fail_point_name(o) is not None]
    if len(points) != 1 or fail_point_name(operations[points[0]]) != (
        TRANSACTIONAL_WRITE_FAIL_POINT
    ):
        raise TransformError("expected exactly one fail point, onPrimaryTransactionalWrite")
    writes = [
        o for o in operations[points[0] + 1 :] if o.get("object") != "testRunner" and commands_of(o)
    ]
    if not writes:
        raise TransformError("no write follows the onPrimaryTransactionalWrite fail point")
    clients = {entities.client_of(o["object"]) for o in writes}
    for client in clients:
        if _retry_writes_set(entities.uri_options[client]):
            raise TransformError(f"{client} sets retryWrites: the seed's default does not apply")
        for events in _command_events(test, client):
            if not _drop_repeated_commands(events):
                raise TransformError(f"the expected events of {client} retry no command")
    failing = [o for o in writes if "expectError" in o]
    if not failing:
        return
    if len(failing) > 1 or failing[0] is not writes[-1]:
        raise TransformError("the write expected to fail is not the test's only and last one")
    # Never refused, the write succeeds; its result is not what upstream describes, and
    # the seed does not say what it is: only its success is asserted.
    operation = failing[0]
    del operation["expectError"]
    operation.pop("expectResult", None)
    operation[SNAPSHOT_BEFORE_COMMAND] = commands_of(operation)[0]
    if test.get("outcome"):
        # Upstream's outcome is that of a write never committed: the seed's write was
        # committed, so the outcome collections must differ from their content when the
        # write was sent. Nothing more about them is known without evaluating the write.
        test[OUTCOME_CHANGED_FROM_SNAPSHOT] = True


def _drop_repeated_commands(events: list[Any]) -> int:
    """Drop each expected event identical to the one before it (a retried command: under
    this fail point upstream expects nothing else twice in a row); returns how many."""
    dropped = 0
    index = 1
    while index < len(events):
        if _event_command(events[index])[1] is not None and events[index] == events[index - 1]:
            del events[index]
            dropped += 1
        else:
            index += 1
    return dropped


def _drop_retry_events(events: list[Any], command: str, kind: str) -> None:
    first = next((i for i, e in enumerate(events) if _event_command(e)[1] == command), None)
    if first is None:
        return
    keep = first + 1
    if (
        _event_command(events[first])[0] == "commandStartedEvent"
        and keep < len(events)
        and _event_command(events[keep])[1] == command
        and _event_command(events[keep])[0] != "commandStartedEvent"
    ):
        keep += 1  # the first attempt's own succeeded or failed event
    if kind != "writeConcernError":
        del events[keep:]
        return
    # The write was applied; only the retried command (and its reply event) is gone.
    if keep < len(events) and _event_command(events[keep]) == _event_command(events[first]):
        end = keep + 1
        if (
            end < len(events)
            and _event_command(events[end])[1] == command
            and _event_command(events[end])[0] != "commandStartedEvent"
        ):
            end += 1
        del events[keep:end]


def opt_in_retry_writes(document: MutableMapping[str, Any], test: MutableMapping[str, Any]) -> None:
    """Add ``retryWrites: true`` to the uriOptions of every client (of the file and of
    the test's createEntities operations) that does not set retryWrites, in place: the
    test then runs as upstream wrote it, with retries on. Refuses a test with no such
    client (it would not differ from the seed's run)."""
    definitions: list[Any] = list(document.get("createEntities", []))
    for operation in test.get("operations", []):
        if operation.get("object") == "testRunner" and operation["name"] == "createEntities":
            definitions.extend(operation["arguments"]["entities"])
    changed = 0
    for definition in definitions:
        kind, spec = next(iter(definition.items()))
        if kind != "client":
            continue
        options = spec.setdefault("uriOptions", {})
        if not _retry_writes_set(options):
            options["retryWrites"] = True
            changed += 1
    if not changed:
        raise TransformError("every client of the test already sets retryWrites")
