"""Connection string options that may not be given together.

Implements the URI Options spec ("Conflicting TLS options", "directConnection URI
option with multiple seeds or SRV URI"), Initial DNS Seedlist Discovery ("URI
Validation": srvServiceName and srvMaxHosts), SDAM ("Allowed configuration
combinations", through :func:`~mongocore.core.description.settings.check_configuration`,
which also checks Load Balancer mode), server selection ("Components of a read
preference": mode primary takes no tags and no max staleness), the pool size bounds,
write concern (w=0 with journal) and SOCKS5 support ("MongoClient Configuration").
The parser (:mod:`mongocore.core.uri`) and the client options
(:mod:`mongocore.core.options`) both call :func:`check_options`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mongocore.core.address import Address
from mongocore.core.description.settings import DEFAULT_HEARTBEAT_FREQUENCY_MS, check_configuration
from mongocore.core.uri_options import PROXY_OPTIONS
from mongocore.errors import ConfigurationError

__all__ = ["check_options"]

_SRV_SCHEME = "mongodb+srv"

# "Conflicting TLS options": each pair may not appear together.
_TLS_CONFLICTS = (
    ("tlsInsecure", "tlsAllowInvalidCertificates"),
    ("tlsInsecure", "tlsAllowInvalidHostnames"),
    ("tlsInsecure", "tlsDisableOCSPEndpointCheck"),
    ("tlsInsecure", "tlsDisableCertificateRevocationCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableOCSPEndpointCheck"),
    ("tlsAllowInvalidCertificates", "tlsDisableCertificateRevocationCheck"),
    ("tlsDisableOCSPEndpointCheck", "tlsDisableCertificateRevocationCheck"),
)


def check_options(
    options: Mapping[str, Any],
    *,
    hosts: Sequence[Address],
    is_srv: bool,
    tls_conflicts: bool = True,
) -> None:
    """Raise ConfigurationError for option combinations the specs forbid.

    ``options`` maps canonical names to typed values, holding only options that were
    given. ``tls_conflicts=False`` skips the rules about which TLS options may
    appear together (for callers that no longer know what was given).
    """
    if tls_conflicts:
        for first, second in _TLS_CONFLICTS:
            if first in options and second in options:
                raise ConfigurationError(f"{first} and {second} cannot be given together")
        if options.get("tls") is False:
            others = sorted(k for k in options if k.startswith("tls") and k != "tls")
            if others:
                raise ConfigurationError(
                    f"tls=false contradicts the TLS options also given: {', '.join(others)}"
                )

    # Initial DNS Seedlist Discovery, "URI Validation".
    if not is_srv:
        for name in ("srvServiceName", "srvMaxHosts"):
            if name in options:
                raise ConfigurationError(f"{name} can only be used with {_SRV_SCHEME}://")
    if options.get("srvMaxHosts", 0) > 0:
        if "replicaSet" in options:
            raise ConfigurationError("srvMaxHosts > 0 cannot be used with replicaSet")
        if options.get("loadBalanced"):
            raise ConfigurationError("srvMaxHosts > 0 cannot be used with loadBalanced=true")

    # SDAM "Allowed configuration combinations" and Load Balancer URI validation.
    check_configuration(
        tuple(hosts),
        direct_connection=options.get("directConnection"),
        replica_set=options.get("replicaSet"),
        load_balanced=bool(options.get("loadBalanced", False)),
        srv=is_srv,
        heartbeat_frequency_ms=options.get("heartbeatFrequencyMS", DEFAULT_HEARTBEAT_FREQUENCY_MS),
    )

    # Server selection, "Components of a read preference": mode primary takes
    # neither tags nor a max staleness (an absent mode is primary).
    mode = options.get("readPreference", "primary")
    if mode == "primary":
        tags = options.get("readPreferenceTags")
        if tags and tags != [{}]:
            raise ConfigurationError(
                "readPreferenceTags cannot be used with read preference mode 'primary': "
                "set readPreference to another mode"
            )
        staleness = options.get("maxStalenessSeconds")
        if staleness is not None and staleness != -1:
            raise ConfigurationError(
                "maxStalenessSeconds cannot be used with read preference mode 'primary': "
                "set readPreference to another mode"
            )

    max_pool = options.get("maxPoolSize")
    min_pool = options.get("minPoolSize")
    if max_pool and min_pool is not None and min_pool > max_pool:
        raise ConfigurationError(
            f"minPoolSize ({min_pool}) cannot be greater than maxPoolSize ({max_pool})"
        )

    if options.get("w") == 0 and options.get("journal") is True:
        raise ConfigurationError("w=0 cannot be used with journal=true")

    # SOCKS5 support, "MongoClient Configuration".
    if "proxyHost" not in options:
        given = [name for name in PROXY_OPTIONS if name in options]
        if given:
            raise ConfigurationError(f"{', '.join(given)} cannot be used without proxyHost")
    if ("proxyUsername" in options) != ("proxyPassword" in options):
        raise ConfigurationError("proxyUsername and proxyPassword must be given together")
