"""Wire compression: the compressors, their ids, and which commands may be compressed.

Spec: Wire Compression in Drivers ("Compressor IDs", "Compressible messages",
"Messages not allowed to be compressed", "MongoDB Handshake Amendment": the first
compressor of the client's list that the server also lists is the one used). The
message framing (OP_COMPRESSED) lives in :mod:`mongocore.core.wire.codec`; this module
only turns bytes into bytes.

zlib comes with Python. zstd needs ``zstandard`` (the ``zstd`` extra) and snappy
needs ``python-snappy`` (the ``snappy`` extra); without them those compressors are
not available, and :func:`available_compressors` says so.

Decompression is bounded: a peer announces the uncompressed size, and no compressor
is allowed to produce more than the caller's limit, so a small message cannot inflate
into gigabytes (a "compression bomb").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Optional, Union

from mongocore.errors import ConfigurationError, ProtocolError

__all__ = [
    "COMPRESSOR_IDS",
    "COMPRESSOR_NAMES",
    "UNCOMPRESSIBLE_COMMANDS",
    "Compressor",
    "available_compressors",
    "compressor_for",
    "decompress",
    "is_compressible",
    "negotiate",
]

Buffer = Union[bytes, bytearray, memoryview]

#: "Compressor IDs": the handshake name of each compressor and its id on the wire.
COMPRESSOR_IDS: dict[str, int] = {"noop": 0, "snappy": 1, "zlib": 2, "zstd": 3}
COMPRESSOR_NAMES: dict[int, str] = {ident: name for name, ident in COMPRESSOR_IDS.items()}

#: "Messages not allowed to be compressed" (lower-case: legacy hello has two spellings).
UNCOMPRESSIBLE_COMMANDS = frozenset(
    {
        "hello",
        "ismaster",
        "saslstart",
        "saslcontinue",
        "getnonce",
        "authenticate",
        "createuser",
        "updateuser",
        "copydbsaslstart",
        "copydbgetnonce",
        "copydb",
    }
)


# The optional libraries load on first use, not with mongocore (most clients never
# compress): until then their module attribute holds _UNLOADED; None means "not
# installed".
_UNLOADED: Any = object()
_zstd: Any = _UNLOADED
_snappy: Any = _UNLOADED


def _zstd_module() -> Any:
    global _zstd  # noqa: PLW0603 - a load-once cache
    if _zstd is _UNLOADED:
        _zstd = _import("zstandard")
    return _zstd


def _snappy_module() -> Any:
    global _snappy  # noqa: PLW0603 - a load-once cache
    if _snappy is _UNLOADED:
        _snappy = _import("snappy")
    return _snappy


def _import(name: str) -> Any:
    try:
        return __import__(name)
    except ImportError:
        return None


_EXTRAS = {
    "zstd": ("zstandard", "mongocore[zstd]"),
    "snappy": ("python-snappy", "mongocore[snappy]"),
}


def available_compressors() -> tuple[str, ...]:
    """The compressors this installation can use, in the spec's table order."""
    names = ["snappy"] if _snappy_module() is not None else []
    names.append("zlib")
    if _zstd_module() is not None:
        names.append("zstd")
    return tuple(names)


def is_compressible(command_name: str) -> bool:
    """May a message carrying this command be compressed? (Not hello, not auth.)"""
    return command_name.lower() not in UNCOMPRESSIBLE_COMMANDS


def negotiate(client: Sequence[str], server: Iterable[Any]) -> Optional[str]:
    """The compressor to use: the first of the client's that the server also listed.

    ``server`` is the handshake reply's ``compression`` field; no common compressor
    means no compression (never an error).
    """
    offered = {name for name in server if isinstance(name, str)}
    for name in client:
        if name in offered:
            return name
    return None


class Compressor:
    """One compressor: its handshake name, its wire id, and both directions."""

    name = "noop"
    id = 0

    def may_compress(self, command_name: str) -> bool:
        """:func:`is_compressible`, for a connection that holds only its compressor
        (and so need not import this module on every command)."""
        return is_compressible(command_name)

    def compress(self, data: Buffer) -> bytes:
        return bytes(data)

    def decompress(self, data: Buffer, max_size: int) -> bytes:
        """Inflate ``data``; ProtocolError if it is malformed or exceeds ``max_size``."""
        if len(data) > max_size:
            raise ProtocolError(_too_large(self.name, max_size))
        return bytes(data)

    def __repr__(self) -> str:
        return f"<Compressor {self.name} (id {self.id})>"


def _too_large(name: str, max_size: int) -> str:
    return f"OP_COMPRESSED: {name} data inflates beyond the {max_size}-byte limit"


class ZlibCompressor(Compressor):
    name = "zlib"
    id = 2

    def __init__(self, level: int = -1) -> None:
        if isinstance(level, bool) or not isinstance(level, int) or not -1 <= level <= 9:
            raise ConfigurationError(
                f"zlibCompressionLevel must be an integer from -1 to 9, not {level!r}"
            )
        self.level = level

    def compress(self, data: Buffer) -> bytes:
        import zlib  # noqa: PLC0415 - loaded with the first compressed message

        return zlib.compress(data, self.level)

    def decompress(self, data: Buffer, max_size: int) -> bytes:
        import zlib  # noqa: PLC0415

        inflater = zlib.decompressobj()
        try:
            # One byte over the limit is enough to know the limit was exceeded.
            out = inflater.decompress(data, max_size + 1)
        except zlib.error as exc:
            raise ProtocolError(f"OP_COMPRESSED: invalid zlib data: {exc}") from exc
        if len(out) > max_size:
            raise ProtocolError(_too_large(self.name, max_size))
        if not inflater.eof:
            raise ProtocolError("OP_COMPRESSED: truncated zlib data")
        return out


class ZstdCompressor(Compressor):
    name = "zstd"
    id = 3

    def __init__(self) -> None:
        if _zstd_module() is None:
            raise ConfigurationError(_missing("zstd"))

    def compress(self, data: Buffer) -> bytes:
        return bytes(_zstd.ZstdCompressor().compress(data))

    def decompress(self, data: Buffer, max_size: int) -> bytes:
        import io  # noqa: PLC0415

        try:
            # A stream reader never trusts the frame's own content-size field.
            with _zstd.ZstdDecompressor().stream_reader(io.BytesIO(bytes(data))) as reader:
                out = bytes(reader.read(max_size + 1))
        except _zstd.ZstdError as exc:
            raise ProtocolError(f"OP_COMPRESSED: invalid zstd data: {exc}") from exc
        if len(out) > max_size:
            raise ProtocolError(_too_large(self.name, max_size))
        return out


class SnappyCompressor(Compressor):
    name = "snappy"
    id = 1

    def __init__(self) -> None:
        if _snappy_module() is None:
            raise ConfigurationError(_missing("snappy"))

    def compress(self, data: Buffer) -> bytes:
        return bytes(_snappy.compress(bytes(data)))

    def decompress(self, data: Buffer, max_size: int) -> bytes:
        # The raw snappy format starts with the uncompressed length as a varint: check
        # it before the library allocates that much.
        length = _snappy_length(data)
        if length > max_size:
            raise ProtocolError(_too_large(self.name, max_size))
        try:
            return bytes(_snappy.uncompress(bytes(data)))
        except Exception as exc:  # the library raises several types for bad input
            raise ProtocolError(f"OP_COMPRESSED: invalid snappy data: {exc}") from exc


def _snappy_length(data: Buffer) -> int:
    view = memoryview(data)
    result = 0
    for index in range(min(5, len(view))):
        byte = view[index]
        result |= (byte & 0x7F) << (7 * index)
        if not byte & 0x80:
            return result
    raise ProtocolError("OP_COMPRESSED: invalid snappy data: bad length prefix")


def _missing(name: str) -> str:
    package, extra = _EXTRAS[name]
    return (
        f"the {name} compressor needs the {package} package, which is not installed;"
        f" install {extra}"
    )


def compressor_for(name: str, zlib_compression_level: int = -1) -> Compressor:
    """The compressor with this handshake name (ConfigurationError if unknown or not
    installed). ``zlib_compression_level`` applies to zlib only, to what we send."""
    if name == "zlib":
        return ZlibCompressor(zlib_compression_level)
    if name == "zstd":
        return ZstdCompressor()
    if name == "snappy":
        return SnappyCompressor()
    if name == "noop":
        return Compressor()
    raise ConfigurationError(
        f"unknown compressor {name!r}; known: {', '.join(n for n in COMPRESSOR_IDS if n != 'noop')}"
    )


_DECOMPRESSORS: dict[int, Compressor] = {}


def decompress(compressor_id: int, data: Buffer, max_size: int) -> bytes:
    """Inflate OP_COMPRESSED data by the compressor id the message names.

    Whichever compressor was negotiated, a peer may use any of them ("clients MUST
    NOT assume which compressor each message uses"); one that is unknown or not
    installed here is a ProtocolError.
    """
    compressor = _DECOMPRESSORS.get(compressor_id)
    if compressor is None:
        name = COMPRESSOR_NAMES.get(compressor_id)
        if name is None:
            raise ProtocolError(f"OP_COMPRESSED: unknown compressorId {compressor_id}")
        try:
            compressor = compressor_for(name)
        except ConfigurationError as exc:
            raise ProtocolError(
                f"OP_COMPRESSED: compressorId {compressor_id} ({name}) is not available: {exc}"
            ) from exc
        _DECOMPRESSORS[compressor_id] = compressor
    return compressor.decompress(data, max_size)
