"""The public names: ``from mongocore import ...`` gives what ``from pymongo import ...``
gives, for what mongocore covers, with pymongo's signatures and values; importing the
package stays cheap."""

from __future__ import annotations

import copy
import inspect
import subprocess
import sys
from typing import Any

import pymongo
import pymongo.operations
import pytest
from bson.codec_options import TypeRegistry
from bson.son import SON
from pymongo.collation import Collation

import mongocore
import mongocore.read_concern
import mongocore.write_concern
from mongocore._version import PYMONGO_VERSION
from mongocore.api.client import Client
from mongocore.api.cursor_type import CursorType, check_cursor_type
from mongocore.api.mongo_client import MongoClient, seed_list
from mongocore.api.operations import (
    DeleteMany,
    DeleteOne,
    InsertOne,
    ReplaceOne,
    UpdateMany,
    UpdateOne,
)
from mongocore.errors import ConfigurationError
from mongocore.read_concern import ReadConcern
from mongocore.read_preferences import Nearest, Secondary, SecondaryPreferred
from mongocore.write_concern import WriteConcern

#: pymongo's top-level names mongocore leaves out on purpose (asyncio and the timeout
#: context manager; docs/from-pymongo.md, "The surface, name by name").
NOT_PROVIDED = {"AsyncMongoClient", "timeout"}
#: mongocore's own names beside pymongo's.
OWN_NAMES = {"Client", "DRIVER_NAME", "ReadConcern", "install_as_pymongo"}


def test_all_is_pymongos_names_that_mongocore_covers() -> None:
    assert set(mongocore.__all__) == (set(pymongo.__all__) - NOT_PROVIDED) | OWN_NAMES
    for name in mongocore.__all__:
        assert getattr(mongocore, name) is not None, name


def test_star_import_gives_every_name() -> None:
    namespace: dict[str, Any] = {}
    exec("from mongocore import *", namespace)
    assert set(mongocore.__all__) <= set(namespace)


def test_constants_have_pymongos_values() -> None:
    for name in ("ASCENDING", "DESCENDING", "GEO2D", "GEOSPHERE", "HASHED", "TEXT"):
        assert getattr(mongocore, name) == getattr(pymongo, name), name
    for name in ("NON_TAILABLE", "TAILABLE", "TAILABLE_AWAIT", "EXHAUST"):
        assert getattr(mongocore.CursorType, name) == getattr(pymongo.CursorType, name), name
    assert mongocore.ReturnDocument.AFTER is pymongo.ReturnDocument.AFTER is True
    assert mongocore.ReturnDocument.BEFORE is pymongo.ReturnDocument.BEFORE is False


def test_version() -> None:
    # pymongo's names give the pymongo API level (what ported libraries compare);
    # __version__ and get_version_string() are mongocore's own.
    assert mongocore.version == PYMONGO_VERSION
    assert mongocore.version_tuple == tuple(int(p) for p in PYMONGO_VERSION.split("."))
    assert mongocore.version_tuple >= (4, 20)
    assert mongocore.get_version_string() == mongocore.__version__
    assert mongocore.__version__ != PYMONGO_VERSION


def test_concern_modules() -> None:
    assert mongocore.WriteConcern is mongocore.write_concern.WriteConcern is WriteConcern
    assert mongocore.read_concern.ReadConcern is ReadConcern
    assert mongocore.ReadConcern is ReadConcern


def test_errors_stay_in_their_module() -> None:
    # As in pymongo: exceptions are imported from mongocore.errors, not the package.
    assert "PyMongoError" not in mongocore.__all__
    assert "OperationFailure" not in mongocore.__all__


# --- cursor types ----------------------------------------------------------------------


def test_only_non_tailable_cursors() -> None:
    check_cursor_type(CursorType.NON_TAILABLE)
    for name in ("TAILABLE", "TAILABLE_AWAIT", "EXHAUST"):
        with pytest.raises(ConfigurationError, match=f"CursorType.{name} is not supported"):
            check_cursor_type(getattr(CursorType, name))
    for value in (1, "tailable", None, False):
        with pytest.raises(ValueError, match="cursor_type"):
            check_cursor_type(value)


# --- write models: pymongo's signatures ------------------------------------------------

MODELS = [
    (InsertOne, pymongo.operations.InsertOne),
    (UpdateOne, pymongo.operations.UpdateOne),
    (UpdateMany, pymongo.operations.UpdateMany),
    (ReplaceOne, pymongo.operations.ReplaceOne),
    (DeleteOne, pymongo.operations.DeleteOne),
    (DeleteMany, pymongo.operations.DeleteMany),
]


@pytest.mark.parametrize(("ours", "theirs"), MODELS)
def test_write_model_signatures_match_pymongo(ours: type, theirs: type) -> None:
    assert getattr(mongocore, ours.__name__) is ours

    def shape(cls: type) -> list[tuple[str, Any]]:
        parameters = inspect.signature(cls.__init__).parameters.values()
        return [(p.name, p.kind) for p in parameters]

    assert shape(ours) == shape(theirs)
    ours_defaults = [p.default for p in inspect.signature(ours.__init__).parameters.values()]
    theirs_defaults = [p.default for p in inspect.signature(theirs.__init__).parameters.values()]
    assert ours_defaults == theirs_defaults


def test_positional_arguments_land_where_pymongos_do() -> None:
    update = UpdateOne(
        {"a": 1},
        {"$set": {"b": 1}},
        True,
        {"locale": "fr"},
        [{"x.y": 1}],
        "a_1",
        None,
        {"c": -1},
    )
    assert update._statement() == {
        "q": {"a": 1},
        "u": {"$set": {"b": 1}},
        "multi": False,
        "upsert": True,
        "arrayFilters": [{"x.y": 1}],
        "hint": "a_1",
        "collation": {"locale": "fr"},
        "sort": {"c": -1},
    }
    many = UpdateMany({}, [{"$set": {"n": 1}}], None, None, None, [("n", 1)])
    assert many._statement() == {
        "q": {},
        "u": [{"$set": {"n": 1}}],
        "multi": True,
        "upsert": False,
        "hint": {"n": 1},
    }
    replace = ReplaceOne({"_id": 1}, {"n": 2}, False, None, "_id_", None, {"n": 1})
    assert replace._statement() == {
        "q": {"_id": 1},
        "u": {"n": 2},
        "multi": False,
        "upsert": False,
        "hint": "_id_",
        "sort": {"n": 1},
    }
    delete = DeleteOne({"a": 1}, {"locale": "en"}, "a_1")
    assert delete._statement() == {
        "q": {"a": 1},
        "limit": 1,
        "hint": "a_1",
        "collation": {"locale": "en"},
    }
    assert DeleteMany({"a": 1})._statement() == {"q": {"a": 1}, "limit": 0}


def test_pymongo_collation_objects_are_taken() -> None:
    statement = DeleteMany({}, collation=Collation("fr", strength=1))._statement()
    assert statement["collation"] == {"locale": "fr", "strength": 1}


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: UpdateOne([], {"$set": {}}), TypeError, "filter"),
        (lambda: DeleteOne("x"), TypeError, "filter"),
        (lambda: UpdateOne({}, {"$set": {}}, upsert=1), TypeError, "upsert"),
        (lambda: UpdateMany({}, {"$set": {}}, array_filters={}), TypeError, "array_filters"),
        (lambda: InsertOne([("a", 1)]), TypeError, "document"),
        (lambda: InsertOne({}, namespace="db.c"), ConfigurationError, "namespace"),
        (lambda: DeleteMany({}, namespace="db.c"), ConfigurationError, "namespace"),
        (lambda: ReplaceOne({}, {}, namespace="db.c"), ConfigurationError, "namespace"),
    ],
)
def test_bad_write_model_arguments(build: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        build()


# --- MongoClient -------------------------------------------------------------------------


def test_mongo_client_is_a_client_with_pymongos_positional_parameters() -> None:
    assert issubclass(MongoClient, Client)
    assert mongocore.MongoClient is MongoClient
    ours = list(inspect.signature(MongoClient.__init__).parameters)
    theirs = list(inspect.signature(pymongo.MongoClient.__init__).parameters)
    assert ours == theirs


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        (None, None, "localhost"),
        (None, 27018, ["localhost:27018"]),
        ("h", None, "h"),
        ("h", 5, ["h:5"]),
        ("h:1", 5, ["h:1"]),
        ("h,g:2", 5, ["h:5", "g:2"]),
        (["h", "g:2"], 5, ["h:5", "g:2"]),
        (["h", "g:2"], None, ["h", "g:2"]),
        ("[::1]", 5, ["[::1]:5"]),
        ("[::1]:7", 5, ["[::1]:7"]),
        ("/tmp/mongodb-27017.sock", 5, ["/tmp/mongodb-27017.sock"]),
        ("mongodb://h,g:2/db?replicaSet=rs", None, "mongodb://h,g:2/db?replicaSet=rs"),
        ("mongodb://h,g:2/db?replicaSet=rs", 5, "mongodb://h:5,g:2/db?replicaSet=rs"),
        ("mongodb://u:p@h?w=1", 5, "mongodb://u:p@h:5?w=1"),
        ("mongodb://h", 5, "mongodb://h:5"),
    ],
)
def test_seed_list(host: Any, port: Any, expected: Any) -> None:
    assert seed_list(host, port) == expected


@pytest.mark.parametrize(
    ("host", "port", "error", "message"),
    [
        ("h", "27017", TypeError, "port"),
        ("h", True, TypeError, "port"),
        (5, None, TypeError, "host"),
        ([b"h"], None, TypeError, "host"),
        ([], None, ConfigurationError, "host"),
        (["mongodb://h", "g"], 5, ConfigurationError, "connection string"),
        ("mongodb+srv://h.example.com", 5, ConfigurationError, "mongodb\\+srv"),
    ],
)
def test_seed_list_errors(host: Any, port: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        seed_list(host, port)


NOWHERE = "mongodb://127.0.0.1:1/?connectTimeoutMS=100&serverSelectionTimeoutMS=100"


def test_read_preference_objects_become_client_options() -> None:
    rp = SecondaryPreferred(tag_sets=[{"dc": "ny"}], max_staleness=120)
    with MongoClient(NOWHERE, read_preference=rp, connect=False) as client:
        assert client.read_preference == rp
        assert type(client.read_preference) is SecondaryPreferred
        assert client["db"].read_preference == rp
    with MongoClient(NOWHERE, readPreference=mongocore.ReadPreference.NEAREST) as client:
        assert client.read_preference == Nearest()
    # A mode name is a plain option, and the client shows it in pymongo's shape too.
    with MongoClient(NOWHERE, readPreference="secondary") as client:
        assert (
            repr(client.read_preference) == "Secondary(tag_sets=None, max_staleness=-1, hedge=None)"
        )
    # The object replaces what the connection string says.
    uri = NOWHERE + "&readPreference=nearest&readPreferenceTags=dc:sf&maxStalenessSeconds=200"
    with MongoClient(uri, read_preference=Secondary()) as client:
        assert client.read_preference == Secondary()


def test_the_client_takes_read_preference_objects_too() -> None:
    rp = Secondary([{"dc": "ny"}], max_staleness=100)
    with Client(NOWHERE, read_preference=rp) as client:
        assert client.read_preference == rp
    with Client(NOWHERE, readPreference="nearest") as client:
        assert client.read_preference == Nearest()


def test_read_preference_object_with_its_parts_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="readPreferenceTags"):
        MongoClient(NOWHERE, read_preference=Secondary(), readPreferenceTags=[{"dc": "ny"}])
    with pytest.raises(ConfigurationError, match="max_staleness_seconds"):
        Client(NOWHERE, readPreference=Secondary(), max_staleness_seconds=100)


def test_codec_parameters_reach_the_client() -> None:
    registry = TypeRegistry()
    with MongoClient(NOWHERE, None, SON, True, False, registry) as client:
        assert client.codec_options.document_class is SON
        assert client.codec_options.tz_aware is True
        assert client.codec_options.type_registry is registry


def test_connect_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="connect"):
        MongoClient(NOWHERE, connect="yes")  # type: ignore[arg-type]


# --- import cost -------------------------------------------------------------------------


def _modules_loaded_by(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    code += "\nimport sys; print('\\n'.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(result.stdout.split())


#: What the first client of a plain mongodb:// URI never needs: loaded on first use.
NOT_FOR_A_PLAIN_CLIENT = (
    "mongocore.sim",  # the simulator
    "mongocore.cli",  # the command line, and rich, its optional view
    "rich",
    "pyuca",
    "dns",  # SRV lookups (dnspython)
    "mongocore.io.srv",
    "mongocore.io.srv_polling",
    "mongocore.io.dns_resolver",
    "ssl",  # TLS
    "mongocore.io.tls",
    "mongocore.io.auth",  # authentication: SCRAM (hmac, hashlib), X.509, ...
    "mongocore.core.credentials",
    "hmac",
    "mongocore.core.compression",  # compression: for clients that ask for it
    "zlib",  # compressors
    "zstandard",
    "snappy",
    "difflib",  # suggestions for mistyped option names
    "json",  # extended JSON of log messages
    "mongocore.api.database",  # the CRUD API: loaded with the first database
    "mongocore.api.collection",
    "mongocore.api.cursor",
    "mongocore.api.bulk",
    "mongocore.api.change_stream",
    "mongocore.api.client_session",  # sessions and transactions: with the first operation
    "mongocore.api.session_transactions",
    "mongocore.api.transaction_options",
    "mongocore.io.executor",  # the retry executor: with the first operation
    "mongocore.io.operation",
    "mongocore.io.command_monitoring",
    "logging",  # until something imports it, no logger can be enabled
    "mongocore.io.structured_log",  # the structured (spec) log messages
    "mongocore.io.command_log",
    "mongocore.io.log_messages",
    "mongocore.io.pool_log",
    "mongocore.io.selection_log",
)


def _loaded(name: str, modules: set[str]) -> bool:
    return name in modules or any(m.startswith(name + ".") for m in modules)


def test_importing_mongocore_loads_only_its_version() -> None:
    loaded = _modules_loaded_by("import mongocore")
    assert {m for m in loaded if m.startswith("mongocore")} == {"mongocore", "mongocore._version"}


def test_the_first_plain_client_loads_only_what_it_needs() -> None:
    imported = _modules_loaded_by("from mongocore import MongoClient")
    assert "mongocore.api.client" in imported  # the check sees what the import loads
    # Dataclass processing waits for a class's first instance
    # (mongocore._deferred_dataclass): importing compiles none of it.
    assert "dataclasses" not in imported
    constructed = _modules_loaded_by(
        f"from mongocore import MongoClient\nMongoClient({NOWHERE!r}).close()"
    )
    assert imported <= constructed
    for name in NOT_FOR_A_PLAIN_CLIENT:
        assert not _loaded(name, constructed), name


def test_the_io_shell_loads_with_the_first_client() -> None:
    """Importing MongoClient loads no module of the I/O shell, nor ``socket``: the
    first construction does (mongocore.io.client_topology). The broken variant, the
    client module importing the topology at its top again, fails the first check;
    a constructor that no longer builds it fails the second."""
    imported = _modules_loaded_by("from mongocore import MongoClient")
    assert "mongocore.api.mongo_client" in imported
    assert not _loaded("mongocore.io", imported)
    assert "socket" not in imported
    constructed = _modules_loaded_by(
        f"from mongocore import MongoClient\nMongoClient({NOWHERE!r}).close()"
    )
    for name in ("mongocore.io.topology", "mongocore.io.pool", "mongocore.io.monitor", "socket"):
        assert name in constructed, name


def test_compression_loads_with_a_client_that_asks_for_it() -> None:
    """The broken variant of the compression entry above: a client configured with a
    compressor loads the module (and checks its compressors with it)."""
    loaded = _modules_loaded_by(
        f"from mongocore import MongoClient\nMongoClient({NOWHERE!r} + '&compressors=zlib').close()"
    )
    assert _loaded("mongocore.core.compression", loaded)


def test_what_a_plain_client_leaves_out_loads_on_first_use() -> None:
    """The broken variant of the checks above: each lazily loaded part does load."""
    code = (
        "import mongocore\n"
        "from mongocore.core.compression import available_compressors, compressor_for\n"
        "from mongocore.core.option_names import nearest_name\n"
        "client = mongocore.MongoClient("
        f"{NOWHERE!r} + '&tls=true&tlsInsecure=true', username='u', password='p')\n"
        "client['db']['coll'].find\n"
        "available_compressors()\n"
        "compressor_for('zlib').compress(b'x')\n"
        "nearest_name('replicaSe', {'replicaSet': 'replicaSet'}, normalize=str.lower)\n"
        "client.close()"
    )
    loaded = _modules_loaded_by(code)
    for name in ("ssl", "mongocore.io.tls", "mongocore.io.auth", "hmac", "difflib"):
        assert _loaded(name, loaded), name
    for name in ("mongocore.api.database", "mongocore.api.collection", "zlib"):
        assert _loaded(name, loaded), name
    # dnspython's resolver loads with the first mongodb+srv:// lookup, not before.
    assert "dns.resolver" not in loaded


def test_logging_sessions_and_the_executor_load_when_needed() -> None:
    """The broken variant of the new entries above: each loads once it can be used."""
    code = (
        "import logging\n"  # a program that uses logging: the loggers could be enabled
        "import mongocore\n"
        f"client = mongocore.MongoClient({NOWHERE!r})\n"
        "client.start_session().end_session()\n"
        "client._executor\n"
        "client.close()"
    )
    loaded = _modules_loaded_by(code)
    for name in (
        "mongocore.io.structured_log",
        "mongocore.io.command_log",
        "mongocore.io.log_messages",
        "mongocore.io.pool_log",
        "mongocore.api.client_session",
        "mongocore.api.transaction_options",
        "mongocore.io.executor",
    ):
        assert _loaded(name, loaded), name


def test_eq_props_are_pymongos_and_decide_equality() -> None:
    uri = "mongodb://b:2,a:1/?replicaSet=rs&connectTimeoutMS=100&serverSelectionTimeoutMS=100"
    with MongoClient(uri, connect=False) as ours, pymongo.MongoClient(uri, connect=False) as theirs:
        assert ours.eq_props() == theirs.eq_props()
        with MongoClient("mongodb://a:1,b:2/?replicaSet=rs", connect=False) as same:
            assert ours == same and hash(ours) == hash(same)
        with MongoClient("mongodb://a:1,b:2/?replicaSet=other", connect=False) as other:
            assert ours != other


def test_a_session_cannot_be_copied() -> None:
    with (
        MongoClient(NOWHERE, connect=False) as client,
        client.start_session() as session,
        pytest.raises(TypeError, match="ClientSession cannot be copied"),
    ):
        copy.copy(session)
