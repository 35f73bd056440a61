"""The shape of a deployment the plugin builds: its kind and the options that say how.

A shape comes from the ini options (``mongodb_members``, ``mongodb_auth``, ...), which
give every fixture its defaults, and for a test's own deployment from the ``mongodb``
marker or the factory's keyword arguments, which override them. Keywords that are none
of the plugin's options go to the simulator's class as they are (``arbiters=1``,
``tags=[...]``, ``compressors=("zstd",)``): whatever ``mongocore.sim`` takes.

Nothing here imports the simulator: the plugin loads in every pytest run, and the
simulator (its extra may be missing) only when a test asks for a deployment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Optional

__all__ = [
    "INI_OPTIONS",
    "KINDS",
    "SHAPE_OPTIONS",
    "Shape",
    "parse_auth",
]

#: The fixtures' deployment kinds, as the fixtures and the factory name them.
KINDS = ("standalone", "replica_set", "sharded_cluster", "load_balanced")

#: The plugin's own shape options, and the kinds each applies to.
SHAPE_OPTIONS: dict[str, tuple[str, ...]] = {
    "members": ("replica_set",),
    "name": ("replica_set", "sharded_cluster"),
    "hostname": KINDS,
    "auth": KINDS,
    "tls": KINDS,
    "election_delay": ("replica_set", "sharded_cluster", "load_balanced"),
    "shard_members": ("sharded_cluster", "load_balanced"),
    "mongoses": ("sharded_cluster", "load_balanced"),
}

#: ini option -> (shape option, help). Every one is also read by the fixtures that do
#: not take it (a standalone has no members): an ini value is a default for them all.
INI_OPTIONS: dict[str, tuple[str, str]] = {
    "mongodb_members": ("members", "members of a simulated replica set (3)"),
    "mongodb_replica_set_name": (
        "name",
        "name of a simulated replica set (rs0), and of a cluster's shard (shard01)",
    ),
    "mongodb_hostname": (
        "hostname",
        "the host name the simulated processes advertise: 127.0.0.1 (the default) or"
        " localhost; they listen on 127.0.0.1 either way",
    ),
    "mongodb_auth": (
        "auth",
        "USER:PASSWORD: the simulated deployments require authentication, with this"
        " SCRAM user in admin (the fixtures' URIs carry the credentials)",
    ),
    "mongodb_tls": (
        "tls",
        "true: the simulated deployments require TLS, with a CA and a server certificate"
        " made for the session (the fixtures' URIs carry tls=true and tlsCAFile)",
    ),
    "mongodb_election_delay": (
        "election_delay",
        "seconds a simulated election takes (0.2)",
    ),
    "mongodb_shard_members": ("shard_members", "members of a simulated cluster's shard (3)"),
    "mongodb_mongoses": (
        "mongoses",
        "mongos routers of a simulated sharded cluster (1), or behind a load balancer (1)",
    ),
}


def parse_auth(value: Any) -> Optional[tuple[str, str]]:
    """``"USER:PASSWORD"`` (split at the first colon) or a (user, password) pair; None
    or ``""``: no authentication."""
    if value is None or value == "":
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        user, password = value
    elif isinstance(value, str) and ":" in value:
        user, _, password = value.partition(":")
    else:
        raise ValueError(f"auth must be 'USER:PASSWORD' or a (user, password) pair, not {value!r}")
    if not isinstance(user, str) or not user or not isinstance(password, str):
        raise ValueError(f"auth needs a user name and a password, not {value!r}")
    return user, password


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("", "0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false, not {value!r}")


def _parse_count(value: Any, what: str) -> int:
    number = int(value) if isinstance(value, str) else value
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ValueError(f"{what} must be a positive whole number, not {value!r}")
    return number


def _parse_members(value: Any) -> Any:
    # A list of MemberConfig goes to ReplicaSet as it is (the simulator checks it).
    if isinstance(value, (list, tuple)):
        return list(value)
    return _parse_count(value, "members")


def _parse_delay(value: Any) -> float:
    delay = float(value)
    if delay < 0:
        raise ValueError(f"election_delay must be 0 or more seconds, not {value!r}")
    return delay


def _parse_hostname(value: Any) -> Optional[str]:
    if value is None or value in ("", "127.0.0.1"):
        return None
    if not isinstance(value, str) or ":" in value or "," in value:
        raise ValueError(f"hostname must be a host name without a port, not {value!r}")
    return value


def _parse_name(value: Any) -> Optional[str]:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"name must be a string, not {value!r}")
    return value


_PARSERS: dict[str, Any] = {
    "members": _parse_members,
    "name": _parse_name,
    "hostname": _parse_hostname,
    "auth": parse_auth,
    "tls": _parse_bool,
    "election_delay": _parse_delay,
    "shard_members": lambda v: _parse_count(v, "shard_members"),
    "mongoses": lambda v: _parse_count(v, "mongoses"),
}


@dataclasses.dataclass(frozen=True)
class Shape:
    """What to build: a kind and its options (the defaults are the simulator's)."""

    kind: str
    members: Any = 3
    #: The replica set's name; a sharded cluster's shard's. None: the simulator's.
    name: Optional[str] = None
    hostname: Optional[str] = None
    auth: Optional[tuple[str, str]] = dataclasses.field(default=None, repr=False)
    tls: bool = False
    election_delay: float = 0.2
    shard_members: int = 3
    mongoses: int = 1
    #: Other keyword arguments for the simulator's class.
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown deployment kind {self.kind!r}: one of {', '.join(KINDS)}")

    def with_options(self, options: Mapping[str, Any], *, strict: bool) -> Shape:
        """This shape with ``options`` applied. ``strict`` (a marker's or the
        factory's options): an option of the plugin's that this kind does not take
        is an error; otherwise (the ini's defaults) it is left out."""
        changes: dict[str, Any] = {}
        extra = dict(self.extra)
        for key, value in options.items():
            kinds = SHAPE_OPTIONS.get(key)
            if kinds is None:
                if not strict:
                    raise ValueError(f"unknown option {key!r}")
                extra[key] = value
                continue
            if self.kind not in kinds:
                if strict:
                    raise ValueError(
                        f"a {self.kind.replace('_', ' ')} takes no {key!r} (it is for: "
                        f"{', '.join(k.replace('_', ' ') for k in kinds)})"
                    )
                continue
            try:
                changes[key] = _PARSERS[key](value)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{key}: {exc}") from None
        if "users" in extra and (changes.get("auth") or self.auth):
            raise ValueError("give auth= or users=, not both")
        return dataclasses.replace(self, extra=extra, **changes)

    def describe(self) -> str:
        """The options that differ from the simulator's defaults, for messages."""
        default = Shape(self.kind)
        parts = [
            f"{f.name}={getattr(self, f.name)!r}"
            for f in dataclasses.fields(self)
            if f.name not in ("kind", "extra", "auth")
            and self.kind in SHAPE_OPTIONS.get(f.name, ())
            and getattr(self, f.name) != getattr(default, f.name)
        ]
        if self.auth is not None:
            parts.append(f"auth={self.auth[0]!r}:***")
        parts += [f"{key}={value!r}" for key, value in self.extra.items()]
        return f"{self.kind}({', '.join(parts)})"
