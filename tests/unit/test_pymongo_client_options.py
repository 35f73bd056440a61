"""``client.options`` and ``driver=`` as pymongo's: for the same connection string and
keywords, every attribute of ``client.options`` and of its ``pool_options`` that
pymongo's ClientOptions and PoolOptions have is there, equal to pymongo's (in
pymongo's units), except where mongocore follows its seeds (``retry_writes``) or has
no such feature.

No server is needed: the clients are built and closed without an operation.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pymongo
import pymongo.client_options
import pymongo.driver_info
import pymongo.pool_options
import pytest
from bson.binary import UuidRepresentation

import mongocore
from mongocore.driver_info import DriverInfo

URI = (
    "mongodb://h1:27017,h2/db?replicaSet=rs&w=2&wTimeoutMS=100&journal=true"
    "&readConcernLevel=majority&timeoutMS=1500&maxPoolSize=7&minPoolSize=1"
    "&connectTimeoutMS=2500&socketTimeoutMS=3000&waitQueueTimeoutMS=400"
    "&maxIdleTimeMS=5000&appname=app&readPreference=secondary"
    "&readPreferenceTags=dc:ny&maxStalenessSeconds=120&localThresholdMS=30"
    "&serverSelectionTimeoutMS=4000&heartbeatFrequencyMS=2000&maxConnecting=3"
    "&uuidRepresentation=javaLegacy&retryReads=false&tz_aware=true"
)

#: What mongocore answers otherwise, on purpose (docs/from-pymongo.md):
#: retryWrites defaults to false (the retryable-writes seed); pymongo's backpressure
#: retries are not implemented (0 is the only maxAdaptiveRetries mongocore takes).
_DELIBERATE = {"retry_writes", "max_adaptive_retries"}


def _public(cls: type) -> list[str]:
    return sorted(
        name
        for name, value in inspect.getmembers(cls)
        if isinstance(value, property) and not name.startswith("_")
    )


def _comparable(value: Any) -> Any:
    """A concern or read preference as its class name and document (each driver
    has its own classes)."""
    name = type(value).__name__
    if name in ("ReadConcern", "WriteConcern", "Primary", "PrimaryPreferred", "Secondary") or (
        name in ("SecondaryPreferred", "Nearest")
    ):
        return (name, value.document)
    return value


@pytest.fixture
def clients() -> Iterator[tuple[Any, Any]]:
    theirs: Any = pymongo.MongoClient(
        URI, connect=False, driver=pymongo.driver_info.DriverInfo("odm", "1.2", "py")
    )
    ours: Any = mongocore.MongoClient(
        URI, connect=False, driver=pymongo.driver_info.DriverInfo("odm", "1.2", "py")
    )
    try:
        yield theirs, ours
    finally:
        theirs.close()
        ours.close()


def test_client_options_have_pymongos_attributes_and_values(clients: tuple[Any, Any]) -> None:
    theirs, ours = clients
    names = _public(pymongo.client_options.ClientOptions)
    assert names  # pymongo's ClientOptions has its properties
    for name in names:
        assert hasattr(ours.options, name), name
        if name in _DELIBERATE or name in ("pool_options", "server_selector"):
            continue
        mine, pymongos = getattr(ours.options, name), getattr(theirs.options, name)
        assert _comparable(mine) == _comparable(pymongos), name
    assert ours.options.retry_writes is False
    assert ours.options.server_selector("anything") == "anything"


def test_pool_options_have_pymongos_attributes_and_values(clients: tuple[Any, Any]) -> None:
    theirs, ours = clients
    names = _public(pymongo.pool_options.PoolOptions)
    assert names
    for name in names:
        assert hasattr(ours.options.pool_options, name), name
        mine = getattr(ours.options.pool_options, name)
        pymongos = getattr(theirs.options.pool_options, name)
        if name == "metadata":
            # The driver's own name and version are each driver's; the wrapping
            # library's are appended to both.
            assert mine["driver"]["name"].endswith("|odm")
            assert mine["driver"]["version"].endswith("|1.2")
            assert mine["application"] == pymongos["application"] == {"name": "app"}
            continue
        if name == "driver":
            assert (mine.name, mine.version, mine.platform) == tuple(pymongos), name
            continue
        assert mine == pymongos, name


def test_codec_options_from_the_connection_string(clients: tuple[Any, Any]) -> None:
    theirs, ours = clients
    assert ours.options.codec_options == theirs.options.codec_options
    assert ours.options.codec_options.uuid_representation == UuidRepresentation.JAVA_LEGACY
    assert ours.options.codec_options.tz_aware is True


def test_driver_is_appended_to_the_handshake_metadata() -> None:
    """``driver=`` (pymongo's DriverInfo or mongocore's) goes into every handshake's
    client metadata, as ``driver_info=`` does; anything else is a TypeError."""
    for driver in (pymongo.driver_info.DriverInfo("odm", "2.0"), DriverInfo("odm", "2.0")):
        with mongocore.MongoClient("mongodb://localhost:1", driver=driver) as client:
            metadata = client.options.pool_options.metadata
            assert metadata["driver"]["name"] == f"{mongocore.DRIVER_NAME}|odm"
            assert metadata["driver"]["version"].endswith("|2.0")
            assert client.options.pool_options.driver == DriverInfo("odm", "2.0")
    with pytest.raises(TypeError, match="DriverInfo"):
        mongocore.MongoClient("mongodb://localhost:1", driver="odm")


def test_append_metadata_takes_pymongos_driver_info() -> None:
    with mongocore.MongoClient("mongodb://localhost:1") as client:
        client.append_metadata(pymongo.driver_info.DriverInfo("lib", "3"))
        assert client.options.pool_options.metadata["driver"]["name"].endswith("|lib")


def test_defaults_are_pymongos_but_for_the_seeds() -> None:
    theirs: Any = pymongo.MongoClient("mongodb://localhost:1", connect=False)
    ours: Any = mongocore.MongoClient("mongodb://localhost:1")
    try:
        for name in _public(pymongo.client_options.ClientOptions):
            if name in _DELIBERATE or name in ("pool_options", "server_selector", "connect"):
                continue
            mine, pymongos = getattr(ours.options, name), getattr(theirs.options, name)
            assert _comparable(mine) == _comparable(pymongos), name
        assert ours.options.retry_writes is False and theirs.options.retry_writes is True
    finally:
        theirs.close()
        ours.close()
