"""A hello with a field of the wrong type never wedges a client's topology.

Seed: server-discovery-and-monitoring.md, "Parsing a hello or legacy hello response":
the bad reply makes its server Unknown with an error naming the field, and the next
good replies are taken as usual.
"""

from __future__ import annotations

from collections.abc import Callable

from mockupdb import MockupDB

from mongocore.api.client import Client
from mongocore.core.description.types import ServerType, TopologyType
from tests.integration.mock_servers import HelloResponder, address_of
from tests.integration.test_client import (
    FAST,
    Changes,
    member_reply,
    replica_set,
    reply_to,
    wait_until,
)


def test_one_bad_election_id_then_good_hellos_the_client_selects_the_primary_again(
    mockupdb_factory: Callable[..., MockupDB],
) -> None:
    """Catches the wedge: a first primary hello whose electionId is a string became the
    stored maximum, and every later primary hello then raised TypeError (``>`` between
    an ObjectId and a str) inside the monitor, which logged it at DEBUG: the client
    never took another description of a primary, not even after an election."""
    servers, addresses, responders = replica_set(mockupdb_factory)
    bad = member_reply(0, addresses, 0)
    bad["electionId"] = "7fffffff0000000000000001"
    responders[0].then(HelloResponder.answer(bad))  # the very first hello: the handshake
    for server in servers:
        server.autoresponds(reply_to("ping", {"ok": 1, "from": str(address_of(server))}))
    changes = Changes()
    with Client(
        f"mongodb://{addresses[0]}/?replicaSet=rs", event_listeners=[changes], **FAST
    ) as client:
        event = changes.wait_for(
            lambda e: e.address == addresses[0] and "electionId" in (e.new_description.error or "")
        )
        assert event.new_description.type is ServerType.UNKNOWN
        assert "'electionId' must be an ObjectId, not str" in (event.new_description.error or "")
        # The next good hellos: member 0 is the primary again, and selected.
        wait_until(client, lambda td: td.type is TopologyType.REPLICA_SET_WITH_PRIMARY)
        assert client.command("admin", {"ping": 1})["from"] == str(addresses[0])
        # An election moves the primary: the topology follows it.
        for i, responder in enumerate(responders):
            responder.set_reply(member_reply(i, addresses, 1, election=2))
        wait_until(
            client,
            lambda td: (
                td.servers[addresses[1]].type is ServerType.RS_PRIMARY
                and td.servers[addresses[0]].type is ServerType.RS_SECONDARY
            ),
        )
        assert client.command("admin", {"ping": 1})["from"] == str(addresses[1])
