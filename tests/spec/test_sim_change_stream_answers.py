"""The simulator's change streams against the official change-streams suite (unified
format), with pymongo as the client.

The suite runs through pymongo, an independent implementation of the client side of
the spec, so what is checked is what the simulated 7.0 server answers (mongocore's own
change streams run the suite in tests/spec/unified/test_change_streams_unified.py).
Each test runs on every simulated topology its ``runOnRequirements``
(of the file and of the test) allow for a 7.0.12 server: a replica set, a sharded
cluster (one mongos), a load-balanced mongos, a standalone. The runner knows the
entities and operations the suite uses (clients with command monitoring, databases,
collections; createChangeStream, iterateUntilDocumentOrError, the CRUD writes,
createCollection, dropCollection, rename, createIndex, dropIndex, runCommand,
failPoint) and checks
``expectResult``, ``expectError`` and ``expectEvents`` (commandStartedEvent) with the
unified format's matching rules.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Optional, Union

import pytest

pytest.importorskip("pyuca")

from pymongo import MongoClient, monitoring
from pymongo.change_stream import ChangeStream
from pymongo.errors import OperationFailure, PyMongoError
from pymongo.write_concern import WriteConcern

from mongocore.sim import LoadBalanced, ReplicaSet, ShardedCluster, Standalone
from tests.spec import specdata
from tests.spec.unified.matching import match

SUITE = "change-streams/tests/unified"
SERVER_VERSION = (7, 0, 12)
TOPOLOGIES = ("replicaset", "sharded", "load-balanced", "single")
ALL_TOPOLOGIES = ("single", "replicaset", "sharded", "load-balanced")
DEADLINE = 20.0
Deployment = Union[ReplicaSet, ShardedCluster, Standalone]


def _version(text: str) -> tuple[int, ...]:
    parts = [int(p) for p in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def _options(arguments: Mapping[str, Any], *taken: str) -> dict[str, Any]:
    """An operation's other arguments, as pymongo's keyword arguments (the unified
    format's camelCase names are the server's, which pymongo passes on)."""
    return {key: value for key, value in arguments.items() if key not in taken}


def _allows(requirement: Mapping[str, Any], topology: str) -> bool:
    if topology not in requirement.get("topologies", ALL_TOPOLOGIES):
        return False
    lowest = requirement.get("minServerVersion")
    if lowest is not None and _version(lowest) > SERVER_VERSION:
        return False
    highest = requirement.get("maxServerVersion")
    if highest is not None and _version(highest) < SERVER_VERSION:
        return False
    return bool(requirement.get("serverless", "allow") != "require")


def _runs_on(requirements: Any, topology: str) -> bool:
    return any(_allows(r, topology) for r in requirements or [{}])


def _cases() -> list[Any]:
    params: list[Any] = []
    for file_param in specdata.json_files(SUITE):
        path: Optional[Path] = file_param.values[0]
        if path is None:
            params.append(file_param)
            continue
        document = specdata.load_extended(path)
        for index, test in enumerate(document["tests"]):
            for topology in TOPOLOGIES:
                if _runs_on(document.get("runOnRequirements"), topology) and _runs_on(
                    test.get("runOnRequirements"), topology
                ):
                    params.append(
                        pytest.param(
                            (path, index, topology),
                            id=f"{path.stem}-{index}-{topology}",
                        )
                    )
    return params


@contextmanager
def _deployment(topology: str) -> Iterator[Deployment]:
    if topology == "replicaset":
        with ReplicaSet(1, election_delay=0.02) as rs:
            yield rs
    elif topology == "sharded":
        with ShardedCluster(1, shard_members=1, election_delay=0.02) as cluster:
            yield cluster
    elif topology == "load-balanced":
        with LoadBalanced(shard_members=1, election_delay=0.02) as balanced:
            yield balanced
    else:
        with Standalone() as standalone:
            yield standalone


class _Observer(monitoring.CommandListener):
    def __init__(self, observed: bool, ignored: set[str]) -> None:
        self.observed = observed
        self.ignored = ignored
        self.events: list[monitoring.CommandStartedEvent] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.observed and event.command_name not in self.ignored:
            self.events.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


class _Runner:
    def __init__(self, uri: str, stack: ExitStack) -> None:
        self.uri = uri
        self.stack = stack
        self.entities: dict[str, Any] = {}
        self.observers: dict[str, _Observer] = {}

    def create(self, specs: list[Mapping[str, Any]]) -> None:
        for spec in specs:
            ((kind, options),) = spec.items()
            if kind == "client":
                observer = _Observer(
                    "commandStartedEvent" in options.get("observeEvents", ()),
                    set(options.get("ignoreCommandMonitoringEvents", ())),
                )
                # Short heartbeats: a client that marked the server unknown after an
                # error finds it again quickly.
                client: MongoClient[dict[str, Any]] = MongoClient(
                    self.uri, event_listeners=[observer], heartbeatFrequencyMS=500
                )
                self.stack.callback(client.close)
                self.entities[options["id"]] = client
                self.observers[options["id"]] = observer
            elif kind == "database":
                client = self.entities[options["client"]]
                self.entities[options["id"]] = client[options["databaseName"]]
            elif kind == "collection":
                database = self.entities[options["database"]]
                self.entities[options["id"]] = database[options["collectionName"]]
            else:
                raise AssertionError(f"entity {kind} is not used by this suite")

    def seed(self, data: list[Mapping[str, Any]]) -> None:
        setup: MongoClient[dict[str, Any]] = MongoClient(self.uri)
        try:
            for collection in data:
                db = setup.get_database(
                    collection["databaseName"], write_concern=WriteConcern(w="majority")
                )
                db.drop_collection(collection["collectionName"])
                db.create_collection(collection["collectionName"])
                if collection["documents"]:
                    db[collection["collectionName"]].insert_many(collection["documents"])
        finally:
            setup.close()

    def run(self, operation: Mapping[str, Any]) -> None:
        expect_error = operation.get("expectError")
        try:
            result = self._execute(operation)
        except PyMongoError as exc:
            assert expect_error is not None, f"{operation['name']} failed: {exc!r}"
            _check_error(expect_error, exc)
            return
        assert expect_error is None, f"{operation['name']} succeeded: {result!r}"
        if "expectResult" in operation:
            match(operation["expectResult"], result)
        if "saveResultAsEntity" in operation:
            self.entities[operation["saveResultAsEntity"]] = result

    def _execute(self, operation: Mapping[str, Any]) -> Any:
        name = operation["name"]
        arguments = dict(operation.get("arguments") or {})
        target: Any = self.entities.get(operation["object"])
        if name == "createChangeStream":
            return target.watch(
                arguments.pop("pipeline", []), **{_snake(k): v for k, v in arguments.items()}
            )
        if name == "iterateUntilDocumentOrError":
            return _next(target)
        if name == "failPoint":
            self.entities[arguments["client"]].admin.command(arguments["failPoint"])
            return None
        if name == "insertOne":
            return target.insert_one(arguments["document"])
        if name == "updateOne":
            return target.update_one(arguments["filter"], arguments["update"])
        if name == "replaceOne":
            return target.replace_one(arguments["filter"], arguments["replacement"])
        if name == "deleteOne":
            return target.delete_one(arguments["filter"])
        if name == "dropCollection":
            return target.drop_collection(arguments["collection"])
        if name == "createCollection":
            collection = arguments.pop("collection")
            return target.create_collection(collection, **arguments)
        if name == "rename":
            return target.rename(arguments["to"], **_options(arguments, "to"))
        if name == "createIndex":
            return target.create_index(
                list(arguments["keys"].items()), **_options(arguments, "keys")
            )
        if name == "dropIndex":
            return target.drop_index(arguments["name"])
        if name == "runCommand":
            return target.command(arguments["command"])
        raise AssertionError(f"operation {name} is not used by this suite")

    def check_events(self, expected: list[Mapping[str, Any]]) -> None:
        for expectation in expected:
            actual = self.observers[expectation["client"]].events
            wanted = expectation["events"]
            if not expectation.get("ignoreExtraEvents", False):
                assert len(actual) == len(wanted), [e.command_name for e in actual]
            assert len(actual) >= len(wanted), [e.command_name for e in actual]
            for want, event in zip(wanted, actual):
                started = want["commandStartedEvent"]
                if "commandName" in started:
                    assert event.command_name == started["commandName"]
                if "databaseName" in started:
                    assert event.database_name == started["databaseName"]
                if "command" in started:
                    match(started["command"], event.command)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def _next(stream: ChangeStream[Any]) -> Any:
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        change = stream.try_next()
        if change is not None:
            return change
    raise AssertionError("no change event before the deadline")


def _check_error(expect: Mapping[str, Any], exc: PyMongoError) -> None:
    if expect.get("isClientError") is False or "errorCode" in expect:
        assert isinstance(exc, OperationFailure), repr(exc)
    if "errorCode" in expect:
        assert isinstance(exc, OperationFailure) and exc.code == expect["errorCode"], repr(exc)
    if "errorCodeName" in expect:
        assert isinstance(exc, OperationFailure)
        assert (exc.details or {}).get("codeName") == expect["errorCodeName"], repr(exc)
    for label in expect.get("errorLabelsContain", ()):
        assert exc.has_error_label(label), (label, repr(exc))
    for label in expect.get("errorLabelsOmit", ()):
        assert not exc.has_error_label(label), (label, repr(exc))


@pytest.mark.parametrize("case", _cases())
def test_change_stream_answers(case: Optional[tuple[Path, int, str]]) -> None:
    assert case is not None
    path, index, topology = case
    document = specdata.load_extended(path)
    test = document["tests"][index]
    with _deployment(topology) as deployment, ExitStack() as stack:
        runner = _Runner(deployment.uri, stack)
        runner.create(document["createEntities"])
        runner.seed(document.get("initialData", []))
        for operation in test["operations"]:
            runner.run(operation)
        runner.check_events(test.get("expectEvents", []))
