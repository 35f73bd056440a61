"""What the simulator knows of each command: one :class:`Command` entry per command.

Every command a simulated mongod or mongos answers has one entry in
:data:`mongocore.sim.command_table.REGISTRY`, and the entry says everything the command
pipeline (:mod:`mongocore.sim.command_pipeline`) asks about it:

- ``name`` and ``aliases`` (``isMaster`` and ``ismaster``; ``buildinfo``);
- ``stage``: who answers it. ``DATA`` commands are run by ``handler`` (a function of a
  :class:`~mongocore.sim.commands.CommandContext` returning the reply), after the
  mongod's role, transaction and retryable-write steps or, on a mongos, after the
  router decided where it runs; ``REPLICA_SET`` commands too, on an initiated set's
  member only. The other stages are answered by the process itself, before any of
  that: ``HANDSHAKE`` (hello), ``FAIL_POINTS`` (configureFailPoint),
  ``AUTHENTICATION`` (the SASL conversation, ``authenticate``, ``logout``),
  ``CONTROL`` (``simControl``), ``TRANSACTION`` (what ends a transaction: its
  commands go to the transaction table, or on a mongos to its router);
- where it may run: ``deployments`` (a standalone, a replica-set member, a mongos;
  elsewhere it is CommandNotFound) and ``kind``, the role rule of a replica-set
  member: ``write`` on the primary only, ``read`` on a secondary too when the read
  preference allows it, ``cursor`` wherever its cursor is, ``any`` in any state (an
  arbiter's, a removed member's); ``admin_only``; on a mongos, ``on_mongos``: routed to
  the shard, or answered by the router itself (with ``mongos_handler`` if it answers
  differently from a mongod);
- its transaction rule, ``transaction``: ``NO`` (OperationNotSupportedInTransaction),
  ``STATEMENT`` (may run in a transaction, and start one), ``END`` (runs only in a
  transaction, and never as its first command); ``retryable_write`` (may carry a
  txnNumber outside a transaction);
- its authorization rule, ``requires_auth`` (with users, refused before login), and
  ``api_version_1`` (in the Stable API's version 1, so accepted with ``apiStrict``);
- ``fields``: the command's own top-level fields. With a list, any other field that is
  not one of the :data:`GENERIC_ARGUMENTS` every command accepts is refused, as a 7.0
  server's IDL parser refuses it (40415, "BSON field 'aggregate.foo' is an unknown
  field."); ``None`` for a command the server parses leniently.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Callable, Optional

from mongocore.sim.codes import CommandError
from mongocore.sim.commands import Handler

__all__ = [
    "ALL_DEPLOYMENTS",
    "AUTHENTICATION",
    "CONTROL",
    "DATA",
    "END",
    "FAIL_POINTS",
    "GENERIC_ARGUMENTS",
    "HANDSHAKE",
    "LOCAL",
    "MONGOD",
    "MONGOS",
    "NO",
    "REPLICA_SET",
    "REPLICA_SET_MEMBER",
    "ROUTED",
    "STANDALONE",
    "STATEMENT",
    "TRANSACTION",
    "Command",
    "Registry",
]

# -- stages: who answers a command -------------------------------------------------------

HANDSHAKE = "handshake"
FAIL_POINTS = "fail points"
AUTHENTICATION = "authentication"
CONTROL = "control"
TRANSACTION = "transaction"
REPLICA_SET = "replica set"
DATA = "data"
#: The stages the process answers itself, before roles, transactions and data.
PROCESS_STAGES = frozenset({HANDSHAKE, FAIL_POINTS, AUTHENTICATION, CONTROL})
_STAGES = PROCESS_STAGES | {TRANSACTION, REPLICA_SET, DATA}

# -- deployments: where a command exists -------------------------------------------------

STANDALONE = "standalone"
REPLICA_SET_MEMBER = "replicaSet"
MONGOS = "mongos"
MONGOD = frozenset({STANDALONE, REPLICA_SET_MEMBER})
ALL_DEPLOYMENTS = frozenset({STANDALONE, REPLICA_SET_MEMBER, MONGOS})

# -- on a mongos -------------------------------------------------------------------------

ROUTED = "routed"  # sent to the shard
LOCAL = "local"  # answered by the router

# -- transactions ------------------------------------------------------------------------

NO = "no"
STATEMENT = "statement"
END = "end"

_KINDS = frozenset({"read", "write", "cursor", "any"})

#: The arguments every command accepts besides its own (the server's generic argument
#: list, generic_argument.idl, 7.0): the ones drivers send, and those the servers of a
#: cluster send one another, which a client never does but a server accepts.
GENERIC_ARGUMENTS = frozenset(
    {
        "$db",
        "apiVersion",
        "apiStrict",
        "apiDeprecationErrors",
        "maxTimeMS",
        "readConcern",
        "writeConcern",
        "lsid",
        "txnNumber",
        "autocommit",
        "startTransaction",
        "stmtId",
        "comment",
        "$readPreference",
        "$clusterTime",
        "clientOperationKey",
        "$audit",
        "$client",
        "$configServerState",
        "allowImplicitCollectionCreation",
        "$oplogQueryData",
        "$queryOptions",
        "$replData",
        "$gleStats",
        "databaseVersion",
        "shardVersion",
        "tracking_info",
        "coordinator",
        "maxTimeMSOpOnly",
        "$configTime",
        "$topologyTime",
        "txnRetryCounter",
        "mayBypassWriteBlocking",
        "usesDefaultMaxTimeMS",
        "help",
    }
)

KindFor = Callable[[Mapping[str, object]], str]


@dataclass(frozen=True)
class Command:
    """One command: its names, who answers it, where it runs, and its rules."""

    name: str
    handler: Optional[Handler] = None
    stage: str = DATA
    kind: str = "any"
    aliases: tuple[str, ...] = ()
    deployments: frozenset[str] = ALL_DEPLOYMENTS
    on_mongos: str = ROUTED
    mongos_handler: Optional[Handler] = None
    admin_only: bool = False
    transaction: str = NO
    retryable_write: bool = False
    requires_auth: bool = True
    api_version_1: bool = False
    fields: Optional[frozenset[str]] = None
    #: The kind of one request when it depends on it (an explain is what it explains).
    kind_for: Optional[Callable[[Mapping[str, object]], str]] = None

    def __post_init__(self) -> None:
        if self.stage not in _STAGES:
            raise ValueError(f"{self.name}: unknown stage {self.stage!r}")
        if self.kind not in _KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        if self.transaction not in (NO, STATEMENT, END):
            raise ValueError(f"{self.name}: unknown transaction rule {self.transaction!r}")
        if self.on_mongos not in (ROUTED, LOCAL):
            raise ValueError(f"{self.name}: on_mongos must be ROUTED or LOCAL")
        if self.stage in (DATA, REPLICA_SET) and self.handler is None:
            raise ValueError(f"{self.name}: a {self.stage} command needs a handler")
        if not self.deployments or not self.deployments <= ALL_DEPLOYMENTS:
            raise ValueError(f"{self.name}: deployments must be some of {sorted(ALL_DEPLOYMENTS)}")

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    def kind_of(self, cmd: Mapping[str, object]) -> str:
        """The role rule of this request (an explain's is what it explains)."""
        return self.kind if self.kind_for is None else self.kind_for(cmd)

    def runs_on(self, deployment: str) -> bool:
        return deployment in self.deployments

    def handler_on(self, deployment: str) -> Handler:
        """The handler of a DATA or REPLICA_SET command on this kind of process."""
        handler = self.mongos_handler if deployment == MONGOS else None
        handler = handler or self.handler
        if handler is None:
            raise CommandError(1, f"{self.name} has no handler")
        return handler

    def check_fields(self, cmd: Iterable[str]) -> None:
        """Refuse a top-level field the command does not know, as an IDL parser does."""
        fields = self.fields
        if fields is None:
            return
        for index, field in enumerate(cmd):
            if index == 0 or field in fields or field in GENERIC_ARGUMENTS:
                continue
            raise CommandError(40415, f"BSON field '{self.name}.{field}' is an unknown field.")


class Registry:
    """The commands of the simulator, by every name they answer to."""

    def __init__(self, commands: Iterable[Command]) -> None:
        self._commands: dict[str, Command] = {}
        self._by_name: dict[str, Command] = {}
        for command in commands:
            self.add(command)

    def add(self, command: Command) -> None:
        """Register a command; a name (or alias) already taken is a mistake."""
        for name in command.names:
            if name in self._by_name:
                raise ValueError(f"command {name!r} is registered twice")
        self._commands[command.name] = command
        for name in command.names:
            self._by_name[name] = command

    def get(self, name: str) -> Optional[Command]:
        """The command answering to ``name`` (its name or an alias), None if unknown."""
        return self._by_name.get(name)

    def __getitem__(self, name: str) -> Command:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[Command]:
        """Each command once, under its main name."""
        return iter(self._commands.values())

    def __len__(self) -> int:
        return len(self._commands)

    def names(self, predicate: Callable[[Command], bool]) -> frozenset[str]:
        """Every name (aliases included) of the commands ``predicate`` holds for."""
        return frozenset(
            name
            for command in self._commands.values()
            if predicate(command)
            for name in command.names
        )
