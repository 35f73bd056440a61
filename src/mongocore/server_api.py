"""The Stable API: declaring the server API version a client's commands run under.

Spec: Stable API For Drivers ("MongoClient changes": the ``ServerApiVersion``
enumeration and the ``ServerApi`` class; "Hardcode supported versions in drivers").
pymongo's public module of the same name, with the same classes::

    from mongocore import MongoClient
    from mongocore.server_api import ServerApi

    client = MongoClient(uri, server_api=ServerApi("1", strict=True))

The declared version is a keyword of the client only, never a connection-string
option (the spec's "No URI Options"), and nothing below the client can change it
(its "Declared Version Inheritance"). What the client adds to each command is
decided by :mod:`mongocore.core.stable_api`.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["ServerApi", "ServerApiVersion"]


class ServerApiVersion:
    """The API versions mongocore knows: the values :attr:`ServerApi.version` accepts.

    A plain class of string constants, as pymongo's: new versions may be added in a
    minor release without breaking code that compares against the existing ones.
    """

    V1 = "1"
    """Server API version "1"."""


#: Every version a ServerApi may declare. A new server version may need driver
#: changes, so versions mongocore does not know are refused here, not by the server.
KNOWN_VERSIONS = frozenset({ServerApiVersion.V1})


class ServerApi:
    """A declared server API version, with the ``strict`` and ``deprecation_errors``
    flags (each None when not given: the server's default applies and the field is
    not sent). Immutable, like the spec's class.
    """

    __slots__ = ("_deprecation_errors", "_strict", "_version")

    _version: str
    _strict: Optional[bool]
    _deprecation_errors: Optional[bool]

    def __init__(
        self,
        version: str,
        strict: Optional[bool] = None,
        deprecation_errors: Optional[bool] = None,
    ) -> None:
        if version not in KNOWN_VERSIONS:
            known = ", ".join(repr(v) for v in sorted(KNOWN_VERSIONS))
            raise ValueError(
                f"Unknown ServerApi version: {version!r} (this version of mongocore knows {known})"
            )
        for name, value in (("strict", strict), ("deprecation_errors", deprecation_errors)):
            if value is not None and not isinstance(value, bool):
                raise TypeError(
                    f"Wrong type for ServerApi {name}, value must be an instance of bool,"
                    f" not {type(value)}"
                )
        object.__setattr__(self, "_version", version)
        object.__setattr__(self, "_strict", strict)
        object.__setattr__(self, "_deprecation_errors", deprecation_errors)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ServerApi is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"ServerApi is immutable: cannot delete {name!r}")

    @property
    def version(self) -> str:
        """The API version, sent as the ``apiVersion`` field."""
        return self._version

    @property
    def strict(self) -> Optional[bool]:
        """API strict mode, sent as ``apiStrict`` when set: the server refuses commands
        and options outside the declared version."""
        return self._strict

    @property
    def deprecation_errors(self) -> Optional[bool]:
        """Deprecation errors, sent as ``apiDeprecationErrors`` when set: the server
        refuses what the declared version deprecates."""
        return self._deprecation_errors

    def _key(self) -> tuple[str, Optional[bool], Optional[bool]]:
        return (self._version, self._strict, self._deprecation_errors)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServerApi):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __reduce__(self) -> tuple[Any, ...]:
        # Copies and pickles go through the constructor (attributes cannot be set).
        return (ServerApi, self._key())

    def __repr__(self) -> str:
        return (
            f"ServerApi(version={self._version!r}, strict={self._strict!r},"
            f" deprecation_errors={self._deprecation_errors!r})"
        )
