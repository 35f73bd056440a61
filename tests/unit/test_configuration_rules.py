"""The option combinations SDAM forbids, and the messages that say why.

Seed: server-discovery-and-monitoring.md, "Allowed configuration combinations",
"Initial TopologyDescription" and "heartbeatFrequencyMS".
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mongocore.core.address import Address
from mongocore.core.description.settings import TopologySettings, check_configuration
from mongocore.errors import ConfigurationError

A = Address("a", 27017)
B = Address("b", 27017)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"seeds": (A, B), "direct_connection": True},
            "directConnection=true cannot be used with multiple seeds (2 given): name one "
            "host, or drop directConnection to discover the deployment",
        ),
        (
            {"seeds": (A,), "direct_connection": True, "srv": True},
            "directConnection=true cannot be used with mongodb+srv://",
        ),
        (
            {"seeds": (A,), "load_balanced": True, "direct_connection": True},
            "loadBalanced=true cannot be used with directConnection=true",
        ),
        (
            {"seeds": (A,), "load_balanced": True, "replica_set": "rs"},
            "loadBalanced=true cannot be used with replicaSet",
        ),
        (
            {"seeds": (A, B), "load_balanced": True},
            "loadBalanced=true requires exactly one host, not 2",
        ),
        (
            {"seeds": (A,), "heartbeat_frequency_ms": 499},
            "heartbeatFrequencyMS must be at least 500, not 499",
        ),
    ],
)
def test_forbidden_combinations_are_explained(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        TopologySettings(**kwargs)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "kwargs",
    [
        {"seeds": (A,), "direct_connection": True},
        {"seeds": (A, B), "srv": True},
        {"seeds": (A,), "load_balanced": True, "srv": True},
        {"seeds": (A,), "heartbeat_frequency_ms": 500},
    ],
)
def test_allowed_combinations(kwargs: dict[str, Any]) -> None:
    settings = TopologySettings(**kwargs)
    assert settings.seeds == kwargs["seeds"]


def test_check_configuration_alone_assumes_no_srv() -> None:
    check_configuration((A,), direct_connection=True, replica_set=None, load_balanced=False)
    with pytest.raises(ConfigurationError, match="mongodb\\+srv"):
        check_configuration(
            (A,), direct_connection=True, replica_set=None, load_balanced=False, srv=True
        )


def test_empty_seed_list_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="mongocore.topology"):
        TopologySettings(seeds=())
        TopologySettings(seeds=(A,))
    assert caplog.messages == ["the client was configured with an empty seed list"]
