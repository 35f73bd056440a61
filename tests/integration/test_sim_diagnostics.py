"""The diagnostic commands tools send, answered by mongocore.sim as a 7.0 server answers
them: pymongo (an independent client) reads serverStatus, dbStats, collStats, $collStats,
explain, renameCollection, listCommands, getLog, getCmdLineOpts, currentOp and killOp."""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pymongo")
pytest.importorskip("pyuca")

import bson
from pymongo import MongoClient, ReadPreference
from pymongo.errors import NotPrimaryError, OperationFailure

from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from tests.integration.sim_client import FAST

DEADLINE = 20.0

Client = MongoClient[dict[str, Any]]


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    mongo: Client = MongoClient(rs.uri, **FAST)
    try:
        yield mongo
    finally:
        mongo.close()


@pytest.fixture
def items(client: Client) -> Any:
    collection = client.app.items
    collection.insert_many([{"_id": i, "v": i % 3, "name": f"n{i}"} for i in range(12)])
    collection.create_index("v")
    return collection


# -- serverStatus ----------------------------------------------------------------------


def test_server_status_of_a_primary(rs: ReplicaSet, client: Client) -> None:
    assert client.server_info()["version"] == "7.0.12"
    before = client.admin.command("serverStatus")
    client.app.c.insert_many([{"x": 1}, {"x": 2}, {"x": 3}])
    client.app.c.find_one()
    status = client.admin.command("serverStatus")
    primary = rs.wait_for_primary()
    assert status["host"] == primary.host
    assert status["process"] == "mongod"
    assert status["version"] == "7.0.12"
    assert isinstance(status["pid"], int)
    assert status["uptime"] >= 0 and status["uptimeMillis"] >= 0
    assert isinstance(status["localTime"], datetime.datetime)
    connections = status["connections"]
    assert 1 <= connections["current"] <= connections["totalCreated"]
    assert connections["available"] > 0
    counters, earlier = status["opcounters"], before["opcounters"]
    assert counters["insert"] - earlier["insert"] == 3  # one per document
    assert counters["query"] - earlier["query"] == 1
    assert counters["command"] > earlier["command"]
    repl = status["repl"]
    assert repl["setName"] == rs.name
    assert repl["isWritablePrimary"] is True and repl["secondary"] is False
    assert repl["primary"] == repl["me"] == primary.host
    assert sorted(repl["hosts"]) == sorted(rs.hosts)
    assert status["mem"]["bits"] in (32, 64)
    assert status["storageEngine"]["name"] == "inMemory"
    assert "repl" not in client.admin.command("serverStatus", repl=0)


def test_server_status_of_a_secondary_standalone_and_mongos(rs: ReplicaSet) -> None:
    secondary = rs.secondaries[0]
    direct: Client = MongoClient(secondary.host, directConnection=True, **FAST)
    try:
        repl = direct.admin.command("serverStatus")["repl"]
        assert repl["secondary"] is True and repl["isWritablePrimary"] is False
        assert repl["me"] == secondary.host
    finally:
        direct.close()
    with Standalone() as server:
        mongo: Client = MongoClient(server.uri, **FAST)
        try:
            status = mongo.admin.command("serverStatus")
            assert status["process"] == "mongod" and "repl" not in status
        finally:
            mongo.close()
    with ShardedCluster(1, shard_members=1, election_delay=0.05) as cluster:
        mongo = MongoClient(cluster.uri, **FAST)
        try:
            status = mongo.admin.command("serverStatus")
            assert status["process"] == "mongos"
            assert status["host"] == cluster.mongoses[0].host
            assert "repl" not in status and "storageEngine" not in status
        finally:
            mongo.close()


# -- storage statistics ----------------------------------------------------------------


def _bson_size(docs: list[dict[str, Any]]) -> int:
    return sum(len(bson.encode(doc)) for doc in docs)


def test_db_stats(client: Client, items: Any) -> None:
    size = _bson_size(list(items.find()))
    stats = client.app.command("dbstats")
    assert stats["db"] == "app"
    assert stats["collections"] == 1 and stats["views"] == 0
    assert stats["objects"] == 12
    assert stats["dataSize"] == size
    assert stats["avgObjSize"] == pytest.approx(size / 12)
    assert stats["indexes"] == 2 and stats["indexSize"] > 0
    assert stats["totalSize"] == stats["storageSize"] + stats["indexSize"]
    assert stats["scaleFactor"] == 1
    scaled = client.app.command("dbStats", scale=100)
    assert scaled["dataSize"] == size // 100 and scaled["scaleFactor"] == 100
    with pytest.raises(OperationFailure) as failure:
        client.app.command("dbStats", scale=0)
    assert failure.value.code == 2
    empty = client.nothing_here.command("dbStats")
    assert empty["collections"] == 0 and empty["objects"] == 0


def test_coll_stats_count_and_estimated_document_count(client: Client, items: Any) -> None:
    stats = client.app.command("collStats", "items")
    assert stats["ns"] == "app.items"
    assert stats["count"] == 12
    assert stats["size"] == _bson_size(list(items.find()))
    assert stats["nindexes"] == 2 and set(stats["indexSizes"]) == {"_id_", "v_1"}
    assert stats["capped"] is False
    assert items.estimated_document_count() == 12
    assert client.app.command("count", "items")["n"] == 12
    missing = client.app.command("collStats", "missing")
    assert missing["count"] == 0 and missing["size"] == 0


def test_coll_stats_stage(client: Client, items: Any) -> None:
    # The estimatedDocumentCount of drivers that use $collStats.
    pipeline = [{"$collStats": {"count": {}}}, {"$group": {"_id": 1, "n": {"$sum": "$count"}}}]
    assert [doc["n"] for doc in items.aggregate(pipeline)] == [12]
    (doc,) = list(items.aggregate([{"$collStats": {"storageStats": {"scale": 10}}}]))
    assert doc["ns"] == "app.items" and isinstance(doc["localTime"], datetime.datetime)
    assert doc["storageStats"]["count"] == 12 and doc["storageStats"]["scaleFactor"] == 10
    with pytest.raises(OperationFailure) as failure:
        list(client.app.missing.aggregate([{"$collStats": {"count": {}}}]))
    assert failure.value.code == 26
    with pytest.raises(OperationFailure) as failure:
        list(items.aggregate([{"$match": {}}, {"$collStats": {"count": {}}}]))
    assert failure.value.code == 40602
    with pytest.raises(OperationFailure) as failure:
        list(items.aggregate([{"$collStats": {"latencyStats": {}}}]))
    assert failure.value.code == 238  # NotImplemented: refused, never made up


# -- explain -----------------------------------------------------------------------------


def _stages(stage: dict[str, Any]) -> list[str]:
    names = [stage["stage"]]
    while "inputStage" in stage:
        stage = stage["inputStage"]
        names.append(stage["stage"])
    return names


def test_cursor_explain(items: Any) -> None:
    by_index = items.find({"v": 1}).explain()
    planner = by_index["queryPlanner"]
    assert planner["namespace"] == "app.items"
    assert planner["parsedQuery"] == {"v": {"$eq": 1}}
    assert _stages(planner["winningPlan"]) == ["FETCH", "IXSCAN"]
    assert planner["winningPlan"]["inputStage"]["indexName"] == "v_1"
    stats = by_index["executionStats"]  # pymongo's explain() asks for allPlansExecution
    assert stats["executionSuccess"] is True
    assert stats["nReturned"] == 4
    assert stats["totalKeysExamined"] == 4 and stats["totalDocsExamined"] == 4
    assert by_index["serverInfo"]["version"] == "7.0.12"
    assert by_index["command"]["find"] == "items"
    assert _stages(items.find({"_id": 3}).explain()["queryPlanner"]["winningPlan"]) == ["IDHACK"]
    scan = items.find({"name": "n5"}).explain()
    assert _stages(scan["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]
    assert scan["executionStats"]["totalDocsExamined"] == 12
    assert scan["executionStats"]["nReturned"] == 1
    sorted_plan = items.find({"name": {"$ne": "x"}}).sort("name", 1).limit(2).explain()
    assert _stages(sorted_plan["queryPlanner"]["winningPlan"]) == ["SORT", "COLLSCAN"]
    assert sorted_plan["executionStats"]["nReturned"] == 2
    missing = items.database.missing.find({}).explain()
    assert _stages(missing["queryPlanner"]["winningPlan"]) == ["EOF"]


def test_explain_command_verbosities_and_writes(client: Client, items: Any) -> None:
    db = client.app
    planner_only = db.command(
        "explain", {"find": "items", "filter": {"v": 2}}, verbosity="queryPlanner"
    )
    assert "queryPlanner" in planner_only and "executionStats" not in planner_only
    update = db.command(
        "explain",
        {
            "update": "items",
            "updates": [{"q": {"v": 0}, "u": {"$set": {"seen": True}}, "multi": True}],
        },
        verbosity="executionStats",
    )
    assert _stages(update["queryPlanner"]["winningPlan"]) == ["UPDATE", "FETCH", "IXSCAN"]
    assert update["executionStats"]["executionStages"]["nMatched"] == 4
    assert update["executionStats"]["executionStages"]["nWouldModify"] == 4
    assert items.count_documents({"seen": True}) == 0  # explaining a write changes nothing
    delete = db.command(
        "explain", {"delete": "items", "deletes": [{"q": {"name": "n1"}, "limit": 1}]}
    )
    assert delete["executionStats"]["executionStages"]["nWouldDelete"] == 1
    assert items.count_documents({}) == 12
    count = db.command("explain", {"count": "items", "query": {"v": 1}})
    assert _stages(count["queryPlanner"]["winningPlan"])[0] == "COUNT"
    assert count["executionStats"]["executionStages"]["nCounted"] == 4
    distinct = db.command("explain", {"distinct": "items", "key": "v"})
    assert distinct["queryPlanner"]["namespace"] == "app.items"
    pipeline = [{"$match": {"v": 1}}, {"$group": {"_id": None, "n": {"$sum": 1}}}]
    aggregate = db.command(
        "explain",
        {"aggregate": "items", "pipeline": pipeline, "cursor": {}},
        verbosity="executionStats",
    )
    cursor_stage, group_stage = aggregate["stages"]
    assert cursor_stage["$cursor"]["queryPlanner"]["parsedQuery"] == {"v": {"$eq": 1}}
    assert group_stage["$group"] == pipeline[1]["$group"] and group_stage["nReturned"] == 1
    with pytest.raises(OperationFailure) as failure:
        db.command("explain", {"insert": "items", "documents": [{}]})
    assert failure.value.code == 59
    with pytest.raises(OperationFailure) as failure:
        db.command("explain", {"find": "items"}, verbosity="everything")
    assert failure.value.code == 9


def test_explain_of_a_write_runs_where_the_write_would(client: Client, items: Any) -> None:
    explained = {"update": "items", "updates": [{"q": {}, "u": {"$set": {"a": 1}}}]}
    with pytest.raises(NotPrimaryError) as failure:
        client.app.command("explain", explained, read_preference=ReadPreference.SECONDARY)
    assert failure.value.details is not None and failure.value.details["code"] == 10107
    on_secondary = client.app.command(
        "explain", {"find": "items", "filter": {}}, read_preference=ReadPreference.SECONDARY
    )
    assert on_secondary["queryPlanner"]["namespace"] == "app.items"


# -- renameCollection ------------------------------------------------------------------


def test_rename_collection(rs: ReplicaSet, client: Client, items: Any) -> None:
    oplog = client.local["oplog.rs"]
    # The deployment is the session's: the oplog holds the renames of earlier tests too.
    (before,) = list(oplog.find().sort("$natural", -1).limit(1))
    items.rename("things")
    assert client.app.list_collection_names() == ["things"]
    assert client.app.things.count_documents({}) == 12
    assert "v_1" in client.app.things.index_information()
    client.app.other.insert_one({"_id": "other"})
    with pytest.raises(OperationFailure) as failure:
        client.app.things.rename("other")
    assert failure.value.code == 48
    client.app.things.rename("other", dropTarget=True)
    assert client.app.other.count_documents({}) == 12
    with pytest.raises(OperationFailure) as failure:
        client.app.gone.rename("anything")
    assert failure.value.code == 26
    with pytest.raises(OperationFailure) as failure:
        client.app.command("renameCollection", "app.other", to="app.x")
    assert failure.value.code == 13  # an admin command
    client.admin.command("renameCollection", "app.other", to="archive.items")
    assert client.archive.items.count_documents({}) == 12
    assert "app" not in client.list_database_names()
    secondary = client.archive.get_collection("items", read_preference=ReadPreference.SECONDARY)
    assert secondary.count_documents({}) == 12  # replicated
    renames = list(
        oplog.find({"o.renameCollection": {"$exists": True}, "ts": {"$gt": before["ts"]}})
    )
    assert [entry["o"]["to"] for entry in renames] == ["app.things", "app.other", "archive.items"]
    assert [entry["o"]["dropTarget"] for entry in renames] == [False, True, False]


# -- listCommands, getLog, getCmdLineOpts ------------------------------------------------


def test_list_commands(client: Client) -> None:
    commands = client.admin.command("listCommands")["commands"]
    for name in ("find", "insert", "serverStatus", "explain", "createUser", "replSetGetStatus"):
        assert name in commands
    assert commands["find"]["apiVersions"] == ["1"]
    assert commands["find"]["secondaryOk"] is True
    assert commands["insert"]["secondaryOk"] is False
    assert commands["getLog"]["adminOnly"] is True
    assert commands["ping"]["requiresAuth"] is False


def test_get_log(client: Client) -> None:
    assert client.admin.command("getLog", "*")["names"] == ["global", "startupWarnings"]
    warnings = client.admin.command("getLog", "startupWarnings")
    assert warnings["totalLinesWritten"] == len(warnings["log"]) == 1
    line = json.loads(warnings["log"][0])
    assert line["s"] == "W" and "Access control is not enabled" in line["msg"]
    global_log = [json.loads(entry) for entry in client.admin.command("getLog", "global")["log"]]
    assert any(entry["msg"] == "Waiting for connections" for entry in global_log)
    with pytest.raises(OperationFailure) as failure:
        client.admin.command("getLog", "nonExistent")
    assert failure.value.code == 96


def test_get_cmd_line_opts(rs: ReplicaSet, client: Client) -> None:
    options = client.admin.command("getCmdLineOpts")
    primary = rs.wait_for_primary()
    assert options["argv"][0] == "mongod"
    assert options["parsed"]["replication"]["replSet"] == rs.name
    assert options["parsed"]["net"]["port"] == primary.port


# -- currentOp and killOp ----------------------------------------------------------------


def test_current_op_and_kill_op(rs: ReplicaSet, client: Client) -> None:
    primary = rs.wait_for_primary()
    primary.fail_command("insert", block_time_ms=int(DEADLINE * 2000), mode={"times": 1})
    outcome: dict[str, Any] = {}

    def blocked_insert() -> None:
        try:
            client.app.blocked.insert_one({"_id": 1})
            outcome["result"] = "inserted"
        except OperationFailure as exc:
            outcome["code"] = exc.code

    thread = threading.Thread(target=blocked_insert)
    thread.start()
    try:
        assert rs.wait_for(lambda: primary.blocked_operations == 1, DEADLINE)
        inprog = client.admin.command({"currentOp": 1, "op": "insert"})["inprog"]
        (operation,) = inprog
        assert operation["ns"] == "app.blocked" and operation["active"] is True
        assert operation["command"]["insert"] == "blocked"
        staged = list(client.admin.aggregate([{"$currentOp": {}}, {"$match": {"op": "insert"}}]))
        assert [op["opid"] for op in staged] == [operation["opid"]]
        reply = client.admin.command("killOp", op=operation["opid"])
        assert reply["info"] == "attempting to kill op"
    finally:
        thread.join(DEADLINE * 3)
    assert outcome == {"code": 11601}
    # A server answers killOp alike for an operation that does not exist.
    assert client.admin.command("killOp", op=987654)["ok"] == 1.0


def test_current_op_and_kill_op_on_a_mongos() -> None:
    with ShardedCluster(1, shard_members=1, election_delay=0.05) as cluster:
        mongos = cluster.mongoses[0]
        mongos.fail_command("find", block_time_ms=int(DEADLINE * 2000), mode={"times": 1})
        mongo: Client = MongoClient(cluster.uri, **FAST)
        outcome: dict[str, Any] = {}

        def blocked_find() -> None:
            try:
                mongo.app.items.find_one()
                outcome["result"] = "found"
            except OperationFailure as exc:
                outcome["code"] = exc.code

        thread = threading.Thread(target=blocked_find)
        thread.start()
        try:
            assert cluster.wait_for(lambda: mongos.blocked_operations == 1, DEADLINE)
            (operation,) = mongo.admin.command({"currentOp": 1, "op": "query"})["inprog"]
            assert operation["ns"] == "app.items" and operation["host"] == mongos.host
            mongo.admin.command("killOp", op=operation["opid"])
        finally:
            thread.join(DEADLINE * 3)
            mongo.close()
        assert outcome == {"code": 11601}
