"""ClientSession.with_transaction: run a callback in a transaction, and retry.

Spec: Convenient API for Transactions, "ClientSession.withTransaction" ("Sequence of
Actions" and its pseudo-code). The whole call is bounded by 120 seconds (there is no
timeoutMS for it): after that, the last error is raised as it is, with its labels,
instead of trying again. Retries of the whole transaction back off with jitter
(5 ms growing by 1.5x per attempt, at most 500 ms).

The callback may run several times (once per attempt): it must be safe to repeat,
and it must let the errors of its operations propagate: a command error may have
aborted the transaction on the server, and a callback swallowing it would make the
commit fail with NoSuchTransaction, labeled TransientTransactionError, again and
again until the time limit.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Callable, Optional, TypeVar

from mongocore.core.transaction_rules import (
    TRANSIENT_TRANSACTION_ERROR,
    UNKNOWN_TRANSACTION_COMMIT_RESULT,
    is_max_time_ms_expired,
)
from mongocore.errors import MongoCoreError

if TYPE_CHECKING:
    from mongocore.api.client_session import ClientSession
    from mongocore.api.transaction_options import TransactionOptions

_T = TypeVar("_T")

#: The spec's limit on retrying, when no timeoutMS applies (seconds).
WITH_TRANSACTION_TIME_LIMIT = 120.0
#: Backoff before retrying the whole transaction (seconds): first, growth, cap.
BACKOFF_INITIAL = 0.005
BACKOFF_GROWTH = 1.5
BACKOFF_MAX = 0.5


def _has_label(error: BaseException, label: str) -> bool:
    return isinstance(error, MongoCoreError) and error.has_error_label(label)


def backoff(attempt: int, jitter: float) -> float:
    """The pause before transaction attempt ``attempt + 1`` (``attempt >= 1``);
    ``jitter`` is uniform in [0, 1)."""
    return jitter * min(BACKOFF_INITIAL * BACKOFF_GROWTH ** (attempt - 1), BACKOFF_MAX)


def run_with_transaction(
    session: ClientSession,
    callback: Callable[[ClientSession], _T],
    options: TransactionOptions,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    jitter: Callable[[], float] = random.random,
) -> _T:
    """The spec's sequence of actions (``clock``, ``sleep`` and ``jitter`` are the
    monotonic clock, the pause and the random source, replaceable for tests)."""
    start = clock()
    attempt = 0
    last_error: Optional[BaseException] = None
    while True:
        if attempt > 0:
            pause = backoff(attempt, jitter())
            if clock() + pause - start >= WITH_TRANSACTION_TIME_LIMIT:
                assert last_error is not None
                raise last_error
            sleep(pause)
        session.start_transaction(
            options.read_concern,
            options.write_concern,
            options.read_preference,
            options.max_commit_time_ms,
        )
        attempt += 1
        try:
            result = callback(session)
        except BaseException as exc:
            last_error = exc
            if session.in_transaction:
                session.abort_transaction()
            if _has_label(exc, TRANSIENT_TRANSACTION_ERROR) and (
                clock() - start < WITH_TRANSACTION_TIME_LIMIT
            ):
                continue
            raise
        if not session.in_transaction:
            # The callback committed or aborted the transaction itself.
            return result
        while True:
            try:
                session.commit_transaction()
            except MongoCoreError as exc:
                last_error = exc
                if clock() - start >= WITH_TRANSACTION_TIME_LIMIT:
                    raise
                if not is_max_time_ms_expired(exc) and exc.has_error_label(
                    UNKNOWN_TRANSACTION_COMMIT_RESULT
                ):
                    continue  # the commit is sent again, with a majority write concern
                if exc.has_error_label(TRANSIENT_TRANSACTION_ERROR):
                    break  # the whole transaction again
                raise
            return result
