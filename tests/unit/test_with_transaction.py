"""ClientSession.with_transaction's retry rules (Convenient API for Transactions,
"Sequence of Actions"), on a scripted session and a fake clock:
mongocore.api.with_transaction."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable, Optional

import pytest

from mongocore.api.transaction_options import TransactionOptions
from mongocore.api.with_transaction import (
    BACKOFF_MAX,
    WITH_TRANSACTION_TIME_LIMIT,
    backoff,
    run_with_transaction,
)
from mongocore.core.transaction_rules import (
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
)
from mongocore.errors import OperationFailure


def _error(code: int, *labels: str) -> OperationFailure:
    return OperationFailure("failed", code, {"ok": 0, "code": code}, labels)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class ScriptedSession:
    """A session whose commits fail as scripted; it records what was called."""

    def __init__(self, commit_errors: Optional[list[Exception]] = None) -> None:
        self.calls: list[str] = []
        self.active = False
        self.commit_errors: Iterator[Exception] = iter(commit_errors or [])
        self.options: list[Any] = []

    @property
    def in_transaction(self) -> bool:
        return self.active

    def start_transaction(self, *options: Any) -> None:
        self.calls.append("start")
        self.options.append(options)
        self.active = True

    def abort_transaction(self) -> None:
        self.calls.append("abort")
        self.active = False

    def commit_transaction(self) -> None:
        self.calls.append("commit")
        self.active = False
        error = next(self.commit_errors, None)
        if error is not None:
            raise error


def _run(
    session: ScriptedSession,
    callback: Callable[[Any], Any],
    clock: FakeClock,
    options: Optional[TransactionOptions] = None,
) -> Any:
    return run_with_transaction(
        session,  # type: ignore[arg-type]
        callback,
        options or TransactionOptions(),
        clock=clock,
        sleep=clock.sleep,
        jitter=lambda: 0.5,
    )


def test_the_callbacks_result_is_returned_after_one_commit() -> None:
    session, clock = ScriptedSession(), FakeClock()
    options = TransactionOptions(max_commit_time_ms=7)
    assert _run(session, lambda s: 42, clock, options) == 42
    assert session.calls == ["start", "commit"]
    assert session.options == [(None, None, None, 7)]
    assert clock.slept == []


def test_a_transient_error_of_the_callback_runs_the_transaction_again() -> None:
    session, clock = ScriptedSession(), FakeClock()
    failures = [_error(112, TRANSIENT_TRANSACTION_ERROR)] * 2

    def callback(_: Any) -> str:
        if failures:
            raise failures.pop()
        return "done"

    assert _run(session, callback, clock) == "done"
    assert session.calls == ["start", "abort", "start", "abort", "start", "commit"]
    assert clock.slept == [backoff(1, 0.5), backoff(2, 0.5)]


def test_other_callback_errors_abort_and_propagate() -> None:
    session, clock = ScriptedSession(), FakeClock()
    duplicate = _error(11000)

    def callback(_: Any) -> None:
        raise duplicate

    with pytest.raises(OperationFailure) as raised:
        _run(session, callback, clock)
    assert raised.value is duplicate
    assert session.calls == ["start", "abort"]


def test_an_application_exception_propagates_as_it_is() -> None:
    session, clock = ScriptedSession(), FakeClock()

    def callback(_: Any) -> None:
        raise KeyError("mine")

    with pytest.raises(KeyError):
        _run(session, callback, clock)
    assert session.calls == ["start", "abort"]


def test_a_callback_that_ends_the_transaction_itself_is_not_committed_again() -> None:
    session, clock = ScriptedSession(), FakeClock()

    def callback(s: ScriptedSession) -> int:
        s.abort_transaction()
        return 1

    assert _run(session, callback, clock) == 1
    assert session.calls == ["start", "abort"]


def test_an_unknown_commit_result_commits_again() -> None:
    unknown = _error(91, UNKNOWN_TRANSACTION_COMMIT_RESULT)
    session, clock = ScriptedSession([unknown, unknown]), FakeClock()
    assert _run(session, lambda s: None, clock) is None
    assert session.calls == ["start", "commit", "commit", "commit"]


def test_max_time_ms_expired_is_never_committed_again() -> None:
    expired = _error(50, UNKNOWN_TRANSACTION_COMMIT_RESULT)
    session, clock = ScriptedSession([expired]), FakeClock()
    with pytest.raises(OperationFailure) as raised:
        _run(session, lambda s: None, clock)
    assert raised.value is expired
    assert session.calls == ["start", "commit"]


def test_a_transient_commit_error_runs_the_whole_transaction_again() -> None:
    transient = _error(251, TRANSIENT_TRANSACTION_ERROR)
    session, clock = ScriptedSession([transient]), FakeClock()
    runs: list[int] = []
    _run(session, lambda s: runs.append(1), clock)
    assert runs == [1, 1]
    assert session.calls == ["start", "commit", "start", "commit"]


def test_retrying_stops_at_the_time_limit_with_the_last_error() -> None:
    session, clock = ScriptedSession(), FakeClock()
    errors: list[OperationFailure] = []

    def callback(_: Any) -> None:
        clock.now += 50.0
        errors.append(_error(112, TRANSIENT_TRANSACTION_ERROR))
        raise errors[-1]

    with pytest.raises(OperationFailure) as raised:
        _run(session, callback, clock)
    assert raised.value is errors[-1]
    assert len(errors) == 3  # 50 s, 100 s, then 150 s > 120 s: not again
    assert session.calls.count("start") == 3


def test_an_unknown_commit_result_after_the_time_limit_is_raised() -> None:
    unknown = _error(91, UNKNOWN_TRANSACTION_COMMIT_RESULT)
    session, clock = ScriptedSession([unknown] * 10), FakeClock()

    def callback(_: Any) -> None:
        clock.now += WITH_TRANSACTION_TIME_LIMIT

    with pytest.raises(OperationFailure) as raised:
        _run(session, callback, clock)
    assert raised.value is unknown
    assert session.calls == ["start", "commit"]


def test_backoff_grows_by_half_and_is_capped() -> None:
    assert backoff(1, 1.0) == pytest.approx(0.005)
    assert backoff(2, 1.0) == pytest.approx(0.0075)
    assert backoff(3, 0.5) == pytest.approx(0.005 * 1.5**2 * 0.5)
    assert backoff(30, 1.0) == BACKOFF_MAX
    assert backoff(5, 0.0) == 0.0
