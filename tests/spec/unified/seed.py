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

``retryable-reads-seed`` (retryable-reads.rst 1.3.0, "Retryable Error" and
"Executing Retryable Read Commands" step 3): the seed retries a read "as many times as
necessary until a retry attempt succeeds or returns a non-retryable error", and only on
the errors it lists (the seed's supported reads include the ``watch()`` helpers:
createChangeStream is the read of the aggregate that opens the stream, see
``operations.COMMAND_OF``). A fail point failing the read ``n >= 2`` times with
errors the seed calls retryable no longer ends the operation in an error: it succeeds on attempt
``n + 1``, so the expected error is dropped and the last expected commandStartedEvent
of that command is repeated until there are ``n + 1``. A fail point failing it with a
server error code outside the seed's list (the newer spec adds ExceededTimeLimit and
ReadConcernMajorityNotAvailableYet) ends the read at its first attempt with that code:
the expected result becomes that error, and the command's later expected events go.

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
When the test goes on after the failed write, only the retry's expected events are
dropped and the later operations are asserted as upstream wrote them; if a later one
writes too, the outcome is upstream's without the documents the refused insert named
by ``_id`` (another refused write followed by writes is a shape it refuses).
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

``retryable-writes-seed-errors`` (retryable-writes.rst 1.0, "Retryable Error" and
"Executing Retryable Write Commands": "Drivers MUST NOT attempt to retry a write
command on any other error"): for a client with retryWrites on, a write is retried
after a network error or a "not writable primary" / "node is recovering" error (the
SDAM seed's codes, as the command's error or its writeConcernError), whether or not
the server labeled it RetryableWriteError, and after nothing else. Where upstream
decides by the label instead, the test changes: a labeled error the seed does not
retry ends the write at its first attempt (as under ``retryable-writes-default-off``);
an unlabeled error the seed retries is retried once, with the same transaction id:
failing ``n >= 2`` times it ends with that error after two attempts, failing once the
write succeeds on its retry (no result asserted, the outcome changed from the snapshot).

``retryable-writes-default-off-beside-transactions`` (retryable-writes.rst 1.0,
"retryWrites": "This option MUST default to false"), for the transactions suites,
whose transactions take txnNumbers whatever retryWrites says: a supported write
outside a transaction, of a client whose uriOptions do not set retryWrites, is
expected without a txnNumber, and since it used none of its session's numbers, each
later transaction of that session is expected with a number lower by the writes
upstream numbered before it. Nothing else changes (no fail point is involved).

``overloaded-errors-seed`` (retryable-reads.rst 1.3.0, "Retryable Error",
"Unsupported Read Operations" and step 2a; retryable-writes.rst 1.0, "Executing
Retryable Write Commands" and "Unsupported Write Operations"): a fail point returns an
error labeled ``SystemOverloadedError`` (a server's backpressure), which the newer
Client Backpressure spec retries for any command, in a transaction too, up to
maxAttempts times. The seeds decide by the error's code and the operation: a
supported read is retried only after the read seed's codes (and never in a
transaction), a supported write only after a network or "not writable primary" /
"node is recovering" error, and nothing else is ever retried (getMore, runCommand,
index and other commands). Each command the fail point fails is therefore attempted
once: its expected retries (the same command's events right after the first attempt)
are dropped, and of the client's expected connection checkouts one checkout and
check-in; a getMore that fails kills its cursor, so its killCursors is expected after
it where the client observes it. An operation upstream expects to succeed after
the retries fails with the fail point's code and labels; if it wrote, the write was
refused (the outcome is the collections when it was sent, or upstream's without the
refused insert's documents when later operations write or commit). The test's later
operations run as upstream wrote them (a refused statement of a transaction does not
end it: the fail point fails the command before the server runs it). An error whose
code the seed retries is a shape the transformation refuses. The other
transformations leave such fail points to this one.

``gridfs-file-id-eq`` is no seed's: where no seed governs, the current GridFS spec
("TFileId Queries", as pymongo 4.20 does) decides against a test file older than it.
A command that queries a bucket's files or chunks collection for a user's file id
uses ``$eq``; an expected command written before that rule (``filter: {_id: <id>}``)
is expected as ``{_id: {$eq: <id>}}`` (``files_id`` in the chunks collection; a find's
filter, a delete's or an update's ``q``). The transformation is
:func:`tests.spec.unified.gridfs_operations.expect_file_id_eq`.

A GridFS download reads its files document, then its chunks: when the reads seed makes
a download that upstream expects to fail succeed, its expected events go on with the
find of the chunks (``gridfs_operations.events_after_read``).

Every transformation has a *shape* in :data:`SHAPES`, the predicate that the
``seed_shape`` condition of ``specs/deviations.toml`` evaluates: it selects every test
the transformation may change, by what the test does (its fail points, operations and
client options), never by its id. A transformation applied to a selected test it does
not change leaves it as upstream wrote it; a selected test whose shape the
transformation does not understand fails (TransformError) rather than running without
the seed's outcome.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, Callable, Optional

from tests.spec.unified import gridfs_operations
from tests.spec.unified.operations import commands_of

#: The transformation of the retryable-writes seed's retryWrites default.
WRITES_DEFAULT_OFF = "retryable-writes-default-off"

#: The predicate of each transformation: does it apply to (may it change) this test?
SHAPES: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], bool]] = {}

#: Runner-private keys a transformation adds to the test copy.
SNAPSHOT_BEFORE_COMMAND = "$$seedSnapshotBeforeCommand"
SNAPSHOT_BEFORE_OPERATION = "$$seedSnapshotBeforeOperation"
OUTCOME_FROM_SNAPSHOT = "$$seedOutcomeFromSnapshot"
OUTCOME_CHANGED_FROM_SNAPSHOT = "$$seedOutcomeChangedFromSnapshot"

#: Commands of a connection's handshake (hello, authentication): a fail point naming
#: one fails the connection being established, not an operation's own command.
HANDSHAKE_COMMANDS = frozenset(
    {"hello", "isMaster", "ismaster", "saslStart", "saslContinue", "authenticate"}
)

#: The server fail point that acts only on statements of retryable writes.
TRANSACTIONAL_WRITE_FAIL_POINT = "onPrimaryTransactionalWrite"

#: retryable-reads.rst 1.3.0, "Retryable Error": the server error codes of the seed.
SEED_RETRYABLE_READ_CODES = frozenset({11600, 11602, 10107, 13435, 13436, 189, 91, 7, 6, 89, 9001})

#: server-discovery-and-monitoring.md, "not writable primary" and "node is recovering"
#: codes: the errors retryable-writes.rst 1.0 calls retryable besides network errors.
SEED_STATE_CHANGE_CODES = frozenset({10107, 13435, 10058, 11600, 11602, 13436, 189, 91})

#: retryable-reads.rst 1.3.0, "Supported Read Operations": the commands they send.
READ_COMMANDS = frozenset(
    {"find", "aggregate", "distinct", "count", "listDatabases", "listCollections", "listIndexes"}
)
#: retryable-writes.rst 1.0, "Supported Write Operations": the commands they send.
WRITE_COMMANDS = frozenset({"insert", "update", "delete", "findAndModify"})

#: The label of a server's overload error (the Client Backpressure spec's).
SYSTEM_OVERLOADED_ERROR = "SystemOverloadedError"
OVERLOADED_ERRORS_SEED = "overloaded-errors-seed"

READS_SEED = "retryable-reads-seed"
WRITES_SEED_ERRORS = "retryable-writes-seed-errors"
WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS = "retryable-writes-default-off-beside-transactions"
GRIDFS_FILE_ID_EQ = "gridfs-file-id-eq"

RETRYABLE_WRITE_ERROR = "RetryableWriteError"


class TransformError(AssertionError):
    """The deviation's transformation does not fit the test it is listed for."""


Test = dict[str, Any]


def transform(name: str, document: Mapping[str, Any], test: Mapping[str, Any]) -> Test:
    """Apply the named seed transformation to a copy of ``test`` (a test it does not
    change comes back as it was)."""
    transformations: dict[str, Callable[[Mapping[str, Any], Test], None]] = {
        READS_SEED: _reads_seed,
        WRITES_DEFAULT_OFF: _writes_default_off,
        WRITES_SEED_ERRORS: _writes_seed_errors,
        WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS: _writes_default_off_beside_transactions,
        OVERLOADED_ERRORS_SEED: _overloaded_errors_seed,
        GRIDFS_FILE_ID_EQ: gridfs_operations.expect_file_id_eq,
    }
    if name not in transformations:
        raise TransformError(
            f"the [[deviation]] entry names no known transformation ({name!r}); known: "
            f"{sorted(transformations)}"
        )
    result: Test = copy.deepcopy(dict(test))
    transformations[name](document, result)
    return result


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
            elif kind in ("collection", "bucket"):
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
        if self.data.get("blockConnection") and not _fails_by_itself(self.data):
            # Kept in _targets only where it outlasts the client's socketTimeoutMS.
            return "timeout"
        if "errorCode" in self.data:
            return "code"
        if "writeConcernError" in self.data:
            return "writeConcernError"
        raise TransformError(f"the fail point neither fails nor closes: {dict(self.data)!r}")


def _targets(test: Test, entities: _Entities) -> list[tuple[_FailPoint, int, str]]:
    """Each failPoint, the index of the first entity operation after it that sends a
    failed command, and that command. A fail point that only blocks is kept where it
    makes that command time out on the socket (see :func:`_times_out`)."""
    found: list[tuple[_FailPoint, int, str]] = []
    operations = test["operations"]
    for index, operation in enumerate(operations):
        if fail_point_name(operation) != "failCommand" or _overloaded(operation):
            # Not a fail point, one that fails no command (getMore's check-out), or an
            # overload error (overloaded-errors-seed's).
            continue
        data = operation["arguments"]["failPoint"].get("data") or {}
        commands = set(data.get("failCommands", []))
        for later in range(index + 1, len(operations)):
            candidate = operations[later]
            if candidate.get("object") == "testRunner":
                continue
            sent = [c for c in commands_of(candidate) if c in commands]
            if sent:
                if not _only_blocks(operation) or _times_out(data, entities, candidate):
                    found.append((_FailPoint(index, operation["arguments"]), later, sent[0]))
                break
    return found


def _times_out(data: Mapping[str, Any], entities: _Entities, operation: Mapping[str, Any]) -> bool:
    """Does a fail point that only blocks (blockConnection) fail the operation's command,
    a socket timeout ending the attempt? Only where the client's socketTimeoutMS is
    shorter than the block and no timeoutMS bounds the operation: an operation that
    timeoutMS ends has no time left for another attempt, whatever the retry rules, so
    upstream's expectations stand, and a block shorter than every timeout fails nothing."""
    if _bounded_by_timeout_ms(entities, operation):
        return False
    client = entities.owner.get(operation["object"], "")
    options = {k.lower(): v for k, v in entities.uri_options.get(client, {}).items()}
    socket_timeout = options.get("sockettimeoutms")
    block = data.get("blockTimeMS")
    return bool(socket_timeout) and block is not None and float(block) > float(socket_timeout)


def _bounded_by_timeout_ms(entities: _Entities, operation: Mapping[str, Any]) -> bool:
    """Is the operation run under Client Side Operations Timeout: timeoutMS given to it,
    or set on its client (0, no limit, counts: it still retries as CSOT says)?"""
    if "timeoutMS" in (operation.get("arguments") or {}):
        return True
    client = entities.owner.get(operation["object"], "")
    return "timeoutms" in {k.lower() for k in entities.uri_options.get(client, {})}


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


# --- shapes: which tests a transformation may change -----------------------------------


def _fail_commands(test: Mapping[str, Any]) -> list[tuple[int, set[str]]]:
    """(index, failCommands) of each failCommand fail point, whatever its mode."""
    found = []
    for index, operation in enumerate(test.get("operations", [])):
        if (
            fail_point_name(operation) == "failCommand"
            and not _overloaded(operation)
            and not _only_blocks(operation)
        ):
            data = operation["arguments"]["failPoint"].get("data") or {}
            found.append((index, set(data.get("failCommands", []))))
    return found


def _clients_hit(
    document: Mapping[str, Any], test: Mapping[str, Any], commands: frozenset[str]
) -> list[str]:
    """The clients of operations that send one of ``commands`` while a failCommand fail
    point configured before them names it."""
    entities = _Entities(document, test)
    operations = test.get("operations", [])
    clients = []
    for index, failed in _fail_commands(test):
        for operation in operations[index + 1 :]:
            if operation.get("object") == "testRunner":
                continue
            if failed & commands & set(commands_of(operation)):
                clients.append(entities.owner.get(operation["object"], ""))
    return clients


def _reads_shape(document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A failCommand fail point fails a supported read of a client with retryReads on."""
    options = _Entities(document, test).uri_options
    return any(
        _read_retry_enabled(options.get(client, {}))
        for client in _clients_hit(document, test, READ_COMMANDS)
    )


def _writes_default_off_shape(document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A client whose uriOptions do not set retryWrites runs a supported write."""
    entities = _Entities(document, test)
    for operation in test.get("operations", []):
        if operation.get("object") == "testRunner" or not WRITE_COMMANDS & set(
            commands_of(operation)
        ):
            continue
        client = entities.owner.get(operation["object"], "")
        if client and not _retry_writes_set(entities.uri_options.get(client, {})):
            return True
    return False


def _writes_seed_errors_shape(document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A failCommand fail point fails a supported write of a client with retryWrites on."""
    options = _Entities(document, test).uri_options
    return any(
        _retry_writes_on(options.get(client, {}))
        for client in _clients_hit(document, test, WRITE_COMMANDS)
    )


# --- retryable reads ---------------------------------------------------------------------


def _read_retry_enabled(uri_options: Mapping[str, Any]) -> bool:
    value = {k.lower(): v for k, v in uri_options.items()}.get("retryreads", True)
    return bool(value)


def _reads_seed(document: Mapping[str, Any], test: Mapping[str, Any]) -> None:
    entities = _Entities(document, test)
    for point, index, command in _targets(test, entities):
        operation = test["operations"][index]
        client = entities.client_of(operation["object"])
        if command not in READ_COMMANDS or not _read_retry_enabled(entities.uri_options[client]):
            continue
        kind = point.kind
        if kind == "code" and int(point.data["errorCode"]) not in SEED_RETRYABLE_READ_CODES:
            _read_fails_at_once(test, index, client, command, int(point.data["errorCode"]))
            continue
        if kind in ("writeConcernError", "timeout") or point.times < 2:
            # A second socket timeout ends a read (docs/retryability.md), as upstream's
            # single retry does.
            continue
        if _bounded_by_timeout_ms(entities, operation):
            # Client Side Operations Timeout retries a read as many times as timeoutMS
            # allows, as the seed does: upstream expects what the seed decides.
            continue
        if "expectError" not in operation:
            raise TransformError(f"{operation['name']} was expected to fail upstream")
        del operation["expectError"]
        # What the operation sends once its read succeeds (a GridFS download goes on
        # to read its chunks).
        after = gridfs_operations.events_after_read(document, test, operation)
        for events in _command_events(test, client):
            positions = _started_positions(events, command)
            wanted = point.times + 1
            last = positions[-1]
            for _ in range(wanted - len(positions)):
                events.insert(last + 1, copy.deepcopy(events[last]))
            at = last + 1 + wanted - len(positions)
            events[at:at] = copy.deepcopy(after)


def _started_positions(events: list[Any], command: str) -> list[int]:
    """Where the expected commandStartedEvents of ``command`` are; refuses expectations
    of other events of that command (their count would change too)."""
    positions = [
        i for i, e in enumerate(events) if _event_command(e) == ("commandStartedEvent", command)
    ]
    others = [
        e
        for e in events
        if _event_command(e)[1] == command and _event_command(e)[0] != "commandStartedEvent"
    ]
    if not positions or others:
        raise TransformError(f"unexpected shape of the expected {command} events")
    return positions


def _read_fails_at_once(test: Test, index: int, client: str, command: str, code: int) -> None:
    """A server error the seed does not list: the read's first attempt is its last."""
    operations = test["operations"]
    operation = operations[index]
    if any(o.get("object") != "testRunner" for o in operations[index + 1 :]):
        raise TransformError("the failing read is not the test's last operation")
    operation.pop("expectResult", None)
    operation.setdefault("expectError", {"errorCode": code})
    for events in _command_events(test, client):
        positions = _started_positions(events, command)
        del events[positions[0] + 1 :]


# --- retryable writes --------------------------------------------------------------------


def _retry_writes_set(uri_options: Mapping[str, Any]) -> bool:
    return "retrywrites" in {k.lower() for k in uri_options}


def _retry_writes_on(uri_options: Mapping[str, Any]) -> bool:
    value = {k.lower(): v for k, v in uri_options.items()}.get("retrywrites", False)
    return value is True or str(value).lower() == "true"


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
                    # A transaction's commands take its txnNumber whatever retryWrites says.
                    and command.get("autocommit") is not False
                ):
                    command["txnNumber"] = {"$$exists": False}
    if any(fail_point_name(o) == TRANSACTIONAL_WRITE_FAIL_POINT for o in test["operations"]):
        _transactional_writes_default_off(entities, test)
        return
    for point, index, command in _targets(test, entities):
        client = entities.client_of(test["operations"][index]["object"])
        if _retry_writes_set(entities.uri_options[client]) or command not in WRITE_COMMANDS:
            continue
        _write_fails_at_once(
            test, point, index, command, client, racing=_races_timeout(point, entities, index, test)
        )
    _handshake_failures_default_off(document, entities, test)


#: Handshake commands a connection sends only when it authenticates.
AUTHENTICATION_COMMANDS = frozenset({"saslStart", "saslContinue", "authenticate"})


def _handshake_failures_default_off(
    document: Mapping[str, Any], entities: _Entities, test: Test
) -> None:
    """A fail point closing the connection on a handshake command (hello, a SASL step)
    fails the connection a later operation opens, before its command is sent. A write
    of a client without retryWrites is then not retried: it fails with that network
    error, sends no command, and changes nothing. The fail point acts ``times`` times;
    an operation that sends one of its own failCommands uses one of them."""
    operations = test["operations"]
    for index, operation in enumerate(operations):
        if fail_point_name(operation) != "failCommand" or _overloaded(operation):
            continue
        data = operation["arguments"]["failPoint"].get("data") or {}
        if not set(data.get("failCommands", [])) & HANDSHAKE_COMMANDS:
            continue
        if not data.get("closeConnection"):
            if "errorCode" in data:
                raise TransformError("a handshake fail point that returns an error")
            continue  # it only delays handshakes (blockConnection): it fails no write
        point = _FailPoint(index, operation["arguments"])
        requirements = test.get("runOnRequirements") or document.get("runOnRequirements") or []
        authenticated = bool(requirements) and all(r.get("auth") is True for r in requirements)
        if not point.commands & HANDSHAKE_COMMANDS - AUTHENTICATION_COMMANDS and not authenticated:
            raise TransformError("a fail point on authentication commands, and auth not required")
        budget = point.times
        for later in operations[index + 1 :]:
            if later.get("object") == "testRunner" or budget <= 0:
                continue
            sent = set(commands_of(later))
            if sent & point.commands:
                budget -= 1  # its own command fails, and closes its connection
                continue
            client = entities.owner.get(later["object"], "")
            if not sent & WRITE_COMMANDS or _retry_writes_set(entities.uri_options.get(client, {})):
                continue
            budget -= 1
            later.pop("expectResult", None)
            later["expectError"] = {"isClientError": True}
            later[SNAPSHOT_BEFORE_OPERATION] = True
            if test.get("outcome"):
                test[OUTCOME_FROM_SNAPSHOT] = True
            _drop_handshake_retry_events(test, client, sent & WRITE_COMMANDS)


def _drop_handshake_retry_events(test: Test, client: str, commands: set[str]) -> None:
    """The write's command events (upstream's are the retry's: the first connection
    failed before the command) and the retry's connection checkout."""
    for expected in test.get("expectEvents", []):
        if expected["client"] != client:
            continue
        events = expected["events"]
        kind = expected.get("eventType", "command")
        if kind == "command":
            events[:] = [e for e in events if _event_command(e)[1] not in commands]
        elif kind == "cmap":
            checkouts = [i for i, e in enumerate(events) if "connectionCheckOutStartedEvent" in e]
            if not checkouts:
                raise TransformError("no expected checkout for the write's retry")
            del events[checkouts[-1]]
        else:
            raise TransformError(f"unexpected {kind} events with a handshake fail point")


def _writes_seed_errors(document: Mapping[str, Any], test: Test) -> None:
    entities = _Entities(document, test)
    for point, index, command in _targets(test, entities):
        client = entities.client_of(test["operations"][index]["object"])
        if not _retry_writes_on(entities.uri_options[client]) or command not in WRITE_COMMANDS:
            continue
        kind = point.kind
        if kind in ("network", "timeout"):
            continue  # retryable for the seed and upstream alike
        labels = set(point.data.get("errorLabels") or [])
        code = int(
            point.data["errorCode"] if kind == "code" else point.data["writeConcernError"]["code"]
        )
        upstream_retries = RETRYABLE_WRITE_ERROR in labels
        seed_retries = code in SEED_STATE_CHANGE_CODES
        if upstream_retries and not seed_retries:
            _write_fails_at_once(
                test,
                point,
                index,
                command,
                client,
                racing=_races_timeout(point, entities, index, test),
            )
        elif seed_retries and not upstream_retries:
            _write_retried_once(test, point, index, command, client)


def _races_timeout(point: _FailPoint, entities: _Entities, index: int, test: Test) -> bool:
    """Does the fail point delay the command it fails (blockConnection) of an operation
    that timeoutMS bounds? Then which comes first, its error or the timeout, depends on
    how fast the machine is: upstream's own timings race (a 60 ms block within 100 ms)."""
    operation = test["operations"][index]
    return bool(point.data.get("blockConnection")) and _bounded_by_timeout_ms(entities, operation)


def _write_fails_at_once(
    test: Test, point: _FailPoint, index: int, command: str, client: str, *, racing: bool = False
) -> None:
    """The write's first attempt fails and is not retried: its error is the outcome.

    Operations after it run as upstream wrote them; only the retry's events go. A
    refused write changes nothing, so the outcome is the collections as they were
    when it was sent, or, when later operations write too, upstream's outcome
    without the documents a refused insert named by ``_id``."""
    operations = test["operations"]
    operation = operations[index]
    later = [o for o in operations[index + 1 :] if o.get("object") != "testRunner"]
    if point.times > 1 and any(command in commands_of(o) for o in later):
        # The fail point would act again, on a later operation upstream expects to pass.
        raise TransformError(f"a later operation sends {command}, which the fail point fails")
    kind = point.kind
    labels = list(point.data.get("errorLabels") or [])
    expected: dict[str, Any] = {"isError": True}
    if kind in ("network", "timeout"):
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
    if racing:
        # The fail point's error, or the timeout if the block outlasted timeoutMS: the
        # seed's outcome is that the first error, whichever, ends the write.
        expected = {"isError": True}
    operation.pop("expectResult", None)
    operation["expectError"] = expected
    for events in _command_events(test, client):
        if later and kind != "writeConcernError":
            _drop_retry_only(events, command)
        else:
            _drop_retry_events(events, command, kind)
    if kind == "timeout":
        # The server applies the write once the block ends, after the client gave up:
        # when it lands is not known, so there is no outcome to assert.
        if test.get("outcome"):
            raise TransformError("a write that timed out lands later: no outcome to assert")
        return
    if kind != "writeConcernError":
        # Refused by the fail point: not applied.
        operation[SNAPSHOT_BEFORE_COMMAND] = command
        if not test.get("outcome"):
            return
        if any(WRITE_COMMANDS & set(commands_of(o)) for o in later):
            _without_refused_insert(test, operation)
        else:
            test[OUTCOME_FROM_SNAPSHOT] = True


def _drop_retry_only(events: list[Any], command: str) -> None:
    """Drop the expected retry of ``command`` (the same commandStartedEvent again right
    after the first attempt's, and its reply event), keeping every later event."""
    first = next((i for i, e in enumerate(events) if _event_command(e)[1] == command), None)
    if first is None:
        return
    position = first + 1
    if (
        position < len(events)
        and _event_command(events[position])[1] == command
        and _event_command(events[position])[0] != "commandStartedEvent"
    ):
        position += 1  # the first attempt's own failed event
    if position < len(events) and events[position] == events[first]:
        end = position + 1
        if (
            end < len(events)
            and _event_command(events[end])[1] == command
            and _event_command(events[end])[0] != "commandStartedEvent"
        ):
            end += 1
        del events[position:end]


def _without_refused_insert(test: Test, operation: Mapping[str, Any]) -> None:
    """Upstream's outcome without the documents of an insert the fail point refused
    (later writes of the test are applied, so no earlier snapshot stands for it)."""
    arguments = operation.get("arguments") or {}
    if operation["name"] == "insertOne":
        documents = [arguments.get("document")]
    elif operation["name"] == "insertMany":
        documents = list(arguments.get("documents") or [])
    else:
        raise TransformError(f"a refused {operation['name']} is followed by other writes")
    if not all(isinstance(d, Mapping) and "_id" in d for d in documents):
        raise TransformError("the refused insert's documents have no _id to leave out")
    if len(test["outcome"]) != 1:
        raise TransformError("the outcome has several collections: which one refused it?")
    refused = [d["_id"] for d in documents]
    for data in test["outcome"]:
        data["documents"] = [d for d in data["documents"] if d.get("_id") not in refused]


def _write_retried_once(
    test: Test, point: _FailPoint, index: int, command: str, client: str
) -> None:
    """The seed retries an error upstream does not: exactly one retry, after which the
    write fails with the retry's error (the fail point acts again) or succeeds."""
    operations = test["operations"]
    operation = operations[index]
    if any(o.get("object") != "testRunner" for o in operations[index + 1 :]):
        raise TransformError("the retried write is not the test's last operation")
    for events in _command_events(test, client):
        positions = _started_positions(events, command)
        if len(positions) != 1:
            raise TransformError(f"upstream expects {len(positions)} {command} commands, not 1")
        events.insert(positions[0] + 1, copy.deepcopy(events[positions[0]]))
    if point.times >= 2:
        return  # the retry fails the same way: the error upstream expects stands
    if "expectError" not in operation:
        raise TransformError(f"{operation['name']} was expected to fail upstream")
    # The retry succeeds: the write was applied, with a result the seed does not state.
    del operation["expectError"]
    operation.pop("expectResult", None)
    operation[SNAPSHOT_BEFORE_COMMAND] = command
    if test.get("outcome"):
        test[OUTCOME_CHANGED_FROM_SNAPSHOT] = True


def fail_point_name(operation: Mapping[str, Any]) -> Optional[str]:
    """The fail point a ``failPoint`` test operation configures (None for other operations)."""
    if operation.get("object") != "testRunner" or operation["name"] != "failPoint":
        return None
    return str(operation["arguments"]["failPoint"].get("configureFailPoint"))


def _only_blocks(operation: Mapping[str, Any]) -> bool:
    """Is this a failCommand fail point that only delays the commands it names
    (blockConnection, with neither an error nor a closed connection)? It fails none of
    them itself: the command fails only if a timeout ends it first."""
    if fail_point_name(operation) != "failCommand":
        return False
    return not _fails_by_itself(operation["arguments"]["failPoint"].get("data") or {})


def _fails_by_itself(data: Mapping[str, Any]) -> bool:
    """Does a failCommand fail point's data fail the commands it names (an error, a
    closed connection or a write concern error), not only delay them?"""
    return any(key in data for key in ("errorCode", "closeConnection", "writeConcernError"))


def _overloaded(operation: Mapping[str, Any]) -> bool:
    """Is this a failCommand fail point returning the SystemOverloadedError label?"""
    if fail_point_name(operation) != "failCommand":
        return False
    data = operation["arguments"]["failPoint"].get("data") or {}
    return SYSTEM_OVERLOADED_ERROR in (data.get("errorLabels") or [])


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


# --- retryable writes beside transactions -------------------------------------------


def _expected_txn_numbers(
    document: Mapping[str, Any], test: Mapping[str, Any]
) -> list[tuple[MutableMapping[str, Any], bool]]:
    """Every expected commandStartedEvent command, of a client whose uriOptions do not
    set retryWrites, that expects a txnNumber; True for a supported write outside a
    transaction (no ``autocommit: false``)."""
    found = []
    for client, options in _Entities(document, test).uri_options.items():
        if _retry_writes_set(options):
            continue
        for events in _command_events(dict(test), client):
            for event in events:
                name, fields = next(iter(event.items()))
                command = (fields or {}).get("command")
                if name != "commandStartedEvent" or not isinstance(command, MutableMapping):
                    continue
                number = command.get("txnNumber")
                if number is None or number == {"$$exists": False}:
                    continue
                outside = command.get("autocommit") is not False
                found.append((command, outside and next(iter(command), "") in WRITE_COMMANDS))
    return found


def _writes_default_off_beside_transactions_shape(
    document: Mapping[str, Any], test: Mapping[str, Any]
) -> bool:
    """A client that does not set retryWrites is expected to send a supported write
    with a txnNumber outside a transaction."""
    return any(outside for _, outside in _expected_txn_numbers(document, test))


def _writes_default_off_beside_transactions(document: Mapping[str, Any], test: Test) -> None:
    """Under the seed's default a write outside a transaction takes no txnNumber, so it
    uses none of the session's numbers: its command is expected without one, and each
    later transaction's number is lower by the writes before it that upstream numbered
    (per session, named by the expected ``lsid``)."""
    commands = _expected_txn_numbers(document, test)
    dropped: dict[str, list[int]] = {}
    for command, outside in commands:
        if outside:
            key = repr(command.get("lsid"))
            dropped.setdefault(key, []).append(int(command["txnNumber"]))
            command["txnNumber"] = {"$$exists": False}
    if not dropped:
        raise TransformError("no write outside a transaction is expected with a txnNumber")
    for command, outside in commands:
        if outside:
            continue
        number = command["txnNumber"]
        if not isinstance(number, int):
            raise TransformError(f"a transaction's expected txnNumber is {number!r}")
        lower = sum(1 for n in dropped.get(repr(command.get("lsid")), []) if n < int(number))
        command["txnNumber"] = type(number)(int(number) - lower)


# --- overload errors (client backpressure) -------------------------------------------

#: Commands that return a cursor whose later batches a getMore fetches.
CURSOR_COMMANDS = frozenset({"find", "aggregate", "listCollections", "listIndexes"})


#: A session's operations that send the command of their name.
_SESSION_COMMANDS = frozenset({"commitTransaction", "abortTransaction"})


def _sends(operation: Mapping[str, Any], command: str) -> bool:
    """Does the operation send ``command`` (a getMore: if it reads a cursor; a session's
    commitTransaction or abortTransaction: that command)?"""
    sent = set(commands_of(operation))
    if operation.get("name") in _SESSION_COMMANDS:
        sent.add(str(operation["name"]))
    return command in sent or (command == "getMore" and bool(sent & CURSOR_COMMANDS))


def _overload_targets(test: Mapping[str, Any]) -> list[tuple[int, int, str]]:
    """(fail point index, index of the first later entity operation sending a command it
    fails, that command) for each overload fail point."""
    found = []
    operations = test.get("operations", [])
    for index, operation in enumerate(operations):
        if not _overloaded(operation):
            continue
        data = operation["arguments"]["failPoint"].get("data") or {}
        failed = [str(c) for c in data.get("failCommands", [])]
        for later in range(index + 1, len(operations)):
            candidate = operations[later]
            if candidate.get("object") == "testRunner":
                continue
            sent = [c for c in failed if _sends(candidate, c)]
            if sent:
                found.append((index, later, sent[0]))
                break
    return found


def _overloaded_shape(document: Mapping[str, Any], test: Mapping[str, Any]) -> bool:
    """A failCommand fail point returning SystemOverloadedError fails a command a later
    operation sends."""
    return bool(_overload_targets(test))


def _in_transaction(test: Mapping[str, Any], index: int) -> bool:
    """Does operation ``index`` run on a session with a transaction in progress?"""
    operations = test["operations"]
    session = (operations[index].get("arguments") or {}).get("session")
    if session is None:
        return False
    open_ = False
    for operation in operations[:index]:
        if operation.get("object") != session:
            continue
        if operation["name"] == "startTransaction":
            open_ = True
        elif operation["name"] in ("commitTransaction", "abortTransaction"):
            open_ = False
    return open_


def _seed_retries(
    entities: _Entities, test: Mapping[str, Any], index: int, command: str, code: int
) -> bool:
    """Would the seeds retry this error of ``command`` at all?"""
    if _in_transaction(test, index):
        return False  # retryable-reads 2a; the write seed's retries have a txnNumber of their own
    client = entities.client_of(test["operations"][index]["object"])
    options = entities.uri_options[client]
    if command in READ_COMMANDS:
        return _read_retry_enabled(options) and code in SEED_RETRYABLE_READ_CODES
    if command in WRITE_COMMANDS:
        return _retry_writes_on(options) and code in SEED_STATE_CHANGE_CODES
    return False  # getMore, runCommand and every other command: never retried


def _overloaded_errors_seed(document: Mapping[str, Any], test: Test) -> None:
    entities = _Entities(document, test)
    operations = test["operations"]
    for point_index, index, command in _overload_targets(test):
        data = operations[point_index]["arguments"]["failPoint"].get("data") or {}
        if "errorCode" not in data or data.get("closeConnection"):
            raise TransformError(f"an overload fail point without an error code: {dict(data)!r}")
        code = int(data["errorCode"])
        operation = operations[index]
        client = entities.client_of(operation["object"])
        if _seed_retries(entities, test, index, command, code):
            raise TransformError(f"the seed retries error {code} of {command}")
        earlier = [
            o
            for o in operations[:index]
            if o.get("object") != "testRunner"
            and entities.owner.get(o["object"]) == client
            and _sends(o, command)
        ]
        if command == "getMore" and earlier:
            raise TransformError("an earlier operation may have sent a getMore too")
        for expected in test.get("expectEvents", []):
            if expected["client"] != client:
                continue
            kind = expected.get("eventType", "command")
            if kind == "command":
                events = expected["events"]
                _one_attempt(events, command, len(earlier), _observed_commands(document, client))
                later = [
                    o
                    for o in operations[index + 1 :]
                    if o.get("object") != "testRunner"
                    and entities.owner.get(o["object"]) == client
                    and _sends(o, command)
                ]
                started = [
                    e for e in events if _event_command(e) == ("commandStartedEvent", command)
                ]
                if later and len(started) < len(earlier) + 1 + len(later):
                    raise TransformError(f"a later operation's {command} was taken for a retry")
            elif kind == "cmap":
                _one_checkout(expected["events"])
        if command == "abortTransaction":
            # Its error is ignored (transactions spec, "abortTransaction": "Drivers MUST
            # ignore any errors"): the operation succeeds, as upstream expects.
            if "expectError" in operation:
                raise TransformError("abortTransaction was expected to fail upstream")
            continue
        if "expectError" in operation:
            continue  # upstream's operation fails too, with the error its last attempt had
        operation.pop("expectResult", None)
        operation["expectError"] = {
            "isError": True,
            "isClientError": False,
            "errorCode": code,
            "errorLabelsContain": list(data.get("errorLabels") or []),
        }
        if command in WRITE_COMMANDS or command in ("createIndexes", "dropIndexes"):
            _refused(test, operation, index, command)


def _one_attempt(
    events: list[Any],
    command: str,
    nth: int,
    observed: Optional[tuple[set[str], set[str]]],
) -> None:
    """Keep the first attempt of the ``nth`` operation's ``command`` (its started event and
    reply event) and drop the retries after it."""
    positions = [
        i for i, e in enumerate(events) if _event_command(e) == ("commandStartedEvent", command)
    ]
    if len(positions) <= nth:
        raise TransformError(f"fewer expected {command} commands than operations sending it")
    first = positions[nth]
    end = first + 1
    if (
        end < len(events)
        and _event_command(events[end])[1] == command
        and _event_command(events[end])[0] != "commandStartedEvent"
    ):
        end += 1  # the first attempt's reply event
    retries = end
    while retries < len(events) and _event_command(events[retries])[1] == command:
        retries += 1
    del events[end:retries]
    if command != "getMore" or (
        end < len(events) and _event_command(events[end])[1] == "killCursors"
    ):
        return
    # The cursor whose getMore failed is killed (a server error that leaves it open).
    if observed is None:
        return
    names, ignored = observed
    if "killCursors" in ignored:
        return
    kill = [
        {name: {"commandName": "killCursors"}}
        for name in ("commandStartedEvent", "commandSucceededEvent")
        if name in names
    ]
    events[end:end] = kill


def _observed_commands(
    document: Mapping[str, Any], client: str
) -> Optional[tuple[set[str], set[str]]]:
    """The command event names a client entity observes and the commands it ignores."""
    for definition in document.get("createEntities", []):
        kind, spec = next(iter(definition.items()))
        if kind == "client" and spec.get("id") == client:
            return set(spec.get("observeEvents") or []), set(
                spec.get("ignoreCommandMonitoringEvents") or []
            )
    return None


def _one_checkout(events: list[Any]) -> None:
    """Of the repeated checkout and check-in pairs of each attempt, one pair."""
    pair = [{"connectionCheckedOutEvent": {}}, {"connectionCheckedInEvent": {}}]
    if len(events) % 2 or any(events[i : i + 2] != pair for i in range(0, len(events), 2)):
        raise TransformError(f"the expected cmap events are not a checkout per attempt: {events}")
    del events[2:]


def _refused(test: Test, operation: MutableMapping[str, Any], index: int, command: str) -> None:
    """A write the fail point refused changes nothing."""
    operation[SNAPSHOT_BEFORE_COMMAND] = command
    if not test.get("outcome"):
        return
    later = test["operations"][index + 1 :]
    if any(
        WRITE_COMMANDS & set(commands_of(o)) or o.get("name") == "commitTransaction"
        for o in later
        if o.get("object") != "testRunner"
    ):
        _without_refused_insert(test, operation)
    else:
        test[OUTCOME_FROM_SNAPSHOT] = True


SHAPES.update(
    {
        READS_SEED: _reads_shape,
        WRITES_DEFAULT_OFF: _writes_default_off_shape,
        WRITES_SEED_ERRORS: _writes_seed_errors_shape,
        WRITES_DEFAULT_OFF_BESIDE_TRANSACTIONS: _writes_default_off_beside_transactions_shape,
        OVERLOADED_ERRORS_SEED: _overloaded_shape,
        GRIDFS_FILE_ID_EQ: gridfs_operations.expects_plain_file_id,
    }
)
