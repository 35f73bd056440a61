"""What a wrapping library adds to the client metadata (mongocore.driver_info), and
Client.append_metadata reaching the handshakes of new connections only."""

from __future__ import annotations

import pytest

from mongocore import DRIVER_NAME, __version__
from mongocore.api.client import Client
from mongocore.driver_info import DriverInfo, DriverInfoList, append_driver_info
from mongocore.errors import ConfigurationError
from mongocore.io.handshake import client_metadata
from mongocore.sim import Standalone

BASE = {"driver": {"name": "mongocore", "version": "1.0"}, "os": {"type": "Linux"}, "platform": "P"}


def test_driver_info_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="must not contain"):
        DriverInfo("a|b")
    with pytest.raises(ConfigurationError, match="must not contain"):
        DriverInfo("odm", platform="x|y")
    with pytest.raises(ConfigurationError, match="must be a string"):
        DriverInfo("odm", version=2)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="empty"):
        DriverInfo("")


def test_values_are_appended_never_replaced() -> None:
    infos = [DriverInfo("odm", "2.0", "Framework Platform"), DriverInfo("app")]
    document = append_driver_info(BASE, infos)
    assert document["driver"] == {"name": "mongocore|odm|app", "version": "1.0|2.0"}
    assert document["platform"] == "P|Framework Platform"
    assert document["os"] == BASE["os"]
    assert BASE["driver"] == {"name": "mongocore", "version": "1.0"}  # not changed
    assert append_driver_info(BASE, []) == BASE


def test_list_appends_in_order_and_once() -> None:
    infos = DriverInfoList([DriverInfo("odm")])
    infos.append(DriverInfo("app", "1"))
    infos.append(DriverInfo("odm"))
    assert infos.snapshot() == (DriverInfo("odm"), DriverInfo("app", "1"))
    with pytest.raises(TypeError):
        infos.append("odm")  # type: ignore[arg-type]


def test_client_metadata_carries_driver_info_within_the_size_limit() -> None:
    document = client_metadata(
        "app", driver_info=[DriverInfo("odm", "2.0", "x" * 600)], environ={}, platform_info="P"
    )
    assert document["driver"] == {"name": f"{DRIVER_NAME}|odm", "version": f"{__version__}|2.0"}
    # Too large: the platform is truncated, as the spec's last step says.
    assert document["platform"].startswith("P|xxx")
    assert len(document["platform"]) < 600


def test_append_metadata_reaches_new_connections_only() -> None:
    info = DriverInfo("odm", "1.0")
    with Standalone() as standalone, Client(standalone.uri, driver_info=info) as client:
        server, _ = client.topology.select_server(None, timeout=20)
        first = server.pool.check_out(20)
        try:
            client.append_metadata(DriverInfo("framework", "2.0", "Framework Platform"))
            second = server.pool.check_out(20)
            server.pool.check_in(second)
        finally:
            server.pool.check_in(first)
        seen = standalone.member.server
        old = seen.connection(first.server_connection_id)
        new = seen.connection(second.server_connection_id)
        assert old is not None and new is not None
        assert old.client_metadata is not None and new.client_metadata is not None
        assert old.client_metadata["driver"]["name"] == f"{DRIVER_NAME}|odm"
        assert new.client_metadata["driver"]["name"] == f"{DRIVER_NAME}|odm|framework"
        assert new.client_metadata["driver"]["version"] == f"{__version__}|1.0|2.0"
        assert new.client_metadata["platform"].endswith("|Framework Platform")
