"""A first-hour application written the way a pymongo user writes it.

``test_pymongo_style_app.py`` runs this file's text twice against the same simulated
replica set: once as it is, with pymongo, and once with its import block changed to
mongocore (``MONGOCORE_IMPORTS``), and expects the same report. Nothing else in it
may change: that is the promise to someone porting an application.
"""

from __future__ import annotations

PYMONGO_IMPORTS = """\
from pymongo import ASCENDING, DESCENDING, MongoClient, ReturnDocument
from pymongo import DeleteOne, IndexModel, InsertOne, UpdateOne, ReadPreference
from pymongo import monitoring
from pymongo.errors import DuplicateKeyError, OperationFailure
"""

MONGOCORE_IMPORTS = """\
from mongocore import ASCENDING, DESCENDING, MongoClient, ReturnDocument
from mongocore import DeleteOne, IndexModel, InsertOne, UpdateOne, ReadPreference
from mongocore import monitoring
from mongocore.errors import DuplicateKeyError, OperationFailure
"""

BODY = """\
import datetime
import uuid

from bson.binary import UuidRepresentation
from bson.codec_options import CodecOptions


class Commands(monitoring.CommandListener):
    def __init__(self):
        self.names = []

    def started(self, event):
        self.names.append(event.command_name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass


def run(uri):
    report = {}
    commands = Commands()
    client = MongoClient(
        uri,
        tz_aware=True,
        uuidRepresentation="standard",
        event_listeners=[commands],
        serverSelectionTimeoutMS=20000,
    )
    try:
        db = client.shop
        orders = db.orders
        orders.drop()
        orders.create_index([("sku", ASCENDING)], unique=True)
        orders.create_indexes([IndexModel([("placed", DESCENDING)], name="by_placed")])
        when = datetime.datetime(2026, 11, 23, 12, 30, tzinfo=datetime.timezone.utc)
        token = uuid.UUID("12345678-1234-5678-1234-567812345678")
        result = orders.insert_one({"sku": "A-1", "qty": 2, "placed": when, "token": token})
        report["inserted"] = result.acknowledged and result.inserted_id is not None
        try:
            orders.insert_one({"sku": "A-1", "qty": 9})
        except DuplicateKeyError as exc:
            report["duplicate_code"] = exc.code
        orders.bulk_write(
            [
                InsertOne({"sku": "B-2", "qty": 1}),
                UpdateOne({"sku": "A-1"}, {"$inc": {"qty": 1}}),
                DeleteOne({"sku": "nothing"}),
            ]
        )
        found = orders.find_one({"sku": "A-1"}, {"_id": False})
        report["found"] = {
            "qty": found["qty"],
            "placed_aware": found["placed"].utcoffset() == datetime.timedelta(0),
            "placed_same": found["placed"] == when,
            "token": str(found["token"]),
        }
        after = orders.find_one_and_update(
            {"sku": "B-2"}, {"$set": {"qty": 5}}, return_document=ReturnDocument.AFTER
        )
        report["after"] = after["qty"]
        report["skus"] = [d["sku"] for d in orders.find({}, sort=[("sku", DESCENDING)])]
        report["count"] = orders.count_documents({})
        update = orders.update_one({"sku": "A-1"}, {"$set": {"qty": 7}})
        report["update"] = (update.matched_count, update.modified_count, update.raw_result["ok"])
        legacy = orders.with_options(
            codec_options=CodecOptions(uuid_representation=UuidRepresentation.STANDARD)
        )
        report["legacy_token"] = str(legacy.find_one({"sku": "A-1"})["token"])
        secondary = db.get_collection(
            "orders", read_preference=ReadPreference.SECONDARY_PREFERRED
        )
        report["secondary_read"] = secondary.count_documents({}) >= 0
        with client.start_session() as session:
            orders.insert_one({"sku": "C-3", "qty": 1}, session=session)
            report["in_session"] = orders.count_documents({"sku": "C-3"}, session=session)
        report["indexes"] = sorted(orders.index_information())
        try:
            db.command({"noSuchCommand": 1})
        except OperationFailure as exc:
            report["unknown_command"] = exc.code
        report["admin_ping"] = client.admin.command("ping")["ok"]
        report["databases"] = "shop" in client.list_database_names()
        report["commands_seen"] = sorted(set(commands.names) & {"insert", "find", "update"})
    finally:
        client.close()
    return report
"""
