"""The options of a CMAP connection pool.

Spec: connection-monitoring-and-pooling.md, "Connection Pool Options" (maxPoolSize,
minPoolSize, maxIdleTimeMS, waitQueueTimeoutMS, maxConnecting, named in snake case)
and, in "Connection Pool Monitoring", the options a PoolCreatedEvent carries (those
that differ from the defaults). The pool itself is :mod:`mongocore.io.pool`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Optional

from mongocore._deferred_dataclass import dataclass
from mongocore.errors import ConfigurationError

__all__ = [
    "DEFAULT_MAX_CONNECTING",
    "DEFAULT_MAX_POOL_SIZE",
    "PoolOptions",
    "default_options",
    "pool_options_from_mapping",
]

DEFAULT_MAX_POOL_SIZE = 100
DEFAULT_MAX_CONNECTING = 2


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class PoolOptions:
    """ConnectionPoolOptions, named as the spec names them (in snake case).

    ``max_idle_time_ms`` and ``wait_queue_timeout_ms``: None or 0 means no limit.
    """

    max_pool_size: int = DEFAULT_MAX_POOL_SIZE
    min_pool_size: int = 0
    max_idle_time_ms: Optional[float] = None
    wait_queue_timeout_ms: Optional[float] = None
    max_connecting: int = DEFAULT_MAX_CONNECTING

    def __post_init__(self) -> None:
        if not _is_int(self.max_pool_size) or self.max_pool_size < 0:
            raise ConfigurationError(
                f"maxPoolSize must be an integer >= 0 (0 means no limit), "
                f"not {self.max_pool_size!r}"
            )
        if not _is_int(self.min_pool_size) or self.min_pool_size < 0:
            raise ConfigurationError(
                f"minPoolSize must be an integer >= 0, not {self.min_pool_size!r}"
            )
        if self.max_pool_size and self.min_pool_size > self.max_pool_size:
            raise ConfigurationError(
                f"minPoolSize ({self.min_pool_size}) must not exceed maxPoolSize "
                f"({self.max_pool_size}): lower minPoolSize or raise maxPoolSize"
            )
        for name, value in (
            ("maxIdleTimeMS", self.max_idle_time_ms),
            ("waitQueueTimeoutMS", self.wait_queue_timeout_ms),
        ):
            if value is not None and (not _is_number(value) or value < 0):
                raise ConfigurationError(
                    f"{name} must be a number >= 0 (0 means no limit), not {value!r}"
                )
        if not _is_int(self.max_connecting) or self.max_connecting < 1:
            raise ConfigurationError(
                f"maxConnecting must be an integer > 0, not {self.max_connecting!r}"
            )

    @property
    def max_idle_time(self) -> Optional[float]:
        """maxIdleTimeMS in seconds, or None for no limit."""
        return self.max_idle_time_ms / 1000.0 if self.max_idle_time_ms else None

    @property
    def wait_queue_timeout(self) -> Optional[float]:
        """waitQueueTimeoutMS in seconds, or None for no limit."""
        return self.wait_queue_timeout_ms / 1000.0 if self.wait_queue_timeout_ms else None

    def non_default_options(self) -> dict[str, Any]:
        """The options that differ from the defaults, by their spec names (PoolCreatedEvent)."""
        defaults = default_options()
        names = (
            ("maxPoolSize", "max_pool_size"),
            ("minPoolSize", "min_pool_size"),
            ("maxIdleTimeMS", "max_idle_time_ms"),
            ("waitQueueTimeoutMS", "wait_queue_timeout_ms"),
            ("maxConnecting", "max_connecting"),
        )
        return {
            spec_name: getattr(self, attr)
            for spec_name, attr in names
            if getattr(self, attr) != getattr(defaults, attr)
        }


_DEFAULT_OPTIONS: list[PoolOptions] = []


def default_options() -> PoolOptions:
    """The default options, one shared instance."""
    # Built on first use: PoolOptions is a deferred dataclass, completed by its first
    # instance (mongocore._deferred_dataclass), which importing must not make.
    if not _DEFAULT_OPTIONS:
        _DEFAULT_OPTIONS.append(PoolOptions())
    return _DEFAULT_OPTIONS[0]


def pool_options_from_mapping(options: Mapping[str, Any]) -> PoolOptions:
    """PoolOptions from spec-named options (``maxPoolSize``, ``waitQueueTimeoutMS``, ...);
    unknown names raise ConfigurationError."""
    names = {
        "maxPoolSize": "max_pool_size",
        "minPoolSize": "min_pool_size",
        "maxIdleTimeMS": "max_idle_time_ms",
        "waitQueueTimeoutMS": "wait_queue_timeout_ms",
        "maxConnecting": "max_connecting",
    }
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise ConfigurationError(
            f"unknown connection pool option(s) {unknown}; known: {sorted(names)}"
        )
    return PoolOptions(**{names[key]: value for key, value in options.items()})
