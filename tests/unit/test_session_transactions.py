"""The transaction API of a ClientSession without a server: TransactionOptions, how a
transaction's settings are inherited, start_transaction's refusals, and the commands
a transaction adds to (mongocore.api.transaction_options,
mongocore.api.session_transactions, mongocore.io.transaction_commands).
tests/spec/unified/test_transactions_unified.py and
tests/integration/test_transactions_interop_sim.py run transactions against servers."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pymongo.client_session
import pytest
from bson import Timestamp

import mongocore.client_session
from mongocore.api.client import Client
from mongocore.api.transaction_options import TransactionOptions
from mongocore.core.retry_policy import RetryKind
from mongocore.core.selection.read_preference import Mode, ReadPreference
from mongocore.core.transaction_state import TransactionState
from mongocore.errors import ConfigurationError, InvalidOperation
from mongocore.io.operation import Command, Operation, new_operation
from mongocore.io.transaction_commands import add_transaction_fields, prepare_operation
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

NO_SERVER = "mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100"


@pytest.fixture
def client() -> Iterator[Client]:
    # Nothing here sends a command: the client never needs its server.
    with Client(NO_SERVER, readConcernLevel="local", w=1) as created:
        yield created


def test_transaction_options_check_their_types_and_refuse_w_0() -> None:
    options = TransactionOptions(ReadConcern("majority"), WriteConcern(2), None, 500)
    assert options.read_concern == ReadConcern("majority")
    assert options.write_concern == WriteConcern(2)
    assert options.read_preference is None and options.max_commit_time_ms == 500
    with pytest.raises(ConfigurationError, match="unacknowledged write concern"):
        TransactionOptions(write_concern=WriteConcern(0))
    with pytest.raises(TypeError):
        TransactionOptions(read_concern="majority")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        TransactionOptions(max_commit_time_ms=True)


def test_options_come_from_start_transaction_else_the_session_else_the_client(
    client: Client,
) -> None:
    defaults = TransactionOptions(
        read_concern=ReadConcern("snapshot"),
        read_preference=ReadPreference(Mode.SECONDARY),
        max_commit_time_ms=100,
    )
    with client.start_session(default_transaction_options=defaults) as session:
        session.start_transaction(write_concern=WriteConcern("majority"))
        settings = session._transaction.settings  # type: ignore[union-attr]
        assert settings.read_concern == {"level": "snapshot"}
        assert settings.write_concern == {"w": "majority"}
        assert settings.read_preference.mode is Mode.SECONDARY
        assert settings.max_commit_time_ms == 100
        session.abort_transaction()
        session.start_transaction(read_concern=ReadConcern("majority"), max_commit_time_ms=0)
        settings = session._transaction.settings  # type: ignore[union-attr]
        assert settings.read_concern == {"level": "majority"}
        assert settings.write_concern == {"w": 1}  # the client's
        assert settings.max_commit_time_ms == 0
        session.abort_transaction()


def test_a_clients_unacknowledged_write_concern_refuses_to_start(client: Client) -> None:
    with Client(NO_SERVER, w=0) as unacknowledged, unacknowledged.start_session() as session:
        with pytest.raises(ConfigurationError, match="unacknowledged write concern"):
            session.start_transaction()
        assert session.transaction_state is TransactionState.NONE
        assert not session.in_transaction
        session.start_transaction(write_concern=WriteConcern(1))
        assert session.in_transaction


def test_start_transaction_increments_the_txn_number_and_refuses_a_second(
    client: Client,
) -> None:
    with client.start_session() as session:
        session.start_transaction()
        assert session.txn_number == 1
        with pytest.raises(InvalidOperation, match="already in progress"):
            session.start_transaction()
        assert session.txn_number == 1
        session.commit_transaction()  # nothing was sent: nothing to commit
        assert session.transaction_state is TransactionState.COMMITTED_EMPTY
        session.start_transaction()
        assert session.txn_number == 2


def test_snapshot_sessions_and_ended_sessions_run_no_transaction(client: Client) -> None:
    snapshot = client.start_session(snapshot=True)
    with pytest.raises(InvalidOperation, match="snapshot sessions"):
        snapshot.start_transaction()
    snapshot.end_session()
    session = client.start_session()
    session.end_session()
    with pytest.raises(InvalidOperation, match="ended"):
        session.start_transaction()
    with pytest.raises(InvalidOperation):
        session.commit_transaction()


def test_the_with_block_commits_on_success_and_aborts_on_an_exception(client: Client) -> None:
    with client.start_session() as session:
        with session.start_transaction():
            assert session.in_transaction
        assert session.transaction_state is TransactionState.COMMITTED_EMPTY
        with pytest.raises(RuntimeError), session.start_transaction():
            raise RuntimeError("the application's")
        assert session.transaction_state is TransactionState.ABORTED
        with session.start_transaction():
            session.abort_transaction()  # ended in the block: nothing more on exit
        assert session.transaction_state is TransactionState.ABORTED


def _operation(session: Any, read_preference: Any, *, explicit: bool = False) -> Operation:
    return new_operation(
        name="find",
        database="db",
        build=lambda ctx: Command({"find": "c"}),
        session=session,
        retry=RetryKind.READ,
        read_preference=read_preference,
        read_concern={"level": "majority"},
        acknowledged=False,
        explicit_read_preference=explicit,
    )


def test_reads_in_a_transaction_use_its_read_preference_which_must_be_primary(
    client: Client,
) -> None:
    with client.start_session() as session:
        session.start_transaction(read_preference=ReadPreference(Mode.PRIMARY))
        transaction = session._transaction_for("find")
        assert transaction is not None
        op = _operation(session, ReadPreference(Mode.SECONDARY))
        prepare_operation(op, transaction)  # the collection's is overridden
        assert op.read_preference is not None and op.read_preference.mode is Mode.PRIMARY
        assert op.acknowledged and op.read_concern is None
        explicit = _operation(session, ReadPreference(Mode.NEAREST), explicit=True)
        with pytest.raises(InvalidOperation, match="must be primary"):
            prepare_operation(explicit, transaction)
        assert session.transaction_state is TransactionState.STARTING
        write = _operation(session, None)
        prepare_operation(write, transaction)  # writes are never checked
        session.abort_transaction()
        session.start_transaction(read_preference=ReadPreference(Mode.SECONDARY))
        transaction = session._transaction_for("find")
        assert transaction is not None
        with pytest.raises(InvalidOperation, match="must be primary"):
            prepare_operation(_operation(session, ReadPreference(Mode.PRIMARY)), transaction)
        session.abort_transaction()


def test_the_fields_of_the_first_command_and_of_the_others(client: Client) -> None:
    with client.start_session() as session:
        session.advance_operation_time(Timestamp(5, 1))
        session.start_transaction(read_concern=ReadConcern("snapshot"))
        transaction = session._transaction_for("insert")
        assert transaction is not None
        first: dict[str, Any] = {"insert": "c", "writeConcern": {"w": 2}}
        add_transaction_fields(first, "insert", transaction, session)
        assert first == {
            "insert": "c",
            "startTransaction": True,
            "readConcern": {"level": "snapshot", "afterClusterTime": Timestamp(5, 1)},
            "autocommit": False,
        }
        second: dict[str, Any] = {"find": "c", "writeConcern": {"w": 2}}
        add_transaction_fields(second, "find", transaction, session)
        assert second == {"find": "c", "autocommit": False}
        commit: dict[str, Any] = {"commitTransaction": 1, "writeConcern": {"w": "majority"}}
        add_transaction_fields(commit, "commitTransaction", transaction, session)
        assert commit == {
            "commitTransaction": 1,
            "writeConcern": {"w": "majority"},
            "autocommit": False,
        }
        session.abort_transaction()


def test_a_session_that_is_not_causally_consistent_sends_no_after_cluster_time(
    client: Client,
) -> None:
    with client.start_session(causal_consistency=False) as session:
        session.advance_operation_time(Timestamp(5, 1))
        session.start_transaction()
        transaction = session._transaction_for("insert")
        assert transaction is not None
        body: dict[str, Any] = {"insert": "c"}
        add_transaction_fields(body, "insert", transaction, session)
        assert body == {
            "insert": "c",
            "startTransaction": True,
            "readConcern": {"level": "local"},  # the client's, without afterClusterTime
            "autocommit": False,
        }
        session.abort_transaction()


def test_the_names_and_parameters_are_pymongos() -> None:
    assert mongocore.client_session.TransactionOptions is TransactionOptions
    pairs = [
        (TransactionOptions.__init__, pymongo.client_session.TransactionOptions.__init__),
        (
            mongocore.client_session.ClientSession.start_transaction,
            pymongo.client_session.ClientSession.start_transaction,
        ),
        (
            mongocore.client_session.ClientSession.with_transaction,
            pymongo.client_session.ClientSession.with_transaction,
        ),
    ]
    for ours, theirs in pairs:
        assert list(inspect.signature(ours).parameters) == list(
            inspect.signature(theirs).parameters
        ), ours
    for name in ("commit_transaction", "abort_transaction", "in_transaction"):
        assert hasattr(mongocore.client_session.ClientSession, name)
