"""Every command the simulator answers, in one table: :data:`REGISTRY`.

Each :class:`~mongocore.sim.registry.Command` entry gives a command's names, who answers
it, where it may run, its transaction and authorization rules and its fields (see
registry.py for what each means, command_pipeline.py for the order the rules are
applied in). The handlers live in the modules of their area: commands.py and
crud_commands.py (CRUD, cursors, catalog), diagnostic_commands.py, explain.py,
storage_stats.py, operations.py, user_commands.py, catalog_commands.py,
replset_commands.py, sharding_catalog.py, transactions.py. The reads also serve the
collections a server builds from its own state (system_collections.py) and views
(views.py): their wrappers are composed here, in the entry, so the handler an entry
names is the whole of what runs.

To add a command, write its handler (``def cmd_x(ctx: CommandContext) -> Reply``) and add
one entry below; docs/simulator.md, "Adding a command", has an example.
"""

from __future__ import annotations

from collections.abc import Mapping

from mongocore.sim import (
    catalog_commands,
    change_streams,
    commands,
    crud_commands,
    db_aggregate,
    diagnostic_commands,
    explain,
    maintenance_commands,
    map_reduce_command,
    operations,
    profiler,
    replset_commands,
    search_indexes,
    sharding_catalog,
    storage_stats,
    system_collections,
    transactions,
    user_commands,
    views,
)
from mongocore.sim.codes import CommandError
from mongocore.sim.commands import CommandContext, Handler, Reply
from mongocore.sim.registry import (
    AUTHENTICATION,
    CONTROL,
    END,
    FAIL_POINTS,
    HANDSHAKE,
    LOCAL,
    MONGOD,
    MONGOS,
    REPLICA_SET,
    STATEMENT,
    TRANSACTION,
    Command,
    Registry,
)
from mongocore.sim.scratch import first_stage

__all__ = ["REGISTRY"]

# Stages that report on the server: a pipeline can only start with them.
_FIRST_ONLY = ("$collStats", "$currentOp")


def _aggregate(read: Handler) -> Handler:
    """aggregate: explain, the reporting stages, a database's aggregation, then any
    other pipeline."""

    def handler(ctx: CommandContext) -> Reply:
        if ctx.cmd.get("explain"):
            return explain.explain_aggregate(ctx)
        stage = first_stage(ctx.cmd)
        pipeline = ctx.cmd.get("pipeline")
        for later in pipeline[1:] if isinstance(pipeline, list) else ():
            for name in _FIRST_ONLY:
                if isinstance(later, Mapping) and name in later:
                    raise CommandError(
                        40602, f"{name} is only valid as the first stage in a pipeline"
                    )
        if search_indexes.uses_search_index_stage(pipeline):
            return search_indexes.refuse_search(ctx)
        if stage == "$collStats":
            return storage_stats.coll_stats_stage(ctx)
        if stage == "$currentOp":
            return operations.current_op_stage(ctx)
        if ctx.target == 1 and not change_streams.is_change_stream(ctx.cmd):
            return db_aggregate.cmd_aggregate_database(ctx)  # $documents, $listLocalSessions
        db_aggregate.check_collection_pipeline(ctx.cmd)
        return read(ctx)

    return handler


def _read(name: str, handler: Handler) -> Handler:
    """A read of a collection, a view (views.py) or a system collection."""
    return views.on_view(name, system_collections.wrap_read(name, handler))


def _ok(ctx: CommandContext) -> Reply:
    """What a mongos answers for a command it has nothing to report for."""
    return {"ok": 1.0}


def _fields(*names: str) -> frozenset[str]:
    return frozenset(names)


# Fields of the write commands' common part (write_ops.idl, WriteCommandRequestBase).
_WRITE_BASE = (
    "bypassDocumentValidation",
    "ordered",
    "stmtIds",
    "isTimeseriesNamespace",
    "collectionUUID",
    "encryptionInformation",
)
# Internal fields a router or a shard sends with a read; a client never does.
_INTERNAL_READ = ("encryptionInformation", "serializationContext")

_local_read = system_collections.local_read_kind

_COMMANDS = (
    # -- the process answers these itself -------------------------------------------
    Command(
        "hello",
        stage=HANDSHAKE,
        requires_auth=False,
        api_version_1=True,
    ),
    Command("isMaster", aliases=("ismaster",), stage=HANDSHAKE, requires_auth=False),
    Command("configureFailPoint", stage=FAIL_POINTS, admin_only=True),
    Command("saslStart", stage=AUTHENTICATION, requires_auth=False, api_version_1=True),
    Command("saslContinue", stage=AUTHENTICATION, requires_auth=False, api_version_1=True),
    Command("authenticate", stage=AUTHENTICATION, requires_auth=False, api_version_1=True),
    Command("logout", stage=AUTHENTICATION, requires_auth=False),
    Command("simControl", stage=CONTROL, admin_only=True),
    # -- transactions: run by the transaction table (a mongos's router) --------------
    Command(
        "commitTransaction",
        stage=TRANSACTION,
        admin_only=True,
        transaction=END,
        api_version_1=True,
        fields=_fields("commitTransaction", "commitTimestamp", "recoveryToken"),
    ),
    Command(
        "abortTransaction",
        stage=TRANSACTION,
        admin_only=True,
        transaction=END,
        api_version_1=True,
        fields=_fields("abortTransaction", "recoveryToken"),
    ),
    Command("coordinateCommitTransaction", stage=TRANSACTION, admin_only=True, transaction=END),
    Command(
        "setParameter",
        transactions.cmd_set_parameter,
        admin_only=True,
    ),
    # -- the replica set's commands ---------------------------------------------------
    Command(
        "replSetGetStatus",
        replset_commands.cmd_get_status,
        stage=REPLICA_SET,
        deployments=MONGOD,
        admin_only=True,
    ),
    Command(
        "replSetStepDown",
        replset_commands.cmd_step_down,
        stage=REPLICA_SET,
        deployments=MONGOD,
        admin_only=True,
    ),
    Command(
        "replSetFreeze",
        replset_commands.cmd_freeze,
        stage=REPLICA_SET,
        deployments=MONGOD,
        admin_only=True,
    ),
    Command(
        "replSetGetConfig",
        replset_commands.cmd_get_config,
        stage=REPLICA_SET,
        deployments=MONGOD,
        admin_only=True,
    ),
    Command(
        "replSetInitiate",
        replset_commands.cmd_initiate,
        stage=REPLICA_SET,
        deployments=MONGOD,
        admin_only=True,
    ),
    # -- writes -----------------------------------------------------------------------
    Command(
        "insert",
        views.on_view("insert", crud_commands.cmd_insert),
        kind="write",
        transaction=STATEMENT,
        retryable_write=True,
        api_version_1=True,
        fields=_fields("insert", "documents", *_WRITE_BASE),
    ),
    Command(
        "update",
        views.on_view("update", crud_commands.cmd_update),
        kind="write",
        transaction=STATEMENT,
        retryable_write=True,
        api_version_1=True,
        fields=_fields("update", "updates", "let", *_WRITE_BASE),
    ),
    Command(
        "delete",
        views.on_view("delete", crud_commands.cmd_delete),
        kind="write",
        transaction=STATEMENT,
        retryable_write=True,
        api_version_1=True,
        fields=_fields("delete", "deletes", "let", *_WRITE_BASE),
    ),
    Command(
        "findAndModify",
        views.on_view("findAndModify", crud_commands.cmd_find_and_modify),
        kind="write",
        aliases=("findandmodify",),
        transaction=STATEMENT,
        retryable_write=True,
        api_version_1=True,
        fields=_fields(
            "findAndModify",
            "query",
            "fields",
            "sort",
            "hint",
            "collation",
            "arrayFilters",
            "remove",
            "update",
            "new",
            "upsert",
            "bypassDocumentValidation",
            "let",
            "stmtId",
            "encryptionInformation",
            "runtimeConstants",
            "isTimeseriesNamespace",
            "collectionUUID",
        ),
    ),
    # -- reads --------------------------------------------------------------------------
    Command(
        "find",
        _read("find", crud_commands.cmd_find),
        kind="read",
        kind_for=_local_read("read"),
        transaction=STATEMENT,
        api_version_1=True,
        fields=_fields(
            "find",
            "filter",
            "projection",
            "sort",
            "hint",
            "skip",
            "limit",
            "batchSize",
            "singleBatch",
            "max",
            "min",
            "returnKey",
            "showRecordId",
            "tailable",
            "oplogReplay",
            "noCursorTimeout",
            "awaitData",
            "allowPartialResults",
            "collation",
            "allowDiskUse",
            "let",
            "term",
            "readOnce",
            "allowSpeculativeMajorityRead",
            "$_requestResumeToken",
            "$_resumeAfter",
            "$_startAt",
            "runtimeConstants",
            *_INTERNAL_READ,
        ),
    ),
    Command(
        "aggregate",
        views.on_view(
            "aggregate",
            _aggregate(system_collections.wrap_read("aggregate", crud_commands.cmd_aggregate)),
        ),
        kind="read",
        kind_for=_local_read("read"),
        transaction=STATEMENT,
        api_version_1=True,
        fields=_fields(
            "aggregate",
            "pipeline",
            "explain",
            "allowDiskUse",
            "cursor",
            "bypassDocumentValidation",
            "collation",
            "hint",
            "let",
            "collectionUUID",
            "exchange",
            "fromMongos",
            "needsMerge",
            "isMapReduceCommand",
            "runtimeConstants",
            "$_requestReshardingResumeToken",
            "$_generateV2ResumeTokens",
            "$_isClusterQueryWithoutShardKeyCmd",
            "$_passthroughToShard",
            *_INTERNAL_READ,
        ),
    ),
    Command(
        "mapReduce",
        map_reduce_command.cmd_map_reduce,
        aliases=("mapreduce",),
        kind="write",
        kind_for=map_reduce_command.kind_of,
        # Its fields are checked with its functions (sim/engine/map_reduce.py), before
        # the member's steps: the JavaScript runs first, without the lock.
    ),
    Command(
        "count",
        _read("count", crud_commands.cmd_count),
        kind="read",
        kind_for=_local_read("read"),
        api_version_1=True,
        fields=_fields(
            "count",
            "query",
            "limit",
            "skip",
            "hint",
            "collation",
            "fields",
            "mirrored",
            "sampleId",
            *_INTERNAL_READ,
        ),
    ),
    Command(
        "distinct",
        _read("distinct", crud_commands.cmd_distinct),
        kind="read",
        kind_for=_local_read("read"),
        transaction=STATEMENT,
        # Not in API version 1 (the versioned-api suite's strict test expects
        # APIStrictError: "command distinct is not in API Version 1").
        fields=_fields("distinct", "key", "query", "collation", "mirrored", "sampleId"),
    ),
    Command(
        "getMore",
        commands.cmd_get_more,
        kind="cursor",
        transaction=STATEMENT,
        api_version_1=True,
        fields=_fields(
            "getMore",
            "collection",
            "batchSize",
            "term",
            "lastKnownCommittedOpTime",
            "includeQueryStatsMetrics",
        ),
    ),
    Command(
        "killCursors",
        commands.cmd_kill_cursors,
        kind="cursor",
        transaction=STATEMENT,
        api_version_1=True,
        fields=_fields("killCursors", "cursors"),
    ),
    Command(
        "explain",
        explain.cmd_explain,
        kind="read",
        kind_for=explain.explain_kind,
        api_version_1=True,
        fields=_fields("explain", "verbosity"),
    ),
    # -- the catalog --------------------------------------------------------------------
    Command(
        "listCollections",
        views.on_view(
            "listCollections",
            system_collections.wrap_list_collections(commands.cmd_list_collections),
        ),
        kind="read",
        kind_for=_local_read("read"),
        api_version_1=True,
        fields=_fields("listCollections", "filter", "nameOnly", "authorizedCollections", "cursor"),
    ),
    Command(
        "listIndexes",
        views.on_view(
            "listIndexes", system_collections.wrap_list_indexes(commands.cmd_list_indexes)
        ),
        kind="read",
        kind_for=_local_read("read"),
        api_version_1=True,
        fields=_fields("listIndexes", "cursor", "includeBuildUUIDs", "includeIndexBuildInfo"),
    ),
    Command(
        "listDatabases",
        commands.cmd_list_databases,
        kind="read",
        admin_only=True,
        api_version_1=True,
        fields=_fields("listDatabases", "filter", "nameOnly", "authorizedDatabases"),
    ),
    Command(
        "create",
        views.on_view("create", commands.cmd_create),
        kind="write",
        transaction=STATEMENT,
        api_version_1=True,
        fields=_fields(
            "create",
            "capped",
            "autoIndexId",
            "idIndex",
            "size",
            "max",
            "storageEngine",
            "validator",
            "validationLevel",
            "validationAction",
            "indexOptionDefaults",
            "viewOn",
            "pipeline",
            "collation",
            "changeStreamPreAndPostImages",
            "timeseries",
            "clusteredIndex",
            "expireAfterSeconds",
            "encryptedFields",
            "temp",
            "flags",
            "recordPreImages",
        ),
    ),
    # Atlas Search index commands: a community server refuses them (search_indexes.py).
    Command(
        "createSearchIndexes",
        search_indexes.refuse_search,
        kind="write",
        fields=_fields("createSearchIndexes", "indexes"),
    ),
    Command(
        "updateSearchIndex",
        search_indexes.refuse_search,
        kind="write",
        fields=_fields("updateSearchIndex", "id", "name", "definition"),
    ),
    Command(
        "dropSearchIndex",
        search_indexes.refuse_search,
        kind="write",
        fields=_fields("dropSearchIndex", "id", "name"),
    ),
    Command(
        "drop",
        profiler.on_drop(views.on_view("drop", commands.cmd_drop)),
        kind="write",
        api_version_1=True,
        fields=_fields("drop", "collectionUUID"),
    ),
    Command(
        "dropDatabase",
        profiler.on_drop_database(commands.cmd_drop_database),
        kind="write",
        api_version_1=True,
        fields=_fields("dropDatabase"),
    ),
    Command(
        "createIndexes",
        views.on_view("createIndexes", commands.cmd_create_indexes),
        kind="write",
        transaction=STATEMENT,
        api_version_1=True,
        fields=_fields(
            "createIndexes",
            "indexes",
            "commitQuorum",
            "ignoreUnknownIndexOptions",
            "isTimeseriesNamespace",
            "collectionUUID",
        ),
    ),
    Command(
        "dropIndexes",
        views.on_view("dropIndexes", commands.cmd_drop_indexes),
        kind="write",
        api_version_1=True,
        fields=_fields("dropIndexes", "index", "isTimeseriesNamespace", "collectionUUID"),
    ),
    Command(
        "collMod",
        views.on_view("collMod", commands.cmd_coll_mod),
        kind="write",
        api_version_1=True,
    ),
    Command(
        "renameCollection",
        views.on_view("renameCollection", catalog_commands.cmd_rename_collection),
        kind="write",
        admin_only=True,
    ),
    # -- sessions -----------------------------------------------------------------------
    Command(
        "endSessions",
        commands.cmd_end_sessions,
        mongos_handler=_ok,
        on_mongos=LOCAL,
        api_version_1=True,
        fields=_fields("endSessions"),
    ),
    Command("killAllSessions", commands.cmd_end_sessions, mongos_handler=_ok, on_mongos=LOCAL),
    Command("killSessions", commands.cmd_end_sessions, mongos_handler=_ok, on_mongos=LOCAL),
    Command(
        "refreshSessions",
        commands.cmd_end_sessions,
        mongos_handler=_ok,
        on_mongos=LOCAL,
        api_version_1=True,
    ),
    # -- diagnostics --------------------------------------------------------------------
    Command(
        "ping",
        commands.cmd_ping,
        on_mongos=LOCAL,
        requires_auth=False,
        api_version_1=True,
    ),
    Command(
        "buildInfo",
        commands.cmd_build_info,
        aliases=("buildinfo",),
        on_mongos=LOCAL,
        requires_auth=False,
    ),
    Command("whatsmyuri", commands.cmd_whatsmyuri, mongos_handler=_ok, on_mongos=LOCAL),
    Command(
        "connectionStatus",
        commands.cmd_connection_status,
        mongos_handler=_ok,
        on_mongos=LOCAL,
        requires_auth=False,
    ),
    Command("hostInfo", commands.cmd_host_info, mongos_handler=_ok, on_mongos=LOCAL),
    Command(
        "getParameter",
        commands.cmd_get_parameter,
        mongos_handler=_ok,
        on_mongos=LOCAL,
        admin_only=True,
    ),
    Command("serverStatus", diagnostic_commands.cmd_server_status, on_mongos=LOCAL),
    Command("getLog", diagnostic_commands.cmd_get_log, on_mongos=LOCAL, admin_only=True),
    Command(
        "getCmdLineOpts",
        diagnostic_commands.cmd_get_cmd_line_opts,
        on_mongos=LOCAL,
        admin_only=True,
    ),
    Command(
        "profile",
        profiler.cmd_profile,
        on_mongos=LOCAL,
        mongos_handler=profiler.refused_on_mongos,
    ),
    Command(
        "validate",
        maintenance_commands.cmd_validate,
        kind="read",
        fields=_fields(
            "validate",
            "full",
            "repair",
            "metadata",
            "background",
            "checkBSONConformance",
            "enforceFastCount",
            "fixMultikey",
            "collectionUUID",
        ),
    ),
    Command("fsync", maintenance_commands.cmd_fsync, admin_only=True),
    Command("fsyncUnlock", maintenance_commands.cmd_fsync_unlock, admin_only=True),
    Command("currentOp", operations.cmd_current_op, on_mongos=LOCAL, admin_only=True),
    Command("killOp", operations.cmd_kill_op, on_mongos=LOCAL, admin_only=True),
    Command(
        "dbStats",
        storage_stats.cmd_db_stats,
        aliases=("dbstats",),
        kind="read",
        kind_for=_local_read("read"),
    ),
    Command(
        "collStats",
        storage_stats.cmd_coll_stats,
        kind="read",
        kind_for=_local_read("read"),
    ),
    # -- users (a cluster's are kept by its routers) -------------------------------------
    Command("createUser", user_commands.cmd_create_user, kind="write", on_mongos=LOCAL),
    Command("updateUser", user_commands.cmd_update_user, kind="write", on_mongos=LOCAL),
    Command("dropUser", user_commands.cmd_drop_user, kind="write", on_mongos=LOCAL),
    Command(
        "dropAllUsersFromDatabase",
        user_commands.cmd_drop_all_users,
        kind="write",
        on_mongos=LOCAL,
    ),
    Command("grantRolesToUser", user_commands.cmd_grant_roles, kind="write", on_mongos=LOCAL),
    Command("revokeRolesFromUser", user_commands.cmd_revoke_roles, kind="write", on_mongos=LOCAL),
    Command("usersInfo", user_commands.cmd_users_info, kind="read", on_mongos=LOCAL),
    Command("rolesInfo", user_commands.cmd_roles_info, kind="read", on_mongos=LOCAL),
    # -- a mongos's own -----------------------------------------------------------------
    Command(
        "listShards",
        sharding_catalog.cmd_list_shards,
        deployments=frozenset({MONGOS}),
        on_mongos=LOCAL,
        admin_only=True,
    ),
    Command(
        "balancerStatus",
        sharding_catalog.cmd_balancer_status,
        deployments=frozenset({MONGOS}),
        on_mongos=LOCAL,
        admin_only=True,
    ),
    Command(
        "enableSharding",
        sharding_catalog.cmd_enable_sharding,
        deployments=frozenset({MONGOS}),
        on_mongos=LOCAL,
        admin_only=True,
        fields=_fields("enableSharding", "primaryShard"),
    ),
    Command(
        "shardCollection",
        sharding_catalog.cmd_shard_collection,
        deployments=frozenset({MONGOS}),
        on_mongos=LOCAL,
        admin_only=True,
        fields=_fields(
            "shardCollection",
            "key",
            "unique",
            "numInitialChunks",
            "presplitHashedZones",
            "collation",
            "timeseries",
            "collectionUUID",
            "implicitlyCreateIndex",
            "enforceUniquenessCheck",
        ),
    ),
    Command(
        "checkMetadataConsistency",
        sharding_catalog.cmd_check_metadata_consistency,
        deployments=frozenset({MONGOS}),
        on_mongos=LOCAL,
    ),
)

REGISTRY = Registry(_COMMANDS)
"""Every command of a simulated mongod or mongos."""

REGISTRY.add(
    Command(
        "listCommands",
        lambda ctx: diagnostic_commands.cmd_list_commands(REGISTRY, ctx),
        on_mongos=LOCAL,
    )
)
