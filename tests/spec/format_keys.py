"""The keys a spec test format defines, checked before a runner acts on a test.

A runner asserts what a file's keys say. A key the runner does not know would pass
unasserted, so every runner checks each document it reads (the test, its phases,
expectations, entries) against the keys its format's README defines, and a key
outside them fails the test with :class:`UncheckedKey` naming it. The runners list
the format's keys (not the keys the visible files happen to use), so a file the
project has never seen either runs fully asserted or fails saying what is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class UncheckedKey(Exception):
    """A test names something its runner cannot assert (never a silent pass)."""


def check_keys(where: str, document: Any, known: Iterable[str]) -> None:
    """Fail naming every key of ``document`` outside ``known`` (the format's keys)."""
    if not isinstance(document, Mapping):
        raise UncheckedKey(f"{where}: expected a document, found {document!r}")
    allowed = set(known)
    unknown = sorted(str(key) for key in document if key not in allowed)
    if unknown:
        raise UncheckedKey(
            f"{where}: the runner cannot check {unknown} (the format's keys here: "
            f"{sorted(allowed)})"
        )
