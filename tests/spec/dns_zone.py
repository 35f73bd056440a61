"""A small authoritative DNS server for the initial-dns-seedlist-discovery suite.

The suite's README lists the A, SRV and TXT records its tests need (the ```dns block of
its "Test Setup"); :func:`parse_records` reads that list into a :class:`Zone`, and
:class:`DnsServer` answers queries for it over UDP on 127.0.0.1, on a free port, with
dnspython building and parsing the messages. Names with no record of the asked type
get NODATA when some record lives at or below them (an empty non-terminal, as a real
zone answers), NXDOMAIN otherwise.

The server is a thread named ``mongocore-test-dns``; ``stop()`` joins it.
"""

from __future__ import annotations

import re
import selectors
import socket
import threading
from collections import defaultdict
from dataclasses import dataclass, field

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
from dns.rdata import Rdata

__all__ = ["DnsServer", "Zone", "parse_records"]

_RECORDS_BLOCK = re.compile(r"```dns\n(.*?)```", re.DOTALL)
# "<name> <ttl> IN <type> <data>", the layout of the README's tables.
_RECORD_LINE = re.compile(r"^(\S+)\s+(\d+)\s+IN\s+(A|SRV|TXT)\s+(.+?)\s*$")


@dataclass
class Zone:
    """Records by (owner name, type), each with its TTL."""

    records: dict[tuple[dns.name.Name, int], list[tuple[int, Rdata]]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def add(self, name: str, ttl: int, rdtype: str, data: str) -> None:
        """One record, its data as the README writes it (SRV: "port target")."""
        owner = dns.name.from_text(name)
        if rdtype == "SRV":
            port, target = data.split()
            data = f"0 0 {port} {target}"  # priority and weight, which drivers ignore
        rdata = dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.from_text(rdtype), data)
        self.records[(owner, rdata.rdtype)].append((ttl, rdata))

    def names_of_type(self, rdtype: str) -> set[str]:
        """Owner names (lower case, no final dot) holding a record of this type."""
        wanted = dns.rdatatype.from_text(rdtype)
        return {
            owner.to_text(omit_final_dot=True).lower()
            for owner, kind in self.records
            if kind == wanted
        }

    def _exists(self, name: dns.name.Name) -> bool:
        return any(owner == name or owner.is_subdomain(name) for owner, _ in self.records)

    def answer(self, wire: bytes) -> bytes:
        """The authoritative response to one query message."""
        query = dns.message.from_wire(wire)
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        for question in query.question:
            found = self.records.get((question.name, question.rdtype), [])
            if found:
                rrset = response.find_rrset(
                    response.answer,
                    question.name,
                    dns.rdataclass.IN,
                    question.rdtype,
                    create=True,
                )
                for ttl, rdata in found:
                    rrset.add(rdata, ttl)
            elif not self._exists(question.name):
                response.set_rcode(dns.rcode.NXDOMAIN)
        return response.to_wire()


def parse_records(readme: str) -> Zone:
    """The records of the README's ```dns block. SRV lines give "port target" (priority
    and weight 0); TXT lines give one or more quoted strings, kept as one record."""
    zone = Zone()
    for block in _RECORDS_BLOCK.findall(readme):
        for line in block.splitlines():
            match = _RECORD_LINE.match(line.strip())
            if match is None:
                continue  # a table header or a blank line
            name, ttl, rdtype, data = match.groups()
            zone.add(name, int(ttl), rdtype, data)
    if not zone.records:
        raise ValueError("no ```dns block of A, SRV and TXT records found in the README")
    return zone


class DnsServer:
    """Serves a :class:`Zone` over UDP on 127.0.0.1 (``port`` once started)."""

    def __init__(self, zone: Zone) -> None:
        self.zone = zone
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name="mongocore-test-dns", daemon=True)

    def start(self) -> DnsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._wake_w.send(b"x")
        self._thread.join()
        for sock in (self._sock, self._wake_r, self._wake_w):
            sock.close()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._sock, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                events = selector.select()
                if any(key.fileobj is self._wake_r for key, _ in events):
                    return
                try:
                    wire, peer = self._sock.recvfrom(65535)
                except OSError:
                    continue
                self._sock.sendto(self.zone.answer(wire), peer)
