"""The Client, Database and Collection surface a pymongo user reaches, against the
simulated deployment: attribute access, codec options on the documents written and
read (tz_aware, document_class, uuidRepresentation, type_registry), the deployment's
views (address, primary, secondaries, arbiters, nodes, is_primary, is_mongos,
server_info) and InvalidOperation after close. pymongo reads what mongocore wrote
to check the bytes stored.
"""

from __future__ import annotations

import datetime
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

import pymongo
from bson import SON, Binary, Decimal128
from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions, TypeCodec, TypeRegistry

from mongocore.api.client import Client
from mongocore.api.collection_writes import ReturnDocument
from mongocore.core.address import parse_address
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.errors import InvalidOperation
from mongocore.pytest_plugin import MongoDBDeployment
from mongocore.sim import ReplicaSet, ShardedCluster, Standalone
from tests.integration.sim_client import sim_client, wait_for_topology

WHEN = datetime.datetime(2021, 6, 1, 12, 30)
UTC = datetime.timezone.utc


class DecimalCodec(TypeCodec):
    python_type = Decimal
    bson_type = Decimal128

    def transform_python(self, value: Any) -> Any:
        return Decimal128(value)

    def transform_bson(self, value: Any) -> Any:
        return value.to_decimal()


#: Two members and an arbiter, a replica set of each test's own (the plugin's).
pytestmark = pytest.mark.mongodb(members=2, arbiters=1)


@pytest.fixture
def rs(mongodb_replica_set_per_test: MongoDBDeployment) -> ReplicaSet:
    replica_set: ReplicaSet = mongodb_replica_set_per_test.sim
    return replica_set


@pytest.fixture
def client(rs: ReplicaSet) -> Iterator[Client]:
    with sim_client(rs.uri) as mongo:
        yield mongo


@pytest.fixture
def fresh(client: Client, request: pytest.FixtureRequest) -> str:
    """A collection name of its own for this test, in the database "surface"."""
    name = request.node.name.replace("[", "_").replace("]", "")
    client.surface.drop_collection(name)
    return name


# --- attribute access ------------------------------------------------------------------


def test_attribute_access_reaches_the_same_documents(client: Client, fresh: str) -> None:
    coll = getattr(client.surface, fresh)
    coll.insert_one({"_id": 1, "via": "attributes"})
    assert client["surface"][fresh].find_one({"_id": 1}) == {"_id": 1, "via": "attributes"}
    sub = coll.lines
    assert sub.full_name == f"surface.{fresh}.lines"
    sub.insert_one({"_id": 2})
    assert f"{fresh}.lines" in client.surface.list_collection_names()
    assert "surface" in client.list_database_names()
    assert client.admin.command("ping")["ok"] == 1


# --- codec options: documents read -----------------------------------------------------


def test_tz_aware_datetimes(rs: ReplicaSet, client: Client, fresh: str) -> None:
    client.surface[fresh].insert_one({"_id": 1, "t": WHEN})
    naive = client.surface[fresh].find_one()
    assert naive is not None and naive["t"] == WHEN and naive["t"].tzinfo is None
    eastern = datetime.timezone(datetime.timedelta(hours=-4))
    with sim_client(rs.uri + "&tz_aware=true") as aware_client:
        found = aware_client.surface[fresh].find_one()
        assert found is not None
        assert found["t"] == WHEN.replace(tzinfo=UTC)
        shifted = aware_client.surface.get_collection(
            fresh, CodecOptions(tz_aware=True, tzinfo=eastern)
        ).find_one()
        assert shifted is not None and shifted["t"].utcoffset() == datetime.timedelta(hours=-4)
        assert shifted["t"] == WHEN.replace(tzinfo=UTC)


@pytest.mark.parametrize("document_class", [SON, OrderedDict])
def test_document_class_everywhere_documents_come_back(
    rs: ReplicaSet, client: Client, fresh: str, document_class: type
) -> None:
    client.surface[fresh].insert_many([{"_id": i, "sub": {"i": i}} for i in range(5)])
    with sim_client(rs.uri, document_class=document_class) as typed:
        coll = typed.surface[fresh]
        # Several batches: the first and the getMore ones are decoded alike.
        found = list(coll.find({}, batch_size=2).sort("_id", 1))
        assert [d["_id"] for d in found] == list(range(5))
        assert {type(d) for d in found} == {document_class}
        assert {type(d["sub"]) for d in found} == {document_class}
        aggregated = list(coll.aggregate([{"$sort": {"_id": 1}}], batch_size=2))
        assert {type(d) for d in aggregated} == {document_class}
        one = coll.find_one({"_id": 3})
        assert type(one) is document_class
        updated = coll.find_one_and_update(
            {"_id": 4}, {"$set": {"x": 1}}, return_document=ReturnDocument.AFTER
        )
        assert type(updated) is document_class and updated["x"] == 1
        assert {type(d) for d in coll.list_indexes()} == {document_class}
    # The default client still gets plain dicts.
    assert type(client.surface[fresh].find_one()) is dict


# --- codec options: UUIDs --------------------------------------------------------------


def test_standard_uuids_are_stored_as_subtype_4_and_read_back(
    rs: ReplicaSet, client: Client, fresh: str
) -> None:
    value = uuid.uuid4()
    with sim_client(rs.uri + "&uuidRepresentation=standard") as standard:
        coll = standard.surface[fresh]
        coll.insert_one({"_id": 1, "u": value})
        coll.insert_many([{"_id": 2, "u": value}, {"_id": 3, "u": uuid.uuid4()}])
        coll.update_one({"u": value, "_id": 1}, {"$set": {"other": value}})
        assert coll.count_documents({"u": value}) == 2
        found = coll.find_one({"_id": 1})
        assert found is not None and found["u"] == value and found["other"] == value
        assert value in coll.distinct("u")
    # pymongo, with its default decoding, sees the binary subtype 4 mongocore wrote.
    with pymongo.MongoClient(rs.uri, serverSelectionTimeoutMS=20_000) as other:
        stored = other.surface[fresh].find_one({"_id": 1})
        assert stored is not None
        assert stored["u"] == Binary(value.bytes, 4)
        assert stored["u"].subtype == 4
    # mongocore's default client reads the same Binary.
    plain = client.surface[fresh].find_one({"_id": 1})
    assert plain is not None and plain["u"] == Binary(value.bytes, 4)


def test_a_uuid_without_a_representation_raises_pymongos_error(client: Client, fresh: str) -> None:
    with pytest.raises(ValueError, match=r"UuidRepresentation\.UNSPECIFIED"):
        client.surface[fresh].insert_one({"u": uuid.uuid4()})
    assert client.surface[fresh].count_documents({}) == 0
    with pytest.raises(ValueError, match=r"UuidRepresentation\.UNSPECIFIED"):
        client.surface[fresh].with_options(
            codec_options=CodecOptions(uuid_representation=UuidRepresentation.UNSPECIFIED)
        ).find_one({"u": uuid.uuid4()})


def test_a_collection_can_choose_its_own_representation(client: Client, fresh: str) -> None:
    value = uuid.uuid4()
    legacy = client.surface.get_collection(
        fresh, CodecOptions(uuid_representation=UuidRepresentation.PYTHON_LEGACY)
    )
    legacy.insert_one({"_id": 1, "u": value})
    plain = client.surface[fresh].find_one()
    assert plain is not None and plain["u"] == Binary(value.bytes, 3)
    found = legacy.find_one({"u": value})
    assert found is not None and found["u"] == value


def test_type_registry_encodes_and_decodes(rs: ReplicaSet, client: Client, fresh: str) -> None:
    with sim_client(rs.uri, type_registry=TypeRegistry([DecimalCodec()])) as typed:
        coll = typed.surface[fresh]
        coll.insert_one({"_id": 1, "price": Decimal("9.99")})
        found = coll.find_one({"price": Decimal("9.99")})
        assert found is not None and found["price"] == Decimal("9.99")
    plain = client.surface[fresh].find_one()
    assert plain is not None and plain["price"] == Decimal128("9.99")


def test_command_uses_its_own_codec_options(rs: ReplicaSet, client: Client, fresh: str) -> None:
    value = uuid.uuid4()
    standard = CodecOptions(uuid_representation=UuidRepresentation.STANDARD, document_class=SON)
    client.surface.get_collection(fresh, standard).insert_one({"_id": 1, "u": value})
    reply = client.surface.command("find", fresh, codec_options=standard, filter={"u": value})
    assert isinstance(reply, SON)
    assert reply["cursor"]["firstBatch"][0]["u"] == value
    # Without codec_options, the defaults (not the database's), as in pymongo.
    with sim_client(rs.uri + "&uuidRepresentation=standard") as typed:
        plain = typed.surface.command("find", fresh)
        assert plain["cursor"]["firstBatch"][0]["u"] == Binary(value.bytes, 4)


# --- the deployment's views ------------------------------------------------------------


def test_replica_set_views(rs: ReplicaSet, client: Client) -> None:
    members = {parse_address(m.host) for m in rs.members}
    wait_for_topology(
        client,
        lambda td: (
            td.type is TopologyType.REPLICA_SET_WITH_PRIMARY
            and {a for a, sd in td.servers.items() if sd.type is not ServerType.UNKNOWN} == members
        ),
    )
    primary = parse_address(rs.wait_for_primary().host)
    assert client.address == primary
    assert client.primary == primary
    assert client.nodes == frozenset(members)
    assert len(client.secondaries) == 1 and client.secondaries < members
    assert len(client.arbiters) == 1 and client.arbiters < members
    assert client.secondaries.isdisjoint(client.arbiters)
    assert primary not in client.secondaries | client.arbiters
    assert client.is_primary is True
    assert client.is_mongos is False
    info = client.server_info()
    assert isinstance(info["version"], str) and isinstance(info["versionArray"], list)


def test_standalone_views() -> None:
    with Standalone() as standalone, sim_client(standalone.uri) as client:
        address = parse_address(standalone.member.host)
        assert client.address == address
        assert client.is_primary is True
        assert client.primary is None
        assert client.secondaries == set() and client.arbiters == set()
        assert client.nodes == frozenset({address})


def test_sharded_views() -> None:
    with ShardedCluster(2, election_delay=0.05) as cluster, sim_client(cluster.uri) as client:
        mongoses = {parse_address(m.host) for m in cluster.mongoses}
        assert client.is_mongos is True
        wait_for_topology(client, lambda td: len(td.servers) == 2)
        with pytest.raises(InvalidOperation, match="nodes"):
            _ = client.address
        wait_for_topology(
            client, lambda td: all(sd.type is ServerType.MONGOS for sd in td.servers.values())
        )
        assert client.nodes == frozenset(mongoses)
        assert client.primary is None


def test_operations_after_close_raise_invalid_operation(rs: ReplicaSet) -> None:
    with sim_client(rs.uri) as client:
        coll = client.surface.after_close
        coll.find_one()
    with pytest.raises(InvalidOperation, match="Cannot use MongoClient after close"):
        coll.find_one()
    with pytest.raises(InvalidOperation, match="Cannot use MongoClient after close"):
        client.list_database_names()
    with pytest.raises(InvalidOperation, match="Cannot use MongoClient after close"):
        client.server_info()
