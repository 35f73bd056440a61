"""Commands in a transaction: what the retry executor changes in an operation of a
session running a transaction, and adds to each of its commands.

Spec: Transactions, "readPreference" (reads in a transaction use the transaction's,
which must be primary), "writeConcern" (the commit's write concern stands for every
write of the transaction), "Constructing commands within a transaction" (lsid,
txnNumber, autocommit, startTransaction and readConcern on the first command only,
with afterClusterTime in a causally consistent session: "Interaction with Causal
Consistency"; no writeConcern but on commit and abort) and "recoveryToken field".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mongocore.core.selection.read_preference import Mode
from mongocore.core.transaction_state import END_COMMANDS, Transaction
from mongocore.errors import InvalidOperation

if TYPE_CHECKING:
    from mongocore.api.client_session import ClientSession
    from mongocore.io.operation import Operation


def prepare_operation(op: Operation, transaction: Transaction) -> None:
    """Before an operation of the transaction selects a server.

    A read takes the transaction's read preference unless the operation was given
    its own, and refuses any but primary (client-side: the transaction's state does
    not change). Every write is acknowledged: the write concern is the commit's.
    The operation's read concern is the transaction's, on its first command only.
    """
    if op.read_preference is not None:
        if not op.explicit_read_preference:
            op.read_preference = transaction.settings.read_preference
        if op.read_preference.mode is not Mode.PRIMARY:
            raise InvalidOperation(
                "read preference in a transaction must be primary, not:"
                f" {op.read_preference.document()!r}"
            )
    op.acknowledged = True
    op.read_concern = None


def add_transaction_fields(
    body: dict[str, Any], command: str, transaction: Transaction, session: ClientSession
) -> None:
    """Add autocommit, startTransaction and readConcern (the caller adds lsid and
    txnNumber), and remove the writeConcern that the operation's collection, database
    or client would add: the server refuses one on any command of a transaction but
    commitTransaction and abortTransaction."""
    if command in END_COMMANDS:
        body["autocommit"] = False
        return
    body.pop("writeConcern", None)
    if transaction.first_command():
        body["startTransaction"] = True
        read_concern = dict(transaction.settings.read_concern)
        if session.causal_consistency and session.operation_time is not None:
            read_concern["afterClusterTime"] = session.operation_time
        if read_concern:
            body["readConcern"] = read_concern
    body["autocommit"] = False
