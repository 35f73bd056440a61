"""The simulated load balancer (sim/load_balancer.py): one address in front of several
mongoses, each connection served by one of them, round robin, with that mongos's
serviceId and fail points."""

from __future__ import annotations

import pytest

from mongocore.sim import LoadBalanced
from tests.unit.sim_wire import RawClient


def _balancer_address(lb: LoadBalanced) -> tuple[str, int]:
    assert lb.balancer is not None
    return (lb.balancer.server.host, lb.balancer.server.port)


def test_one_mongos_has_no_balancer_in_front() -> None:
    with LoadBalanced(shard_members=1, election_delay=0.02) as lb:
        assert lb.balancer is None
        assert lb.balancer_host == lb.mongos.host
        assert lb.uri == lb.balancer_uri == f"mongodb://{lb.mongos.host}/?loadBalanced=true"
    with pytest.raises(ValueError):
        LoadBalanced(mongoses=0)


def test_connections_are_spread_round_robin_with_each_mongos_service_id() -> None:
    with LoadBalanced(mongoses=2, shard_members=1, election_delay=0.02) as lb:
        assert lb.balancer_uri == f"mongodb://{lb.balancer_host}/?loadBalanced=true"
        ids = []
        for _ in range(4):
            with RawClient(_balancer_address(lb)) as client:
                reply = client.handshake(loadBalanced=True)
                ids.append(reply["serviceId"])
                assert client.command("admin", {"ping": 1})["ok"] == 1.0
        first, second = (m.service_id for m in lb.mongoses)
        assert first != second
        assert ids == [first, second, first, second]


def test_a_fail_point_acts_on_its_own_mongos_only() -> None:
    with (
        LoadBalanced(mongoses=2, shard_members=1, election_delay=0.02) as lb,
        RawClient(_balancer_address(lb)) as a,
        RawClient(_balancer_address(lb)) as b,
    ):
        a.handshake(loadBalanced=True)
        b.handshake(loadBalanced=True)
        failed = a.command(
            "admin",
            {
                "configureFailPoint": "failCommand",
                "mode": "alwaysOn",
                "data": {"failCommands": ["ping"], "errorCode": 91},
            },
        )
        assert failed["ok"] == 1.0
        assert a.command("admin", {"ping": 1})["code"] == 91
        assert b.command("admin", {"ping": 1})["ok"] == 1.0  # the other mongos


def test_a_connection_to_a_mongos_that_is_down_is_closed() -> None:
    with LoadBalanced(mongoses=2, shard_members=1, election_delay=0.02) as lb:
        with RawClient(_balancer_address(lb)) as a:
            a.handshake(loadBalanced=True)
            lb.kill(lb.mongoses[0])
            a.send_msg("admin", {"ping": 1})
            assert a.closed_by_peer()
        with RawClient(_balancer_address(lb)) as b:  # the next one: the live mongos
            assert b.handshake(loadBalanced=True)["serviceId"] == lb.mongoses[1].service_id
