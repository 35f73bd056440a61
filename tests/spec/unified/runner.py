"""Unified test format: "Executing a Test", "Executing an Operation", "Special Test
Operations", "expectedError", "expectEvents", "expectLogMessages" and "outcome", against
mongocore's Client on the simulated deployment.

:func:`run_case` is what each pytest test calls. It looks the test up in
``specs/deviations.toml`` first, whose rules select tests by what they do: a
[[not_applicable]] rule skips it with the entry's reason; each [[deviation]] rule
that selects it names the seed transformation (:mod:`tests.spec.unified.seed`)
applied to the test's expectations before it runs.
The test then runs against every simulated topology its runOnRequirements allow.
A test that no simulated topology satisfies must be listed as not applicable.

Beyond the format's assertions the runner checks one rule of the retryable-writes
seed on every test: a client whose ``retryWrites`` is off never sends a
``txnNumber`` outside a transaction.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import pytest

from mongocore.api.client import Client
from mongocore.api.client_session import ClientSession
from mongocore.api.cursor_base import _CursorBase
from mongocore.api.database import Database
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.errors import BulkWriteError, MongoCoreError, OperationFailure
from mongocore.io import log_messages
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern
from tests.spec import deviations
from tests.spec.format_keys import check_keys
from tests.spec.unified import dilation, gridfs_operations, operations, seed, session_operations
from tests.spec.unified.cases import UnifiedCase, environments, satisfied_by, schema_supported
from tests.spec.unified.deployments import Deployment, Deployments, Environment
from tests.spec.unified.entities import (
    WAIT_TIMEOUT,
    ClientEntity,
    EntityCreationFailed,
    EntityMap,
    InvalidTest,
    ThreadEntity,
    UnsupportedFeature,
    target_options,
)
from tests.spec.unified.events import EventLog, LogCapture, assert_events, assert_log_messages
from tests.spec.unified.matching import match, match_documents
from tests.spec.unified.stable_api import server_api_of
from tests.spec.unified.steady_monitoring import settle_monitoring

#: The exceptions besides MongoCoreError an operation's invalid arguments raise.
CLIENT_ERRORS = (ValueError, TypeError)
#: Clients the runner creates wait at most this long for a server (a failing test
#: fails in this time rather than the 30 s default).
SERVER_SELECTION_TIMEOUT_MS = 20_000
#: The heartbeat the runner gives clients whose uriOptions do not set one ("Executing
#: a Test": a runner MAY lower it for tests with fail points).
HEARTBEAT_FREQUENCY_MS = 500
#: The max document length of clients that observe log messages. Hello replies (with
#: lastWrite and $clusterTime) exceed the default 1000, and $$matchAsDocument must
#: parse a heartbeat's whole reply; other drivers' runners raise the length likewise.
LOG_MAX_DOCUMENT_LENGTH = 10_000


#: The fields of a test ("test" in the format) this runner acts on (besides the
#: "$$seed..." fields a seed transformation adds, tests/spec/unified/seed.py).
_TEST_KEYS = frozenset(
    {
        "description",
        "runOnRequirements",
        "skipReason",
        "operations",
        "expectEvents",
        "expectLogMessages",
        "outcome",
    }
)


#: The format's top-level fields ("Top-level Fields").
_FILE_KEYS = frozenset(
    {
        "description",
        "schemaVersion",
        "runOnRequirements",
        "createEntities",
        "initialData",
        "tests",
        "_yamlAnchors",
    }
)
#: "operation" (besides the "$$seed..." fields a seed transformation adds).
_OPERATION_KEYS = frozenset(
    {
        "name",
        "object",
        "arguments",
        "ignoreResultAndError",
        "expectError",
        "expectResult",
        "saveResultAsEntity",
    }
)
#: "collectionData" (initialData; an outcome's has no createOptions).
_COLLECTION_DATA_KEYS = frozenset({"collectionName", "databaseName", "createOptions", "documents"})
#: "expectedEventsForClient".
_EXPECTED_EVENTS_KEYS = frozenset({"client", "eventType", "events", "ignoreExtraEvents"})
#: Each entity's fields ("entity"), but the client's (ClientEntity).
_ENTITY_KEYS = {
    "database": frozenset({"id", "client", "databaseName", "databaseOptions"}),
    "collection": frozenset({"id", "database", "collectionName", "collectionOptions"}),
    "session": frozenset({"id", "client", "sessionOptions"}),
    "bucket": frozenset({"id", "database", "bucketOptions"}),
    "thread": frozenset({"id"}),
}
#: Each special test operation's arguments: (required, optional) ("Special Test
#: Operations"). A missing required argument, or one the runner does not know, fails.
SPECIAL_ARGUMENTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "failPoint": (frozenset({"client", "failPoint"}), frozenset()),
    "targetedFailPoint": (frozenset({"session", "failPoint"}), frozenset()),
    "createEntities": (frozenset({"entities"}), frozenset()),
    "waitForEvent": (frozenset({"client", "event", "count"}), frozenset()),
    "assertEventCount": (frozenset({"client", "event", "count"}), frozenset()),
    "runOnThread": (frozenset({"thread", "operation"}), frozenset()),
    "waitForThread": (frozenset({"thread"}), frozenset()),
    "wait": (frozenset({"ms"}), frozenset()),
    "recordTopologyDescription": (frozenset({"client", "id"}), frozenset()),
    "assertTopologyType": (frozenset({"topologyDescription", "topologyType"}), frozenset()),
    "waitForPrimaryChange": (
        frozenset({"client", "priorTopologyDescription"}),
        frozenset({"timeoutMS"}),
    ),
    "assertSessionTxnNumber": (frozenset({"session", "txnNumber"}), frozenset()),
    "assertSessionDirty": (frozenset({"session"}), frozenset()),
    "assertSessionNotDirty": (frozenset({"session"}), frozenset()),
    "assertSameLsidOnLastTwoCommands": (frozenset({"client"}), frozenset()),
    "assertDifferentLsidOnLastTwoCommands": (frozenset({"client"}), frozenset()),
    "assertNumberConnectionsCheckedOut": (frozenset({"client", "connections"}), frozenset()),
    "assertCollectionExists": (frozenset({"collectionName", "databaseName"}), frozenset()),
    "assertCollectionNotExists": (frozenset({"collectionName", "databaseName"}), frozenset()),
    "assertIndexExists": (
        frozenset({"collectionName", "databaseName", "indexName"}),
        frozenset(),
    ),
    "assertIndexNotExists": (
        frozenset({"collectionName", "databaseName", "indexName"}),
        frozenset(),
    ),
    "assertSessionTransactionState": (frozenset({"session", "state"}), frozenset()),
    "assertSessionPinned": (frozenset({"session"}), frozenset()),
    "assertSessionUnpinned": (frozenset({"session"}), frozenset()),
}


def check_special_arguments(name: str, args: Mapping[str, Any]) -> None:
    """A special operation's arguments are the format's: all required ones given, no
    other (an argument the runner ignored would pass unchecked)."""
    if name not in SPECIAL_ARGUMENTS:
        raise UnsupportedFeature(f"special test operation {name!r}")
    required, optional = SPECIAL_ARGUMENTS[name]
    missing = sorted(required - set(args))
    if missing:
        raise InvalidTest(f"{name} requires the arguments {missing}")
    check_keys(name, args, required | optional)


def run_case(
    case: Any,
    deployments: Deployments,
    *,
    retry_writes_opted_in: bool = False,
    time_dilation: int = 1,
    not_applicable_rules: bool = True,
) -> None:
    """Run one unified test case (the body of every generated pytest test).

    ``retry_writes_opted_in``: add ``retryWrites: true`` to the clients that do not set
    it (see ``seed.opt_in_retry_writes``) before the deviations are looked up, so the
    test asserts upstream's expectations for a client that opted in to retries (with
    the seed's rules of which errors are retried). ``time_dilation``: run the test with
    every duration that many times longer (:mod:`tests.spec.unified.dilation`).
    ``not_applicable_rules=False``: run the test even where a [[not_applicable]] rule
    selects it (a test that must fail: the runner then refuses what it does not offer)."""
    if not isinstance(case, UnifiedCase):
        pytest.skip("spec suite not available")
    document, test = case.load()
    entry = (
        deviations.not_applicable(case.suite, document, test, case.test_id)
        if not_applicable_rules
        else None
    )
    if entry is not None:
        pytest.skip(" ".join(str(entry["reason"]).split()))
    if not schema_supported(str(document.get("schemaVersion", ""))):
        raise AssertionError(
            f"{case.path.name}: schemaVersion {document.get('schemaVersion')} is not supported"
        )
    if test.get("skipReason"):
        raise AssertionError(
            f"the test carries skipReason {test['skipReason']!r} and no [[not_applicable]] entry"
        )
    envs = environments(document, test)
    if not envs:
        raise AssertionError(
            "no simulated deployment satisfies the runOnRequirements of this test "
            f"({document.get('runOnRequirements')} / {test.get('runOnRequirements')}), and "
            "specs/deviations.toml has no [[not_applicable]] entry for it"
        )
    if retry_writes_opted_in:
        seed.opt_in_retry_writes(document, test)
    # Every rule selecting the test (as it now is) turns upstream's expectations into
    # the seed's; a rule whose transformation does not change it leaves it as it is.
    for deviation in deviations.deviations(case.suite, document, test, case.test_id):
        test = seed.transform(str(deviation.get("transform", "")), document, test)
    if time_dilation != 1:
        document, test = dilation.dilate(document, test, time_dilation)
    ran = False
    for env in envs:
        deployment = deployments[env]
        if not satisfied_by(document, test, env, deployment.server_parameter):
            continue  # its server parameters (or authentication mechanisms) differ
        ran = True
        try:
            TestRun(document, test, deployment).run()
        except AssertionError as exc:
            raise AssertionError(f"[{env}] {exc}") from exc
    if not ran:
        raise AssertionError(
            "no simulated deployment has the server parameters or authentication "
            "mechanisms the runOnRequirements of this test ask for "
            f"({document.get('runOnRequirements')} / {test.get('runOnRequirements')}), and "
            "specs/deviations.toml has no [[not_applicable]] entry for it"
        )


def retry_writes_opted_in_cases(params: Sequence[Any]) -> list[Any]:
    """The cases a suite runs once more with retryWrites opted in
    (``run_case(..., retry_writes_opted_in=True)``): those the
    retryable-writes-default-off rule selects (a client that does not set retryWrites
    runs a supported write), unless not applicable. The placeholder standing for an
    unavailable suite is kept."""
    chosen = []
    for param in params:
        case = param.values[0]
        if not isinstance(case, UnifiedCase):
            chosen.append(param)
            continue
        try:
            document, test = case.load()
            if deviations.not_applicable(case.suite, document, test, case.test_id) is not None:
                continue
            selected = any(
                entry.get("transform") == seed.WRITES_DEFAULT_OFF
                for entry in deviations.deviations(case.suite, document, test, case.test_id)
            )
        except Exception:  # the case's own failure, not the module's
            # A file the rules cannot read fails its own test (run_case meets the same
            # error); collecting the rest of the suite goes on.
            continue
        if selected:
            chosen.append(param)
    return chosen


class TestRun:
    """One execution of one test against one deployment."""

    __test__ = False  # not a pytest class

    def __init__(
        self, document: Mapping[str, Any], test: Mapping[str, Any], deployment: Deployment
    ) -> None:
        self.document = document
        self.test = test
        self.deployment = deployment
        self.entities = EntityMap()
        self.internal: Optional[Client] = None
        self.snapshot: Optional[dict[tuple[str, str], list[dict[str, Any]]]] = None

    @property
    def env(self) -> Environment:
        return self.deployment.env

    # --- the test ------------------------------------------------------------------------

    def run(self) -> None:
        check_keys("the file", self.document, _FILE_KEYS)
        unknown = {key for key in self.test if not key.startswith("$$")} - _TEST_KEYS
        if unknown:
            # An expectation the runner would not check must not pass unchecked.
            raise UnsupportedFeature(f"test fields {sorted(unknown)}")
        for data in self.document.get("initialData", []):
            check_keys("initialData", data, _COLLECTION_DATA_KEYS)
        for data in self.test.get("outcome", []):
            check_keys("outcome", data, _COLLECTION_DATA_KEYS - {"createOptions"})
        for expected in self.test.get("expectEvents", []):
            check_keys("expectEvents", expected, _EXPECTED_EVENTS_KEYS)
        try:
            self.internal = Client(
                self.deployment.uri(use_multiple_mongoses=False),
                heartbeatFrequencyMS=HEARTBEAT_FREQUENCY_MS,
                serverSelectionTimeoutMS=SERVER_SELECTION_TIMEOUT_MS,
            )
            self._kill_all_sessions()
            for data in self.document.get("initialData", []):
                self._set_up_collection(data)
            self._create_entities(self.document.get("createEntities", []))
            for operation in self.test["operations"]:
                self.execute(operation)
            self._stop_threads(check=True)
            for entity in self.entities.values():
                if isinstance(entity, ClientEntity):
                    entity.log.freeze()
                    if entity.log_messages is not None:
                        entity.log_messages.freeze()
            # Fail points off before the outcome is read ("Executing a Test").
            self.deployment.reset()
            self._check_no_txn_number_without_retry_writes()
            for expected in self.test.get("expectEvents", []):
                self._check_events(expected)
            for expected in self.test.get("expectLogMessages", []):
                self._check_log_messages(expected)
            self._check_outcome()
        finally:
            self._tear_down()

    def _tear_down(self) -> None:
        self._stop_threads(check=False)
        for entity in self.entities.values():
            if isinstance(entity, _CursorBase):
                entity.close()  # a cursor left open still holds its pinned connection
        for entity in self.entities.values():
            if isinstance(entity, ClientSession):
                entity.end_session()
        for entity in self.entities.values():
            if isinstance(entity, ClientEntity):
                entity.close()
        for entity in reversed(self.entities.values()):
            if isinstance(entity, ClientEntity) and entity.log_messages is not None:
                entity.log_messages.detach()
        if self.internal is not None:
            self.internal.close()
        self.deployment.reset()
        self.deployment.release()

    def _stop_threads(self, *, check: bool) -> None:
        for entity in self.entities.values():
            if isinstance(entity, ThreadEntity):
                stopped = entity.stop()
                if check and not stopped:
                    raise AssertionError(f"thread {entity.id} did not finish")

    # --- initialData and outcome -------------------------------------------------------

    def _kill_all_sessions(self) -> None:
        """ "Executing a Test": end the transactions an earlier test left open (a session
        discarded after a network error was never ended), so that they hold no write
        this test's data conflicts with. Interrupted (11601) is expected and ignored."""
        assert self.internal is not None
        try:
            self.internal.command("admin", {"killAllSessions": []})
        except OperationFailure as exc:
            if exc.code != 11601:
                raise

    def _set_up_collection(self, data: Mapping[str, Any]) -> None:
        assert self.internal is not None
        database = self.internal.get_database(
            data["databaseName"], write_concern=WriteConcern("majority")
        )
        name = data["collectionName"]
        database.drop_collection(name)
        options = data.get("createOptions")
        documents = list(data.get("documents", []))
        if options is not None or not documents:
            database.create_collection(name, **dict(options or {}))
        if documents:
            database[name].insert_many(documents)

    def _read_collection(self, database: str, collection: str) -> list[dict[str, Any]]:
        assert self.internal is not None
        target = self.internal.get_database(
            database,
            read_preference=ReadPreference(Mode.PRIMARY),
            read_concern=ReadConcern("local"),
        )[collection]
        with target.find({}, sort=[("_id", 1)]) as cursor:
            return cursor.to_list()

    def take_snapshot(self) -> None:
        """The outcome collections as they are now (the seed transformation of
        retryable writes asserts the outcome against this)."""
        self.snapshot = {
            (c["databaseName"], c["collectionName"]): self._read_collection(
                c["databaseName"], c["collectionName"]
            )
            for c in self.test.get("outcome", [])
        }

    def _check_outcome(self) -> None:
        for data in self.test.get("outcome", []):
            key = (data["databaseName"], data["collectionName"])
            actual = self._read_collection(*key)
            expected: Sequence[Any] = data["documents"]
            if self.test.get(seed.OUTCOME_CHANGED_FROM_SNAPSHOT):
                # The seed commits a write upstream expects never to commit.
                if self.snapshot is None:
                    raise AssertionError("the seed's outcome snapshot was never taken")
                if actual == self.snapshot[key]:
                    raise AssertionError(f"outcome {key}: the write changed nothing: {actual!r}")
                continue
            if self.test.get(seed.OUTCOME_FROM_SNAPSHOT):
                if self.snapshot is None:
                    raise AssertionError("the seed's outcome snapshot was never taken")
                expected = self.snapshot[key]
            # Documents must match exactly (key order aside): nested-document rules
            # throughout, and the same number of them.
            if len(actual) != len(expected):
                raise AssertionError(
                    f"outcome {key}: expected {list(expected)!r}, found {actual!r}"
                )
            for want, got in zip(expected, actual):
                try:
                    match(want, got, root=False)
                except AssertionError as exc:
                    raise AssertionError(
                        f"outcome {key}: expected {list(expected)!r}, found {actual!r} ({exc})"
                    ) from None

    # --- entities ---------------------------------------------------------------------

    def _create_entities(self, definitions: Sequence[Mapping[str, Any]]) -> None:
        for definition in definitions:
            if len(definition) != 1:
                raise InvalidTest(f"an entity has exactly one key: {dict(definition)!r}")
            kind, spec = next(iter(definition.items()))
            try:
                self._create_entity(kind, spec)
            except InvalidTest:
                raise
            except (ValueError, TypeError, MongoCoreError) as exc:
                # mongocore refused the entity's options (an unknown API version, an
                # option out of range): the test cannot run as its file says.
                raise EntityCreationFailed(
                    f"{kind} entity {spec.get('id')!r} could not be created: {exc!r}"
                ) from exc

    def _create_entity(self, kind: str, spec: Mapping[str, Any]) -> None:
        if kind in _ENTITY_KEYS:
            check_keys(f"{kind} entity", spec, _ENTITY_KEYS[kind])
        name = spec["id"]
        if kind == "client":
            self.entities.add(name, self._new_client(spec))
        elif kind == "database":
            client = self.entities.client(spec["client"])
            self.entities.add(
                name,
                client.client.get_database(
                    spec["databaseName"], **target_options(spec.get("databaseOptions"))
                ),
            )
        elif kind == "collection":
            database: Database = self.entities.get(spec["database"], Database)
            self.entities.add(
                name,
                database.get_collection(
                    spec["collectionName"], **target_options(spec.get("collectionOptions"))
                ),
            )
        elif kind == "session":
            client = self.entities.client(spec["client"])
            options = operations.session_options(spec.get("sessionOptions"))
            session = client.client.start_session(
                causal_consistency=options.causal_consistency,
                snapshot=options.snapshot,
                default_transaction_options=options.default_transaction_options,
            )
            self.entities.add(name, session)
            # Saved now, for $$sessionLsid after the session has ended.
            self.entities.record_lsid(name, session.session_id)
        elif kind == "bucket":
            database = self.entities.get(spec["database"], Database)
            self.entities.add(name, gridfs_operations.bucket(database, spec.get("bucketOptions")))
        elif kind == "thread":
            thread = ThreadEntity(name)
            self.entities.add(name, thread)
            thread.start()
        else:
            raise UnsupportedFeature(f"{kind} entities")

    def _new_client(self, spec: Mapping[str, Any]) -> ClientEntity:
        known = {
            "id",
            "uriOptions",
            "useMultipleMongoses",
            "observeEvents",
            "ignoreCommandMonitoringEvents",
            "observeSensitiveCommands",
            "observeLogMessages",
            "serverApi",
            "awaitMinPoolSizeMS",
        }
        unknown = set(spec) - known
        if unknown:
            raise UnsupportedFeature(f"client entity fields {sorted(unknown)}")
        uri_options: dict[str, Any] = dict(spec.get("uriOptions") or {})
        server_api = server_api_of(spec.get("serverApi"))
        log = EventLog(
            spec.get("observeEvents", []),
            ignore_commands=spec.get("ignoreCommandMonitoringEvents", []),
            observe_sensitive=bool(spec.get("observeSensitiveCommands", False)),
        )
        options = dict(uri_options)
        lowered = {key.lower() for key in options}
        if "heartbeatfrequencyms" not in lowered:
            options["heartbeatFrequencyMS"] = HEARTBEAT_FREQUENCY_MS
        if "serverselectiontimeoutms" not in lowered:
            options["serverSelectionTimeoutMS"] = SERVER_SELECTION_TIMEOUT_MS
        capture = self._log_capture(spec.get("observeLogMessages"))
        previous_length = log_messages.set_max_document_length(
            LOG_MAX_DOCUMENT_LENGTH if capture is not None else None
        )
        try:
            direct = str(
                {k.lower(): v for k, v in uri_options.items()}.get("directconnection")
            ).lower()
            client = Client(
                self.deployment.uri(
                    spec.get("useMultipleMongoses"), direct_connection=direct == "true"
                ),
                event_listeners=log.listeners(),
                server_api=server_api,
                **options,
            )
        except BaseException:
            if capture is not None:
                capture.detach()
            raise
        finally:
            log_messages.set_max_document_length(previous_length)
        if capture is not None:
            capture.topology_id = client.topology.topology_id
        entity = ClientEntity(
            spec["id"],
            client,
            log,
            uri_options,
            retry_writes=client.options.retry_writes,
            log_messages=capture,
        )
        if "awaitMinPoolSizeMS" in spec:
            try:
                entity.await_min_pool_size(int(spec["awaitMinPoolSizeMS"]))
            except BaseException:
                entity.close()
                raise
        return entity

    @staticmethod
    def _log_capture(observe: Optional[Mapping[str, str]]) -> Optional[LogCapture]:
        """observeLogMessages: capture the components' messages from before the client
        exists (it logs while it is created; mongocore subscribes its SDAM log messages
        only if the logger is enabled then)."""
        if observe is None:
            return None
        try:
            capture = LogCapture(observe)
        except ValueError as exc:
            raise UnsupportedFeature(f"observeLogMessages {dict(observe)!r}: {exc}") from None
        capture.attach()
        return capture

    # --- operations ---------------------------------------------------------------------

    def execute(self, operation: Mapping[str, Any], *, propagate: bool = False) -> None:
        """Executing an Operation. ``propagate``: an operation of a withTransaction
        callback, whose error (once checked against the expectations) is raised again,
        as the callback's."""
        check_keys(
            f"operation {operation.get('name')!r}",
            {k: v for k, v in operation.items() if not str(k).startswith("$$")},
            _OPERATION_KEYS,
        )
        name = operation["name"]
        target_name = operation["object"]
        if target_name == "testRunner":
            self._special(name, operation.get("arguments") or {})
            return
        target = self.entities.get(target_name)
        self._check_supported(target)
        snapshot_before = operation.get(seed.SNAPSHOT_BEFORE_COMMAND)
        if snapshot_before is not None:
            self._snapshot_on_command(target, str(snapshot_before))
        if operation.get(seed.SNAPSHOT_BEFORE_OPERATION):
            self.take_snapshot()
        result: Any = None
        error: Optional[Exception] = None
        try:
            result = operations.run(
                self.entities,
                target,
                name,
                operation.get("arguments"),
                lambda nested: self.execute(nested, propagate=True),
            )
        except MongoCoreError as exc:
            error = exc
        except InvalidTest:
            raise  # the test's own fault, never an error the operation is expected to raise
        except CLIENT_ERRORS as exc:
            # Like pymongo, mongocore refuses invalid arguments (an update without
            # $-operators, a replacement with them) with ValueError or TypeError
            # before sending anything: a client error where the test expects one.
            if "expectError" not in operation:
                raise
            error = exc
        if operation.get("ignoreResultAndError"):
            if propagate and error is not None:
                raise error
            return
        if "expectError" in operation:
            if error is None:
                raise AssertionError(
                    f"{name} on {target_name}: expected an error, got the result {result!r}"
                )
            check_error(operation["expectError"], error, self.entities)
            if propagate:
                raise error
            return
        if error is not None:
            raise AssertionError(f"{name} on {target_name} failed: {error!r}") from error
        if "expectResult" in operation:
            expected = operation["expectResult"]
            try:
                if isinstance(result, operations.Documents) and isinstance(expected, list):
                    match_documents(expected, result, self.entities.lookup)
                else:
                    match(expected, result, self.entities.lookup)
            except AssertionError as exc:
                raise AssertionError(f"{name} on {target_name}: result {exc}") from None
        if "saveResultAsEntity" in operation:
            self.entities.add(operation["saveResultAsEntity"], result)

    def _check_supported(self, target: Any) -> None:
        """An operation through a client entity that asked for what mongocore lacks."""
        entity = target if isinstance(target, ClientEntity) else None
        try:
            entity = entity or self.entities.client_of(target)
        except KeyError:
            return
        if entity.unsupported is not None:
            raise UnsupportedFeature(f"client {entity.id}: {entity.unsupported}")

    def _snapshot_on_command(self, target: Any, command: str) -> None:
        entity = target if isinstance(target, ClientEntity) else self.entities.client_of(target)
        taken = False

        def hook(event: Any) -> None:
            nonlocal taken
            if not taken and event.command_name == command:
                taken = True
                self.take_snapshot()

        entity.log.on_command_started(hook)

    # --- special operations -----------------------------------------------------------

    def _special(self, name: str, args: Mapping[str, Any]) -> None:
        entities = self.entities
        check_special_arguments(name, args)
        if name in ("failPoint", "targetedFailPoint"):
            # The fail point is for the test's commands, not its clients' first hellos.
            settle_monitoring(
                [e for e in entities.values() if isinstance(e, ClientEntity)],
                self.deployment.processes(),
            )
        if name == "failPoint":
            client = entities.client(args["client"])
            client.client.command("admin", dict(args["failPoint"]), ReadPreference(Mode.PRIMARY))
        elif name == "createEntities":
            self._create_entities(args["entities"])
        elif name == "waitForEvent":
            log = entities.client(args["client"]).log
            count = int(args["count"])
            seen = log.wait_for(args["event"], count, WAIT_TIMEOUT, entities.lookup)
            if seen < count:
                raise AssertionError(
                    f"waitForEvent: {seen} of {count} {dict(args['event'])!r} after "
                    f"{WAIT_TIMEOUT}s; observed {[(o.name, o.document) for o in log.events]}"
                )
        elif name == "assertEventCount":
            log = entities.client(args["client"]).log
            seen = log.count(args["event"], entities.lookup)
            if seen != int(args["count"]):
                raise AssertionError(
                    f"assertEventCount: {seen} {dict(args['event'])!r}, expected {args['count']}"
                )
        elif name == "runOnThread":
            thread = entities.thread(args["thread"])
            operation = args["operation"]
            thread.submit(lambda: self.execute(operation))
        elif name == "waitForThread":
            thread = entities.thread(args["thread"])
            if not thread.stop(WAIT_TIMEOUT):
                raise AssertionError(f"thread {thread.id} did not finish in {WAIT_TIMEOUT}s")
            if thread.error is not None:
                raise AssertionError(
                    f"an operation on thread {thread.id} failed: {thread.error}"
                ) from thread.error
        elif name == "wait":
            # The format's own operation: time passing is what the test is about.
            time.sleep(float(args["ms"]) / 1000.0)
        elif name == "recordTopologyDescription":
            client = entities.client(args["client"])
            entities.add(args["id"], client.client.topology_description)
        elif name == "assertTopologyType":
            description = entities.topology(args["topologyDescription"])
            if str(description.type) != args["topologyType"]:
                raise AssertionError(
                    f"topology type {description.type}, expected {args['topologyType']}"
                )
        elif name == "waitForPrimaryChange":
            self._wait_for_primary_change(args)
        elif name == "assertSessionTxnNumber":
            session = entities.session(args["session"])
            if session.txn_number != int(args["txnNumber"]):
                raise AssertionError(
                    f"session txnNumber {session.txn_number}, expected {args['txnNumber']}"
                )
        elif name in ("assertSessionDirty", "assertSessionNotDirty"):
            session = entities.session(args["session"])
            if session.dirty != (name == "assertSessionDirty"):
                raise AssertionError(f"{name}: the session's dirty flag is {session.dirty}")
        elif name in ("assertSameLsidOnLastTwoCommands", "assertDifferentLsidOnLastTwoCommands"):
            log = entities.client(args["client"]).log
            with log.cond:
                started = [o.raw for o in log.events if o.name == "commandStartedEvent"]
            if len(started) < 2:
                raise AssertionError(f"{name}: fewer than two commands observed")
            lsids = [getattr(e, "command", {}).get("lsid") for e in started[-2:]]
            if None in lsids:
                raise AssertionError(f"{name}: a command has no lsid")
            if (lsids[0] == lsids[1]) != (name == "assertSameLsidOnLastTwoCommands"):
                raise AssertionError(f"{name}: lsids {lsids}")
        elif name == "assertNumberConnectionsCheckedOut":
            log = entities.client(args["client"]).log
            if log.checked_out != int(args["connections"]):
                raise AssertionError(
                    f"{log.checked_out} connections checked out, expected {args['connections']}"
                )
        elif name in (
            "assertCollectionExists",
            "assertCollectionNotExists",
            "assertIndexExists",
            "assertIndexNotExists",
        ):
            self._assert_exists(name, args)
        elif session_operations.handles_special(name):
            session_operations.special(entities, name, args)
        else:
            raise UnsupportedFeature(f"special test operation {name!r}")

    def _wait_for_primary_change(self, args: Mapping[str, Any]) -> None:
        client = self.entities.client(args["client"])
        prior: TopologyDescription = self.entities.topology(args["priorTopologyDescription"])
        old = prior.primary.address if prior.primary is not None else None
        timeout = float(args.get("timeoutMS", WAIT_TIMEOUT * 1000)) / 1000.0

        def changed() -> bool:
            primary = client.client.topology_description.primary
            return primary is not None and (old is None or primary.address != old)

        if not client.log.wait_until(changed, max(timeout, WAIT_TIMEOUT)):
            raise AssertionError(f"the primary did not change from {old}")

    def _assert_exists(self, name: str, args: Mapping[str, Any]) -> None:
        assert self.internal is not None
        database = self.internal[args["databaseName"]]
        if "Collection" in name:
            present = args["collectionName"] in database.list_collection_names()
        else:
            indexes = database[args["collectionName"]].list_index_names()
            present = args["indexName"] in indexes
        if present != ("Not" not in name):
            raise AssertionError(f"{name}: {dict(args)!r} (present: {present})")

    # --- expectEvents -----------------------------------------------------------------

    def _check_events(self, expected: Mapping[str, Any]) -> None:
        client = self.entities.client(expected["client"])
        family = expected.get("eventType", "command")
        assert_events(
            expected["events"],
            client.log.of_family(family),
            ignore_extra=bool(expected.get("ignoreExtraEvents", False)),
            entities=self.entities.lookup,
            label=f"{client.id} {family} events",
        )

    def _check_log_messages(self, expected: Mapping[str, Any]) -> None:
        client = self.entities.client(expected["client"])
        if client.log_messages is None:
            raise AssertionError(f"expectLogMessages for {client.id}, which observes none")
        assert_log_messages(
            expected,
            client.log_messages.messages(),
            entities=self.entities.lookup,
            label=f"{client.id} log messages",
        )

    def _check_no_txn_number_without_retry_writes(self) -> None:
        """retryable-writes seed: only with retryWrites on does a write outside a
        transaction carry a txnNumber."""
        for entity in self.entities.values():
            if isinstance(entity, ClientEntity) and not entity.retry_writes:
                with entity.log.cond:
                    # A transaction's commands (autocommit: false) carry its txnNumber.
                    sent = [
                        e
                        for e in entity.log.commands_sent
                        if "txnNumber" in e.command and e.command.get("autocommit") is not False
                    ]
                if sent:
                    raise AssertionError(
                        f"{entity.id} has retryWrites off yet sent a txnNumber: "
                        f"{[dict(e.command) for e in sent]!r}"
                    )


# --- expectedError ------------------------------------------------------------------------


def _error_parts(error: Exception) -> list[Mapping[str, Any]]:
    """The server responses an error carries (a bulk write error: its aggregated ones)."""
    parts: list[Mapping[str, Any]] = []
    if isinstance(error, OperationFailure):
        parts.append(error.details)
        if isinstance(error, BulkWriteError):
            parts.extend(error.details.get("writeErrors") or [])
            parts.extend(error.details.get("writeConcernErrors") or [])
    return parts


def _codes(error: Exception) -> set[int]:
    codes: set[int] = set()
    if isinstance(error, OperationFailure) and error.code is not None:
        codes.add(error.code)
    for part in _error_parts(error):
        code = part.get("code")
        if isinstance(code, int):
            codes.add(code)
        wce = part.get("writeConcernError")
        if isinstance(wce, Mapping) and isinstance(wce.get("code"), int):
            codes.add(wce["code"])
    return codes


def is_timeout_error(error: Exception) -> bool:
    """Is the error one of a time limit expiring (the format's isTimeoutError)? The
    error's own ``timeout``, as pymongo's ``PyMongoError.timeout``: a socket, server
    selection or wait queue timeout, a MaxTimeMSExpired of the command, of a bulk
    write's last error or of its write concern error (CSOT, "Error Transformations")."""
    return bool(getattr(error, "timeout", False))


def check_error(
    expected: Mapping[str, Any], error: Exception, entities: Optional[EntityMap] = None
) -> None:
    """expectedError: every assertion given must hold for ``error``."""
    lookup = entities.lookup if entities is not None else None
    for key, value in expected.items():
        if key == "isError":
            continue
        if key == "isClientError":
            is_client = not isinstance(error, OperationFailure)
            if is_client != bool(value):
                raise AssertionError(f"isClientError {value}, but the error is {error!r}")
        elif key == "isTimeoutError":
            if is_timeout_error(error) != bool(value):
                raise AssertionError(f"isTimeoutError {value}, but the error is {error!r}")
        elif key == "errorContains":
            texts = [getattr(error, "message", ""), str(error)]
            for part in _error_parts(error):
                texts.append(str(part.get("errmsg", "")))
            if not any(str(value).lower() in t.lower() for t in texts):
                raise AssertionError(f"the error {error!r} does not contain {value!r}")
        elif key == "errorCode":
            if int(value) not in _codes(error):
                raise AssertionError(f"expected error code {value}, the error is {error!r}")
        elif key == "errorCodeName":
            names = {str(p.get("codeName", "")).lower() for p in _error_parts(error)}
            for part in _error_parts(error):
                wce = part.get("writeConcernError")
                if isinstance(wce, Mapping):
                    names.add(str(wce.get("codeName", "")).lower())
            if str(value).lower() not in names:
                raise AssertionError(f"expected codeName {value}, the error is {error!r}")
        elif key == "errorLabelsContain":
            labels = set(getattr(error, "error_labels", ()))
            missing = [label for label in value if label not in labels]
            if missing:
                raise AssertionError(
                    f"the error lacks labels {missing}: {sorted(labels)} ({error!r})"
                )
        elif key == "errorLabelsOmit":
            present = [label for label in value if label in set(getattr(error, "error_labels", ()))]
            if present:
                raise AssertionError(f"the error has labels {present} ({error!r})")
        elif key == "errorResponse":
            if not isinstance(error, OperationFailure):
                raise AssertionError(f"expected a server response, the error is {error!r}")
            match(value, dict(error.details), lookup)
        elif key == "expectResult":
            if isinstance(error, BulkWriteError):
                partial: Optional[Mapping[str, Any]] = error.details
            else:
                partial = getattr(error, "partial_result", None)
            if partial is None:
                raise AssertionError(f"expected a partial result, the error is {error!r}")
            match(value, operations.bulk_error_result(partial), lookup)
        else:
            raise UnsupportedFeature(f"expectError.{key}")
