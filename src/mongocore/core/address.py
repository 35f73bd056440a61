"""Server addresses: a host and a port, normalized as SDAM requires.

Host names are lower-cased ("Hostnames are normalized to lower-case"); a missing
port is 27017. Unix domain sockets are addresses whose host is a path ending in
``.sock`` and whose port is None.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple, Optional

DEFAULT_PORT = 27017


class Address(NamedTuple):
    host: str
    port: Optional[int]

    def __str__(self) -> str:
        if self.port is None:
            return self.host
        if ":" in self.host:  # an IPv6 literal
            return f"[{self.host}]:{self.port}"
        return f"{self.host}:{self.port}"

    @property
    def is_unix_socket(self) -> bool:
        return self.port is None


@lru_cache(maxsize=4096)
def parse_address(text: str, default_port: int = DEFAULT_PORT) -> Address:
    """Parse ``host``, ``host:port``, ``[v6]:port`` or a ``.sock`` path into an Address.

    Cached: monitors parse the same member lists on every heartbeat.
    """
    if text.endswith(".sock"):
        return Address(text, None)
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"an IPv6 address must be enclosed in '[' and ']': {text!r}")
        host = text[1:end]
        rest = text[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError(f"unexpected characters after the IPv6 address: {text!r}")
        port_text = rest[1:] if rest else ""
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, ""
        elif ":" in host:
            raise ValueError(f"an IPv6 address must be enclosed in '[' and ']': {text!r}")
    if not host:
        raise ValueError(f"empty host in address {text!r}")
    if port_text == "":
        return Address(host.lower(), default_port)
    if not port_text.isdigit():
        raise ValueError(f"port must be an integer, not {port_text!r} in {text!r}")
    port = int(port_text)
    if not 0 < port <= 65535:
        raise ValueError(f"port must be between 1 and 65535, not {port} in {text!r}")
    return Address(host.lower(), port)
