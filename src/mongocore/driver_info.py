"""What a library wrapping mongocore adds to the handshake's client metadata.

Spec: MongoDB Handshake, "Supporting Wrapping Libraries" (``DriverInfoOptions``),
"Metadata updates after MongoClient initialization" and "Appending metadata": a
wrapping library's name, version and platform are appended to ``client.driver.name``,
``client.driver.version`` and ``client.platform``, each after a ``|``; nothing already
there is replaced; a value containing ``|`` is an error; metadata appended to a
running client goes into the handshakes of connections created afterwards only.

Pure: :class:`DriverInfo` is the options, :func:`append_driver_info` applies them to
a metadata document, and :class:`DriverInfoList` is the append-only list one client
shares between the settings of all its connections (pool and monitoring alike), so
that every connection created after an append carries it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional

from mongocore._deferred_dataclass import dataclass
from mongocore.errors import ConfigurationError

__all__ = ["DELIMITER", "DriverInfo", "DriverInfoList", "append_driver_info", "driver_info_of"]

#: Separates the values appended to one metadata field ("Appending metadata").
DELIMITER = "|"


@dataclass(frozen=True)
class DriverInfo:
    """DriverInfoOptions: the library wrapping mongocore (its version and platform are
    optional)."""

    name: str
    version: Optional[str] = None
    platform: Optional[str] = None

    def __post_init__(self) -> None:
        for field_name in ("name", "version", "platform"):
            value = getattr(self, field_name)
            if value is None and field_name != "name":
                continue
            if not isinstance(value, str):
                raise ConfigurationError(
                    f"driver info {field_name} must be a string, not {value!r}"
                )
            if DELIMITER in value:
                raise ConfigurationError(
                    f"driver info {field_name} {value!r} must not contain {DELIMITER!r}, "
                    "which separates the values appended to the client metadata"
                )
        if not self.name:
            raise ConfigurationError("driver info name must not be empty")


def driver_info_of(value: object, name: str = "driver_info") -> DriverInfo:
    """A DriverInfo from mongocore's or pymongo's (a ``(name, version, platform)``
    named tuple, which libraries written for pymongo pass as ``driver=``)."""
    if isinstance(value, DriverInfo):
        return value
    fields = getattr(value, "_fields", None)
    if isinstance(value, tuple) and fields == ("name", "version", "platform"):
        return DriverInfo(*value)
    raise TypeError(f"{name} must be a DriverInfo, not {type(value).__name__}")


def _appended(current: Any, value: Optional[str]) -> Any:
    if value is None:
        return current
    return f"{current}{DELIMITER}{value}" if current else value


def append_driver_info(document: Mapping[str, Any], infos: Sequence[DriverInfo]) -> dict[str, Any]:
    """A copy of the handshake's ``client`` document with ``infos`` appended, in order."""
    result = dict(document)
    if not infos:
        return result
    driver = dict(result.get("driver") or {})
    platform = result.get("platform", "")
    for info in infos:
        driver["name"] = _appended(driver.get("name", ""), info.name)
        driver["version"] = _appended(driver.get("version", ""), info.version)
        platform = _appended(platform, info.platform)
    result["driver"] = driver
    if platform:
        result["platform"] = platform
    return result


class DriverInfoList:
    """The DriverInfo appended to one client, in order; thread-safe, append-only.

    Appending a DriverInfo equal to one already there does nothing: the metadata is
    not to grow each time a wrapping library is initialized again.
    """

    def __init__(self, infos: Iterable[DriverInfo] = ()) -> None:
        self._lock = threading.Lock()
        self._infos: tuple[DriverInfo, ...] = ()
        for info in infos:
            self.append(info)

    def append(self, info: DriverInfo) -> None:
        if not isinstance(info, DriverInfo):
            raise TypeError(f"expected a DriverInfo, not {type(info).__name__}")
        with self._lock:
            if info not in self._infos:
                self._infos = (*self._infos, info)

    def snapshot(self) -> tuple[DriverInfo, ...]:
        """The DriverInfo appended so far (an immutable tuple)."""
        return self._infos

    def __repr__(self) -> str:
        return f"DriverInfoList({list(self._infos)!r})"
