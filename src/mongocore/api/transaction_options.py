"""TransactionOptions (pymongo's ``pymongo.client_session.TransactionOptions``), and how
a transaction's settings are inherited.

Spec: Transactions, "TransactionOptions" (readConcern, writeConcern, readPreference,
maxCommitTimeMS) and "defaultTransactionOptions": each option not given to
startTransaction comes from the session's default transaction options, else from the
client. An unacknowledged write concern is refused, wherever it comes from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from mongocore.core.selection.read_preference import ReadPreference
from mongocore.core.transaction_state import TransactionSettings
from mongocore.errors import ConfigurationError
from mongocore.read_concern import ReadConcern
from mongocore.write_concern import WriteConcern

if TYPE_CHECKING:
    from mongocore.api.client import Client

_UNACKNOWLEDGED = "transactions do not support unacknowledged write concern"


class TransactionOptions:
    """Options for ``ClientSession.start_transaction`` and ``with_transaction``, or a
    session's ``default_transaction_options``. Every option left None is inherited.

    ``read_concern``: the read concern of the transaction (sent with its first
    command). ``write_concern``: the write concern of its commit and abort; it must
    be acknowledged. ``read_preference``: the reads' read preference, which must be
    primary when a read runs. ``max_commit_time_ms``: the commit's maxTimeMS.
    """

    __slots__ = ("_max_commit_time_ms", "_read_concern", "_read_preference", "_write_concern")

    def __init__(
        self,
        read_concern: Optional[ReadConcern] = None,
        write_concern: Optional[WriteConcern] = None,
        read_preference: Optional[ReadPreference] = None,
        max_commit_time_ms: Optional[int] = None,
    ) -> None:
        if read_concern is not None and not isinstance(read_concern, ReadConcern):
            raise TypeError(f"read_concern must be a ReadConcern, not {type(read_concern)!r}")
        if write_concern is not None:
            if not isinstance(write_concern, WriteConcern):
                raise TypeError(
                    f"write_concern must be a WriteConcern, not {type(write_concern)!r}"
                )
            if not write_concern.acknowledged:
                raise ConfigurationError(f"{_UNACKNOWLEDGED}: {write_concern!r}")
        if read_preference is not None and not isinstance(read_preference, ReadPreference):
            raise TypeError(
                f"read_preference must be a read preference (Primary(), ...), not"
                f" {type(read_preference)!r}"
            )
        if max_commit_time_ms is not None and (
            isinstance(max_commit_time_ms, bool) or not isinstance(max_commit_time_ms, int)
        ):
            raise TypeError(f"max_commit_time_ms must an integer, not {max_commit_time_ms!r}")
        self._read_concern = read_concern
        self._write_concern = write_concern
        self._read_preference = read_preference
        self._max_commit_time_ms = max_commit_time_ms

    @property
    def read_concern(self) -> Optional[ReadConcern]:
        return self._read_concern

    @property
    def write_concern(self) -> Optional[WriteConcern]:
        return self._write_concern

    @property
    def read_preference(self) -> Optional[ReadPreference]:
        return self._read_preference

    @property
    def max_commit_time_ms(self) -> Optional[int]:
        return self._max_commit_time_ms

    def __repr__(self) -> str:
        return (
            f"TransactionOptions(read_concern={self._read_concern!r}, write_concern="
            f"{self._write_concern!r}, read_preference={self._read_preference!r},"
            f" max_commit_time_ms={self._max_commit_time_ms!r})"
        )


def resolve_settings(
    given: TransactionOptions, defaults: Optional[TransactionOptions], client: Client
) -> TransactionSettings:
    """The settings of a transaction: each option from ``given``, else ``defaults``,
    else ``client``. Raises ConfigurationError for an unacknowledged write concern
    (a client's ``w=0`` included)."""
    fallback = defaults or TransactionOptions()
    read_concern = given.read_concern or fallback.read_concern or client.read_concern
    write_concern = given.write_concern or fallback.write_concern or client.write_concern
    read_preference = given.read_preference or fallback.read_preference or client.read_preference
    max_commit = given.max_commit_time_ms
    if max_commit is None:
        max_commit = fallback.max_commit_time_ms
    if not write_concern.acknowledged:
        raise ConfigurationError(f"{_UNACKNOWLEDGED}: {write_concern!r}")
    return TransactionSettings(
        read_concern=read_concern.document,
        write_concern=write_concern.document,
        read_preference=read_preference,
        max_commit_time_ms=max_commit,
    )
