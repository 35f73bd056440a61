"""``MongoClient``: the client under pymongo's name, with pymongo's positional parameters.

``MongoClient(host, port, document_class, tz_aware, connect, type_registry, **kwargs)``
maps onto :class:`mongocore.api.client.Client`: ``host`` and ``port`` make the seed
list; the codec parameters and every other keyword are passed on as the Client's
keyword options. A MongoClient is a Client; its ``read_preference`` shows in
pymongo's classes (:mod:`mongocore.read_preferences`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional, Union

from mongocore.api.client import Client
from mongocore.api.types import _DocumentType
from mongocore.driver_info import driver_info_of
from mongocore.errors import ConfigurationError
from mongocore.read_preferences import _ServerMode, from_read_preference

__all__ = ["MongoClient"]


class MongoClient(Client[_DocumentType]):
    """A client for one MongoDB deployment, constructed as pymongo's is.

    ``host`` is a connection string (``"mongodb://h1,h2/?replicaSet=rs"``), a
    ``"host[:port]"`` (comma-separated for several), or a list of either; it defaults
    to localhost. ``port`` is the port of every host given without one (default
    27017). ``document_class``, ``tz_aware`` and ``type_registry`` are codec options,
    passed on as keywords when given. ``connect`` is accepted for compatibility:
    mongocore always starts monitoring in the background at once, and never blocks
    in the constructor.

    ``read_preference`` (or ``readPreference``) may be a read preference object such
    as ``ReadPreference.SECONDARY`` or ``SecondaryPreferred(tag_sets=[...])``, or a
    mode name. Other keywords are client options (connection string names in any
    case, or snake_case) and ``event_listeners``.
    """

    HOST = "localhost"
    PORT = 27017

    def __init__(  # noqa: PLR0917 (pymongo's positional parameters)
        self,
        host: Union[str, Sequence[str], None] = None,
        port: Optional[int] = None,
        document_class: Optional[type[Any]] = None,
        tz_aware: Optional[bool] = None,
        connect: Optional[bool] = None,
        type_registry: Optional[Any] = None,
        **kwargs: Any,
    ) -> None:
        if connect is not None and not isinstance(connect, bool):
            raise TypeError(f"connect must be True or False, not {connect!r}")
        driver = kwargs.pop("driver", None)
        if driver is not None:
            if "driver_info" in kwargs:
                raise ConfigurationError("give driver or driver_info, not both")
            kwargs["driver_info"] = driver_info_of(driver, "driver")
        codec = {
            "document_class": document_class,
            "tz_aware": tz_aware,
            "type_registry": type_registry,
        }
        options: dict[str, Any] = {key: value for key, value in codec.items() if value is not None}
        options.update(kwargs)
        self._pymongo_read_preference: Optional[_ServerMode] = None
        super().__init__(seed_list(host, port), **options)
        self._connect = connect

    @property
    def read_preference(self) -> _ServerMode:
        """The client's default read preference, as pymongo's classes show it
        (``Secondary(tag_sets=None, max_staleness=-1, hedge=None)``)."""
        # Converted once, on first use (read preferences are immutable).
        if self._pymongo_read_preference is None:
            self._pymongo_read_preference = from_read_preference(super().read_preference)
        return self._pymongo_read_preference


def seed_list(host: Union[str, Sequence[str], None], port: Optional[int]) -> Union[str, list[str]]:
    """What :class:`Client` takes for pymongo's ``host`` and ``port``.

    Without ``port`` the host (or list of hosts) is passed on as given. With it, every
    host named without a port gets it, inside a ``mongodb://`` connection string too.
    """
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise TypeError(f"port must be an int, not {type(port).__name__}")
    if host is None:
        host = MongoClient.HOST
    if isinstance(host, str):
        entries = [host]
    elif isinstance(host, Sequence) and all(isinstance(item, str) for item in host):
        entries = list(host)
    else:
        raise TypeError(
            "host must be a connection string, a 'host:port' string or a list of them, "
            f"not {type(host).__name__}"
        )
    if not entries:
        raise ConfigurationError("host must name at least one server")
    if port is None:
        return host if isinstance(host, str) else entries
    if any("://" in entry for entry in entries):
        if len(entries) > 1:
            raise ConfigurationError(
                "a connection string cannot be combined with other hosts: put every "
                "host in the connection string"
            )
        return _uri_with_port(entries[0], port)
    hosts = [item.strip() for entry in entries for item in entry.split(",")]
    return [_with_port(item, port) for item in hosts]


def _with_port(host: str, port: int) -> str:
    """``host`` with ``:port`` appended unless it names a port (or a socket path)."""
    if not host or host.endswith(".sock") or "/" in host or "%2F" in host.upper():
        return host
    if host.startswith("["):  # an IPv6 literal: "[::1]" or "[::1]:27017"
        return host if not host.endswith("]") else f"{host}:{port}"
    if ":" in host:
        return host
    return f"{host}:{port}"


def _uri_with_port(uri: str, port: int) -> str:
    """A ``mongodb://`` connection string whose hosts without a port get ``port``."""
    scheme, _, rest = uri.partition("://")
    if scheme == "mongodb+srv":
        raise ConfigurationError(
            "port cannot be given with a mongodb+srv:// connection string: the SRV "
            "records give each host's port"
        )
    end = len(rest)
    for stop in ("/", "?"):
        position = rest.find(stop)
        if position != -1:
            end = min(end, position)
    authority, tail = rest[:end], rest[end:]
    userinfo, at, hosts = authority.rpartition("@")
    hosts = ",".join(_with_port(item, port) for item in hosts.split(","))
    return f"{scheme}://{userinfo}{at}{hosts}{tail}"
