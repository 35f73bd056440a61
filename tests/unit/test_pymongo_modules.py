"""The functions of mongocore's pymongo-named modules behave as pymongo's.

``common``'s validators are fed the same values as pymongo's and must return the same
value (of the same type) or raise the same exception type; ``uri_parser.parse_uri``
must return pymongo's dictionary for a corpus of connection strings; the other
modules' helpers are checked against pymongo's where both exist. The knowing
differences are those of docs/from-pymongo.md ("Module layout").
"""

from __future__ import annotations

import datetime
import inspect
import logging
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pymongo.collation
import pymongo.common
import pymongo.database_shared
import pymongo.server_type
import pymongo.uri_parser
import pytest
from bson import SON
from bson.codec_options import TypeRegistry
from bson.errors import InvalidDocument
from bson.raw_bson import RawBSONDocument

import mongocore
import mongocore.collation
import mongocore.common
import mongocore.uri_parser
from mongocore import event_loggers, monitoring
from mongocore._version import PYMONGO_VERSION
from mongocore.api.mongo_client import MongoClient
from mongocore.core.address import Address
from mongocore.core.description.server import ServerDescription
from mongocore.core.description.settings import TopologySettings
from mongocore.core.description.topology import TopologyDescription
from mongocore.core.description.types import ServerType, TopologyType
from mongocore.database import _check_name
from mongocore.errors import (
    BulkWriteError,
    DocumentTooLarge,
    ExecutionTimeout,
    InvalidName,
    NetworkTimeout,
    OperationFailure,
    PyMongoError,
    ServerSelectionTimeoutError,
    WTimeoutError,
)
from mongocore.read_preferences import (
    Nearest,
    Primary,
    Secondary,
    make_read_preference,
    read_pref_mode_from_name,
)
from mongocore.server_description import SERVER_TYPE
from mongocore.topology_description import TOPOLOGY_TYPE, updated_topology_description

# --- common: the validators --------------------------------------------------------------

#: The validators, their tables and constants are compared with pymongo 4.20's, the API
#: level mongocore implements. pymongo 4.20 needs Python 3.10: on 3.9 pip installs
#: pymongo 4.18, whose common module has fewer options and older rules; there these
#: comparisons would test pymongo's history, not mongocore (they run on 3.10 and newer).
ANOTHER_API_LEVEL = pytest.mark.skipif(
    pymongo.version_tuple[:2] != tuple(int(p) for p in PYMONGO_VERSION.split(".")[:2]),
    reason=f"pymongo {pymongo.version} is not the API level mongocore implements"
    f" ({PYMONGO_VERSION}): pymongo 4.20 needs Python 3.10",
)

SAMPLES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1,
    7,
    1.5,
    1e10,
    "0",
    "1",
    "-1",
    "7",
    "1.5",
    "",
    "x",
    "true",
    "false",
    "majority",
    "standard",
    "pythonLegacy",
    "secondaryPreferred",
    "SCRAM-SHA-256",
    "poll",
    "DATETIME_AUTO",
    "dc:ny,rack:1",
    ["dc:ny", ""],
    "SERVICE_NAME:other,CANONICALIZE_HOST_NAME:true",
    "SERVICE_NAME",
    {"SERVICE_NAME": "x"},
    "replace",
    [],
    [1],
    (1,),
    {},
    {"$set": {"a": 1}},
    {"a": 1},
    [{"$set": {"a": 1}}],
    dict,
    SON,
    RawBSONDocument,
    dict[str, Any],
    int,
    TypeRegistry(),
    datetime.timezone.utc,
    len,
)

#: Validators whose sets of accepted values are mongocore's own (docs/from-pymongo.md,
#: "Module layout"), or whose values are pymongo's classes: checked apart, below.
OWN_RULES = {
    "validate_read_preference",  # mongocore's read preference classes
    "validate_auth_mechanism",  # mongocore's mechanisms
    "validate_auto_encryption_opts_or_none",  # no encryption
    "validate_driver_or_none",  # mongocore's DriverInfo
    "validate_server_api_or_none",  # mongocore's ServerApi
    "validate_compressors",  # mongocore's compressors, warnings of its own
    "validate_unicode_decode_error_handler",  # mongocore's handlers
    "validate_readable",  # opens files: checked below
}


def validators() -> list[str]:
    return sorted(
        name
        for name in mongocore.common.__all__
        if name.startswith("validate_")
        and name not in OWN_RULES
        and name not in ("validate", "validate_ok_for_replace", "validate_ok_for_update")
    )


def outcome(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = function(*args, **kwargs)
        except Exception as exc:
            return ("raises", type(exc).__name__)
    return ("returns", type(value).__name__, value)


@ANOTHER_API_LEVEL
@pytest.mark.parametrize("name", validators())
def test_each_validator_gives_pymongos_outcome(name: str) -> None:
    theirs, mine = getattr(pymongo.common, name), getattr(mongocore.common, name)
    for value in SAMPLES:
        assert outcome(mine, "opt", value) == outcome(theirs, "opt", value), (name, value)


@pytest.mark.parametrize(
    "update",
    [{}, {"a": 1}, {"$set": {"a": 1}}, [], [{"$set": {"a": 1}}], "x", None, SON(a=1)],
)
def test_update_and_replacement_checks_are_pymongos(update: Any) -> None:
    for name in ("validate_ok_for_update", "validate_ok_for_replace"):
        theirs, mine = getattr(pymongo.common, name), getattr(mongocore.common, name)
        assert outcome(mine, update) == outcome(theirs, update), (name, update)


def test_the_validators_of_mongocore_s_own_sets() -> None:
    assert mongocore.common.validate_read_preference("rp", Secondary()) == Secondary()
    with pytest.raises(TypeError):
        mongocore.common.validate_read_preference("rp", "secondary")
    assert mongocore.common.validate_auth_mechanism("m", "SCRAM-SHA-1") == "SCRAM-SHA-1"
    with pytest.raises(ValueError, match="m must be in"):
        mongocore.common.validate_auth_mechanism("m", "MONGODB-CR")
    assert mongocore.common.validate_auto_encryption_opts_or_none("a", None) is None
    with pytest.raises(mongocore.common.ConfigurationError, match="encryption"):
        mongocore.common.validate_auto_encryption_opts_or_none("a", object())
    with pytest.warns(UserWarning, match="Unsupported compressor: lz4"):
        assert mongocore.common.validate_compressors("c", "zlib,lz4") == ["zlib"]
    assert mongocore.common.validate_unicode_decode_error_handler("u", "replace") == "replace"
    with pytest.raises(ValueError):
        mongocore.common.validate_unicode_decode_error_handler("u", "bogus")


def test_validate_readable_opens_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ca.pem"
    path.write_text("x")
    assert mongocore.common.validate_readable("tlsCAFile", str(path)) == str(path)
    assert mongocore.common.validate_readable("tlsCAFile", None) is None
    missing = str(tmp_path / "missing.pem")
    with pytest.raises(FileNotFoundError) as raised:
        mongocore.common.validate_readable("tlsCAFile", missing, from_uri=True)
    assert missing not in str(raised.value)  # a connection string's path is not shown
    with pytest.raises(FileNotFoundError):
        pymongo.common.validate_readable("tlsCAFile", missing)


@ANOTHER_API_LEVEL
def test_the_tables_name_the_same_options() -> None:
    for table in (
        "URI_OPTIONS_VALIDATOR_MAP",
        "NONSPEC_OPTIONS_VALIDATOR_MAP",
        "KW_VALIDATORS",
        "VALIDATORS",
        "INTERNAL_URI_OPTION_NAME_MAP",
        "URI_OPTIONS_ALIAS_MAP",
    ):
        assert set(getattr(mongocore.common, table)) == set(getattr(pymongo.common, table)), table
    for name in ("TIMEOUT_OPTIONS", "WRITE_CONCERN_OPTIONS", "SENSITIVE_OPTIONS_FOR_REPR"):
        assert getattr(mongocore.common, name) == getattr(pymongo.common, name), name


def test_validate_and_get_validated_options() -> None:
    assert mongocore.common.validate("connectTimeoutMS", "1500") == ("connectTimeoutMS", 1.5)
    with pytest.raises(mongocore.common.ConfigurationError, match="Unknown option: bogus"):
        mongocore.common.validate("bogus", 1)
    options = {"w": "2", "journal": "true", "maxPoolSize": "x"}
    with pytest.warns(UserWarning, match="maxPoolSize"):
        assert mongocore.common.get_validated_options(options) == {"w": 2, "journal": True}
    with pytest.raises(ValueError):
        mongocore.common.get_validated_options(options, warn=False)
    theirs = pymongo.common.get_validated_options({"w": "2", "journal": "true"}, warn=False)
    assert dict(theirs) == mongocore.common.get_validated_options({"w": "2", "journal": "true"})


@ANOTHER_API_LEVEL
def test_constants_are_pymongos_but_for_the_seeds_and_the_wire_versions() -> None:
    own = {
        "RETRY_WRITES": False,  # the retryable-writes seed
        "MAX_ADAPTIVE_RETRIES": 0,  # no client backpressure
        "MIN_SUPPORTED_WIRE_VERSION": 6,
        "MAX_SUPPORTED_WIRE_VERSION": 28,
        "MIN_SUPPORTED_SERVER_VERSION": "3.6",
    }
    for name in mongocore.common.__all__:
        value = getattr(mongocore.common, name)
        if not isinstance(value, (int, float, str, tuple, list, frozenset, type(None))):
            continue  # tables and objects: compared above
        expected = own.get(name, getattr(pymongo.common, name))
        assert value == expected, name
    assert mongocore.common.has_c() is False


def test_version_compares_as_pymongo_s() -> None:
    for text in ("7.0.2", "7.1.0-rc1", "3.2.0-97-g1ef94fe", "4.0+", "4.4.dev", "6"):
        assert tuple(mongocore.common.Version.from_string(text)) == tuple(
            pymongo.common.Version.from_string(text)
        ), text
    assert mongocore.common.Version.from_version_array([3, 2, 1, -100]) == (3, 2, 1, -1)
    assert mongocore.common.Version(7, 0).at_least(6, 0, 5)
    assert str(mongocore.common.Version(7, 0, 2)) == "7.0.2.0"


def test_node_helpers() -> None:
    for node in ("Host:27018", "host", "[::1]:27019"):
        assert mongocore.common.clean_node(node) == pymongo.common.clean_node(node)
        assert mongocore.common.partition_node(node) == pymongo.common.partition_node(node)


# --- uri_parser --------------------------------------------------------------------------

URIS = (
    "mongodb://localhost",
    "mongodb://u:p%40@h1,h2:27018/db.coll?replicaSet=rs&uuidRepresentation=standard&w=majority"
    "&wtimeoutMS=100&readPreference=secondary&readPreferenceTags=dc:ny&readPreferenceTags="
    "&connectTimeoutMS=1000&ssl=true&authMechanism=SCRAM-SHA-256"
    "&authMechanismProperties=SERVICE_NAME:x&appname=A&compressors=zlib&maxPoolSize=5"
    "&journal=true&localThresholdMS=30&heartbeatFrequencyMS=1000&retryWrites=false",
    "mongodb://u@h/?authSource=admin",
    "mongodb://h/?tlsInsecure=true",
    "mongodb://h/?tlsAllowInvalidCertificates=true",
    "mongodb://h/?ssl=false",
    "mongodb://h/?uuidRepresentation=pythonLegacy&tz_aware=true",
    "mongodb://h/?w=2&journal=false&wTimeoutMS=0",
    "mongodb://h/?maxStalenessSeconds=120&readPreference=nearest",
    "mongodb://h/?socketTimeoutMS=0&serverSelectionTimeoutMS=5000&maxIdleTimeMS=100",
    "mongodb://h/?timeoutMS=0",
    "mongodb://h/?retryReads=false&loadBalanced=true",
    "mongodb://h/?zlibCompressionLevel=5&compressors=zlib",
    "mongodb://h/?readConcernLevel=majority&minPoolSize=3&maxConnecting=4",
    "mongodb://h/?serverMonitoringMode=poll",
    "mongodb://[::1]:27018/",
    "mongodb://%2Ftmp%2Fmongodb-27017.sock/db",
    "mongodb://h?replicaSet=x",
    "mongodb://h/?unicode_decode_error_handler=replace&datetime_conversion=DATETIME_AUTO",
    "mongodb://h/?maxPoolSize=x",
    "mongodb://h/?w=-1",
    "mongodb://h/?foo=1",
    "mongodb://h/?readPreference=bogus",
    "mongodb://h/?tlsInsecure=true&tlsAllowInvalidHostnames=true",
    "mongodb://h/?ssl=true&tls=false",
    "http://h",
    "mongodb://",
    "mongodb://h/a b",
    "mongodb://u:p:q@h",
    "mongodb://h:99999",
    "mongodb://a,b/?directConnection=true",
    "mongodb://h/?authSource=",
    "mongodb://h/?a=1&b=2;c=3",
    "mongodb://h/?uuidRepresentation=bogus",
    "mongodb://alice:foo/bar@localhost/db",
)
KEYWORDS: tuple[dict[str, Any], ...] = (
    {},
    {"validate": False},
    {"normalize": False},
    {"warn": True},
    {"default_port": 27000},
)


def parsed(parse: Callable[..., Any], uri: str, keywords: dict[str, Any]) -> Any:
    logging.disable(logging.WARNING)  # mongocore's parser logs what it ignores
    try:
        return outcome(lambda: parse(uri, **keywords))
    finally:
        logging.disable(logging.NOTSET)


@pytest.mark.parametrize("uri", URIS)
def test_parse_uri_gives_pymongos_dictionary(uri: str) -> None:
    for keywords in KEYWORDS:
        theirs = parsed(pymongo.uri_parser.parse_uri, uri, keywords)
        assert parsed(mongocore.uri_parser.parse_uri, uri, keywords) == theirs, keywords


def test_parse_uri_keeps_a_plus_in_user_information() -> None:
    uri = "mongodb://a+b:c+d@h/"
    assert mongocore.uri_parser.parse_uri(uri)["username"] == "a+b"  # the spec's decoding
    assert pymongo.uri_parser.parse_uri(uri)["username"] == "a b"


def test_uuid_representation_comes_back_as_mongoengine_reads_it() -> None:
    options = mongocore.uri_parser.parse_uri("mongodb://h/?uuidRepresentation=standard")["options"]
    names = {number: name for name, number in mongocore.common._UUID_REPRESENTATIONS.items()}
    assert names[options["uuidrepresentation"]] == "standard"


@pytest.mark.parametrize(
    ("function", "args"),
    [
        ("split_hosts", ("a,B:27018,[::1]:1,%2Ftmp%2Fx.sock",)),
        ("split_hosts", ("a,,b",)),
        ("split_hosts", ("a%20b",)),
        ("parse_host", ("h:0",)),
        ("parse_host", ("h:2 7",)),
        ("parse_host", ("a:b:c",)),
        ("parse_ipv6_literal_host", ("[::1]:5", 27017)),
        ("parse_ipv6_literal_host", ("::1", 27017)),
        ("parse_userinfo", ("u%40x:p",)),
        ("parse_userinfo", (":p",)),
        ("parse_userinfo", ("u:p%zz",)),
        ("split_options", ("w=1&journal=true&readPreferenceTags=a:b",)),
        ("split_options", ("w=1;journal=true",)),
        ("split_options", ("w",)),
        ("validate_options", ({"replicaSet": "x", "maxPoolSize": "3"},)),
    ],
)
def test_the_other_functions_are_pymongos(function: str, args: tuple[Any, ...]) -> None:
    theirs = outcome(getattr(pymongo.uri_parser, function), *args)
    mine = outcome(getattr(mongocore.uri_parser, function), *args)
    if theirs[0] == "returns" and not isinstance(theirs[2], (list, tuple)):
        theirs = (theirs[0], "dict", dict(theirs[2]))  # pymongo's case-insensitive dict
    assert mine == theirs


# --- collation, read preferences, descriptions --------------------------------------------


def test_collation_is_pymongos() -> None:
    arguments = {"locale": "fr", "strength": 2, "caseLevel": True, "numericOrdering": False}
    ours = mongocore.collation.Collation(**arguments, alternate="shifted", extra=1)
    theirs = pymongo.collation.Collation(**arguments, alternate="shifted", extra=1)
    assert ours.document == theirs.document
    assert repr(ours) == repr(theirs)
    assert ours == mongocore.collation.Collation(**arguments, alternate="shifted", extra=1)
    assert ours != mongocore.collation.Collation("en")
    for bad in ({"locale": 1}, {"locale": "fr", "strength": "x"}, {"locale": "fr", "backwards": 1}):
        mine = outcome(mongocore.collation.Collation, **bad)
        assert mine == outcome(pymongo.collation.Collation, **bad)
    for value in (None, {"locale": "fr"}, ours, "fr"):
        assert outcome(mongocore.collation.validate_collation_or_none, value) == outcome(
            pymongo.collation.validate_collation_or_none,
            theirs if value is ours else value,
        )


def test_make_read_preference_takes_pymongos_mode_numbers() -> None:
    assert make_read_preference(0, None) == Primary()
    assert make_read_preference(2, [{"dc": "ny"}], 120) == Secondary([{"dc": "ny"}], 120)
    assert make_read_preference("nearest", None) == Nearest()
    with pytest.raises(mongocore.common.ConfigurationError, match="tags"):
        make_read_preference(0, [{"dc": "ny"}])
    assert [read_pref_mode_from_name(m) for m in ("primary", "secondary", "nearest")] == [0, 2, 4]
    with pytest.raises(ValueError):
        read_pref_mode_from_name("bogus")


def test_server_and_topology_types_under_pymongos_names() -> None:
    assert SERVER_TYPE.RSPrimary is ServerType.RS_PRIMARY
    assert SERVER_TYPE._fields[:9] == pymongo.server_type.SERVER_TYPE._fields
    assert TOPOLOGY_TYPE.ReplicaSetWithPrimary is TopologyType.REPLICA_SET_WITH_PRIMARY
    a = Address("a", 27017)
    topology = TopologyDescription.initial(TopologySettings(seeds=(a,)))
    primary = ServerDescription.from_hello(
        a,
        {
            "ok": 1,
            "isWritablePrimary": True,
            "setName": "rs",
            "hosts": ["a:27017"],
            "minWireVersion": 0,
            "maxWireVersion": 21,
        },
        round_trip_time=0.01,
    )
    updated = updated_topology_description(topology, primary)
    assert updated.type is TOPOLOGY_TYPE.ReplicaSetWithPrimary
    assert topology.type is TOPOLOGY_TYPE.Unknown  # the description given is unchanged


# --- errors ----------------------------------------------------------------------------------


def test_timeout_is_true_for_the_timeout_errors() -> None:
    assert NetworkTimeout("t").timeout and ServerSelectionTimeoutError("t").timeout
    assert ExecutionTimeout("t", 50).timeout and WTimeoutError("t", 64).timeout
    assert OperationFailure("t", 50).timeout and not OperationFailure("t", 11000).timeout
    assert not PyMongoError("x").timeout
    assert BulkWriteError({"writeErrors": [{"index": 0, "code": 50, "errmsg": "x"}]}).timeout
    wce = {"writeConcernErrors": [{"code": 64, "errmsg": "x", "errInfo": {"wtimeout": True}}]}
    assert BulkWriteError(wce).timeout
    assert not BulkWriteError({"writeErrors": [{"index": 0, "code": 11000, "errmsg": "d"}]}).timeout


def test_document_too_large_is_bsons_invalid_document() -> None:
    error = DocumentTooLarge("too big")
    assert isinstance(error, InvalidDocument) and isinstance(error, PyMongoError)


def test_bad_names_raise_invalid_name_as_pymongo() -> None:
    with MongoClient("mongodb://localhost:1") as client:
        for name in ("", "a.b", "a b", "a$b", "a/b", 'a"b', "a\x00b"):
            with pytest.raises(InvalidName):
                client[name]
        assert client["$external"].name == "$external"
        with pytest.raises(TypeError):
            client.get_database(5)  # type: ignore[arg-type]
        database = client.db
        for name in ("", "a..b", ".a", "a.", "a$b", "a\x00b"):
            with pytest.raises(InvalidName):
                database[name]
        assert database["$cmd"].name == "$cmd"
        for name in ("", "a..b", ".a", "a$b"):
            with pytest.raises(InvalidName):
                database.coll.rename(name)


def test_check_name_is_pymongos_rule() -> None:
    for name in ("db", "", "a.b", "a b", "a$b", "x/y"):
        theirs = outcome(pymongo.database_shared._check_name, name)
        assert outcome(_check_name, name) == theirs, name


# --- event loggers -----------------------------------------------------------------------------


def test_the_event_loggers_log_at_info(caplog: pytest.LogCaptureFixture) -> None:
    a = Address("a", 27017)
    common = {"database_name": "db", "command_name": "ping", "request_id": 7}
    common.update(operation_id=1, address=a, connection_id=3)
    sd = ServerDescription(a)
    with caplog.at_level(logging.INFO, logger="mongocore.event_loggers"):
        event_loggers.CommandLogger().succeeded(
            monitoring.CommandSucceededEvent(0.5, {"ok": 1}, **common)
        )
        event_loggers.ServerLogger().opened(monitoring.ServerOpeningEvent(1, a))
        event_loggers.HeartbeatLogger().failed(
            monitoring.ServerHeartbeatFailedEvent(a, 0.1, OSError("refused"), False)
        )
        event_loggers.ConnectionPoolLogger().connection_created(
            monitoring.ConnectionCreatedEvent(a, 4)
        )
        event_loggers.ServerLogger().description_changed(
            monitoring.ServerDescriptionChangedEvent(1, a, sd, sd.replace(type=ServerType.MONGOS))
        )
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "Command ping with request id 7 on server a:27017 succeeded in 500000 microseconds",
        "Server a:27017 added to topology 1",
        "Heartbeat to server a:27017 failed with error refused",
        "[pool a:27017][connection #4] connection created",
        "Server a:27017 changed type from Unknown to Mongos",
    ]
    for cls in (event_loggers.TopologyLogger, event_loggers.ConnectionPoolLogger):
        assert inspect.isclass(cls)


# --- what importing the modules loads --------------------------------------------------------

SHELL = (
    "mongocore.io.client_topology",
    "mongocore.io.topology",
    "mongocore.io.pool",
    "mongocore.io.monitor",
    "mongocore.io.executor",
    "dns",
    "ssl",
)


def modules_loaded_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(out.split())


def public_modules() -> Iterator[str]:
    yield from sorted(mongocore._SUBMODULES)


def test_importing_the_public_modules_loads_no_io_shell() -> None:
    loaded = modules_loaded_by("\n".join(f"import mongocore.{m}" for m in public_modules()))
    assert not [m for m in SHELL if m in loaded]
    # The broken variant: a client does load them.
    loaded = modules_loaded_by(
        "import mongocore\nmongocore.MongoClient('mongodb://localhost:1').close()"
    )
    assert "mongocore.io.client_topology" in loaded


def test_the_package_reaches_its_modules_as_attributes() -> None:
    loaded = modules_loaded_by("import mongocore\nmongocore.uri_parser.parse_uri\n")
    assert "mongocore.uri_parser" in loaded
    assert "mongocore.collection" not in loaded  # only what was asked for
    with pytest.raises(AttributeError):
        mongocore.no_such_module  # noqa: B018
