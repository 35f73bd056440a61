"""Wire compression end to end over loopback, against mongocore.sim.

Each compressor is negotiated in the handshake and then used for every command but
hello and the authentication commands; the simulator records which compressor each
request arrived with and answers compressed in kind. pymongo, an independent client,
compresses to the same simulator with each compressor.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyuca", reason="the simulator needs the sim extra")

from mongocore.api.client import Client
from mongocore.core import compression
from mongocore.core.compression import available_compressors, compressor_for
from mongocore.core.options import ClientOptions
from mongocore.errors import ConfigurationError, NetworkError
from mongocore.io.auth import authenticator_for
from mongocore.io.connection import Connection, connect
from mongocore.io.connection_settings import ConnectionSettings
from mongocore.sim import ReplicaSet, Standalone, User
from mongocore.sim.server import RequestRecord

ALL = ("zlib", "zstd", "snappy")
FAST: dict[str, Any] = {"heartbeatFrequencyMS": 500, "serverSelectionTimeoutMS": 10_000}
BIG = [{"text": "a fairly repetitive sentence " * 50, "n": i} for i in range(20)]


def installed(name: str) -> Any:
    if name not in available_compressors():
        return pytest.param(
            name, marks=pytest.mark.skip(reason=f"{name} needs its extra (mongocore[{name}])")
        )
    return name


COMPRESSORS = [installed(name) for name in ALL]


@pytest.fixture
def server() -> Iterator[Standalone]:
    enabled = [name for name in ALL if name in available_compressors()]
    with Standalone(compressors=enabled) as standalone:
        yield standalone


def open_connection(uri: str) -> Connection:
    options = ClientOptions.from_uri(uri)
    return connect(
        options.hosts[0],
        ConnectionSettings.from_options(options),
        authenticate=authenticator_for(options),
    )


def requests(server: Standalone, conn: Connection) -> list[RequestRecord]:
    return [
        r for r in server.member.server.requests if r.connection_id == conn.server_connection_id
    ]


@pytest.mark.parametrize("name", COMPRESSORS)
def test_each_compressor(server: Standalone, name: str) -> None:
    conn = open_connection(f"mongodb://{server.member.host}/?compressors={name}")
    try:
        assert conn.compressor == name
        assert conn.hello["compression"] == [name]
        conn.command("test", {"insert": "c"}, sequences={"documents": BIG})
        reply = conn.command("test", {"find": "c", "batchSize": 100})
        # The reply came back compressed with the same compressor, and decoded.
        assert [d["n"] for d in reply["cursor"]["firstBatch"]] == list(range(20))
        assert conn.command("admin", {"hello": 1})["ok"] == 1
        seen = [(r.command, r.compressor) for r in requests(server, conn)]
        assert seen == [("isMaster", None), ("insert", name), ("find", name), ("hello", None)]
    finally:
        conn.close()


def test_the_client_order_decides() -> None:
    with Standalone(compressors=["zlib"]) as standalone:
        conn = open_connection(f"mongodb://{standalone.member.host}/?compressors=snappy,zlib")
        try:
            assert conn.hello["compression"] == ["zlib"]
            assert conn.compressor == "zlib"
        finally:
            conn.close()
    both = [name for name in ("zstd", "zlib") if name in available_compressors()]
    with Standalone(compressors=list(reversed(both))) as standalone:
        conn = open_connection(f"mongodb://{standalone.member.host}/?compressors={','.join(both)}")
        try:
            assert conn.compressor == both[0]
        finally:
            conn.close()


def test_no_common_compressor_means_no_compression() -> None:
    with Standalone(compressors=["zlib"]) as standalone:
        conn = open_connection(f"mongodb://{standalone.member.host}/?compressors=snappy")
        try:
            assert "compression" not in conn.hello
            assert conn.compressor is None
            conn.command("admin", {"ping": 1})
            assert all(r.compressor is None for r in requests(standalone, conn))
        finally:
            conn.close()
    with Standalone() as plain:
        conn = open_connection(f"mongodb://{plain.member.host}/?compressors=zlib")
        try:
            assert conn.compressor is None
            assert conn.command("admin", {"ping": 1})["ok"] == 1
        finally:
            conn.close()


def test_authentication_commands_are_never_compressed() -> None:
    users = [User("app", "app-Pa55", mechanisms=("SCRAM-SHA-1",))]
    with Standalone(users=users, compressors=["zlib"]) as standalone:
        # No mechanism: a speculative SCRAM-SHA-256 attempt, then SCRAM-SHA-1 in full.
        conn = open_connection(f"mongodb://app:app-Pa55@{standalone.member.host}/?compressors=zlib")
        try:
            conn.command("test", {"insert": "c", "documents": [{"x": 1}]})
            seen = [(r.command, r.compressor) for r in requests(standalone, conn)]
            assert seen == [
                ("isMaster", None),
                ("saslStart", None),
                ("saslContinue", None),
                ("insert", "zlib"),
            ]
        finally:
            conn.close()


def test_the_server_refuses_a_compressor_it_did_not_enable() -> None:
    with Standalone(compressors=["zlib"]) as standalone:
        conn = open_connection(f"mongodb://{standalone.member.host}/?compressors=zlib")
        try:
            # Not what was negotiated: a server closes the connection on it.
            conn._compressor = compressor_for("noop")
            with pytest.raises(NetworkError):
                conn.command("admin", {"ping": 1})
        finally:
            conn.close()


def test_settings_and_options(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = ClientOptions.from_uri("mongodb://h/?compressors=zstd,zlib&zlibCompressionLevel=9")
    monkeypatch.setattr(compression, "available_compressors", lambda: ("zlib",))
    with caplog.at_level(logging.WARNING, logger="mongocore.connection"):
        settings = ConnectionSettings.from_options(options)
    assert settings.compressors == ("zlib",)
    assert settings.zlib_compression_level == 9
    assert "'zstd' is not available" in caplog.text
    with pytest.raises(ConfigurationError, match="unknown compressor 'lz4'"):
        ConnectionSettings(compressors=("lz4",))
    with pytest.raises(ConfigurationError, match="distinct"):
        ConnectionSettings(compressors=("zlib", "zlib"))
    with pytest.raises(ConfigurationError, match="distinct"):
        ConnectionSettings(compressors="zlib")  # type: ignore[arg-type]
    monkeypatch.setattr(compression, "_snappy", None)
    with pytest.raises(ConfigurationError, match=r"mongocore\[snappy\]"):
        ConnectionSettings(compressors=("snappy",))


def test_the_client_compresses(server: Standalone) -> None:
    with Client(f"mongodb://{server.member.host}/?compressors=zlib", **FAST) as client:
        assert client.command("test", {"insert": "c", "documents": BIG})["n"] == len(BIG)
        assert client.command("test", {"count": "c"})["n"] == len(BIG)
    seen = server.member.server.requests
    assert {r.compressor for r in seen if r.command in ("insert", "count")} == {"zlib"}
    assert {r.compressor for r in seen if r.command in ("isMaster", "hello")} == {None}


# --- pymongo, an independent client ---------------------------------------------------------


def pymongo_supports(name: str) -> bool:
    if name == "zstd":
        # pymongo's zstd is the standard library's (3.14) or its backport.
        for module in ("compression.zstd", "backports.zstd"):
            try:
                __import__(module)
            except ImportError:
                continue
            return True
        return False
    if name == "snappy":
        return "snappy" in available_compressors()
    return True


@pytest.mark.parametrize("name", COMPRESSORS)
def test_pymongo_compresses_to_the_simulator(name: str) -> None:
    pymongo = pytest.importorskip("pymongo")
    if not pymongo_supports(name):
        pytest.skip(f"pymongo has no {name} support installed here")
    with ReplicaSet(2, compressors=[name], election_delay=0.05) as rs:
        client: Any = pymongo.MongoClient(rs.uri, compressors=name, **FAST)
        try:
            client.test.c.insert_many([dict(d) for d in BIG])
            assert client.test.c.count_documents({}) == len(BIG)
            assert len(list(client.test.c.find())) == len(BIG)
        finally:
            client.close()
        seen = [r for member in rs.members for r in member.server.requests]
    assert {r.compressor for r in seen if r.command in ("insert", "aggregate", "find")} == {name}
    assert {r.compressor for r in seen if r.command in ("isMaster", "hello", "ismaster")} == {None}
