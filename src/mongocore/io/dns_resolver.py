"""DNS for ``mongodb+srv://``: what seed-list discovery and SRV polling ask of it.

Spec: Initial DNS Seedlist Discovery, "Seedlist Discovery", "Querying DNS" (the SRV
and TXT queries and their failures), and Polling SRV Records for mongos Discovery,
"Implementation" (the records' TTL sets the rescan interval). DNS is reached only
through a :class:`Resolver`, so discovery (:mod:`mongocore.io.srv`) and polling
(:mod:`mongocore.io.srv_polling`) run against a fake resolver in tests;
:class:`DnsPythonResolver` is the real one, built on dnspython.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Protocol, runtime_checkable

from mongocore.errors import ConfigurationError

__all__ = ["DnsPythonResolver", "Resolver", "TtlResolver", "lookup_srv"]

_DEFAULT_DNS_TIMEOUT = 20.0  # seconds; the connectTimeoutMS default


@runtime_checkable
class Resolver(Protocol):
    """What seed-list discovery needs from DNS.

    ``srv`` answers an SRV query (``name`` is the full query name, e.g.
    ``_mongodb._tcp.cluster0.example.com``) with (target, port) pairs; ``txt`` answers
    a TXT query with one string per record, that record's strings joined in order. A
    name with no TXT record answers ``[]``. Lookup failures raise ConfigurationError.
    """

    def srv(self, name: str) -> list[tuple[str, int]]: ...

    def txt(self, name: str) -> list[str]: ...


@runtime_checkable
class TtlResolver(Resolver, Protocol):
    """A resolver that also reports the lowest TTL (seconds) of an SRV answer, which
    the polling spec uses as the rescan interval. Without it the poller rescans every
    60 seconds ("If a driver is unable to access the TTL values ...")."""

    def srv_with_ttl(self, name: str) -> tuple[list[tuple[str, int]], Optional[float]]: ...


def _dnspython() -> tuple[Any, Any]:
    """dnspython's ``resolver`` and ``exception`` modules, imported on first use: a
    client of a plain ``mongodb://`` connection string never resolves SRV or TXT
    records, so importing mongocore does not load dnspython's resolver (about a fifth
    of the import time)."""
    import dns.exception  # noqa: PLC0415 (deferred on purpose, see above)
    import dns.resolver  # noqa: PLC0415

    return dns.resolver, dns.exception


class DnsPythonResolver:
    """A :class:`TtlResolver` backed by dnspython.

    ``timeout`` is each query's lifetime in seconds (None: dnspython's default).
    ``resolve`` replaces ``dns.resolver.resolve`` (same signature), e.g. to use a
    configured ``dns.resolver.Resolver().resolve``.
    """

    def __init__(
        self,
        timeout: Optional[float] = _DEFAULT_DNS_TIMEOUT,
        *,
        resolve: Optional[Callable[..., Any]] = None,
    ) -> None:
        self._timeout = timeout
        self._resolve: Callable[..., Any] = (
            resolve if resolve is not None else _dnspython()[0].resolve
        )

    @property
    def timeout(self) -> Optional[float]:
        return self._timeout

    def srv(self, name: str) -> list[tuple[str, int]]:
        return self.srv_with_ttl(name)[0]

    def srv_with_ttl(self, name: str) -> tuple[list[tuple[str, int]], Optional[float]]:
        answer = self._query(name, "SRV")
        rrset = answer.rrset
        records = [(str(r.target.to_text(omit_final_dot=True)), int(r.port)) for r in rrset]
        # One RRset has one TTL: the lowest TTL of the records dnspython returned.
        ttl = getattr(rrset, "ttl", None)
        return records, (float(ttl) if ttl is not None else None)

    def txt(self, name: str) -> list[str]:
        try:
            resolver, _ = _dnspython()
            answer = self._query(name, "TXT", no_record=(resolver.NXDOMAIN, resolver.NoAnswer))
        except _NoRecord:
            return []  # no TXT record is the common case, not an error
        texts: list[str] = []
        for record in answer.rrset:
            raw = b"".join(record.strings)
            try:
                texts.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise ConfigurationError(
                    f"the TXT record of {name} is not valid UTF-8, so its connection "
                    "options cannot be read"
                ) from None
        return texts

    def _query(self, name: str, rdtype: str, no_record: tuple[type[Exception], ...] = ()) -> Any:
        resolver, exception = _dnspython()
        try:
            return self._resolve(name, rdtype, lifetime=self._timeout)
        except no_record:
            raise _NoRecord from None
        except resolver.NXDOMAIN:
            reason = "the name does not exist (NXDOMAIN)"
        except resolver.NoAnswer:
            reason = f"the name has no {rdtype} record"
        except exception.Timeout:
            reason = f"no answer within {self._timeout} seconds"
        except exception.DNSException as exc:
            reason = str(exc) or type(exc).__name__
        raise ConfigurationError(
            f"the {rdtype} lookup of {name} failed, so the mongodb+srv:// connection "
            f"string could not be used to find hosts: {reason}"
        )


class _NoRecord(Exception):
    """Internal: the queried name has no record of the asked type."""


def lookup_srv(resolver: Resolver, name: str) -> tuple[list[tuple[str, int]], Optional[float]]:
    """The SRV records of ``name`` and their lowest TTL, when the resolver reports it."""
    if isinstance(resolver, TtlResolver):
        return resolver.srv_with_ttl(name)
    return resolver.srv(name), None
