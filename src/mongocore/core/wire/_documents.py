"""BSON helpers shared by the message codecs: decoding peer bytes safely.

Whatever a peer sends, decoding it either succeeds or raises ProtocolError. The
``bson`` package raises many exception types on bad input (InvalidBSON, ValueError,
OverflowError, UnicodeDecodeError, ...), and a custom type decoder in the caller's
codec options may raise anything, so the decode calls catch broadly and say which
opcode and which part was malformed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

import bson
from bson.codec_options import DEFAULT_CODEC_OPTIONS, CodecOptions

from mongocore.errors import ProtocolError

Buffer = Union[bytes, bytearray, memoryview]
Document = Mapping[str, Any]
EncodedOrDocument = Union[bytes, bytearray, memoryview, Mapping[str, Any]]
AnyCodecOptions = CodecOptions[Any]

DEFAULT_OPTIONS: AnyCodecOptions = DEFAULT_CODEC_OPTIONS


class _EncodingOnly(dict):  # type: ignore[type-arg]
    """The document class of ENCODE_OPTIONS: never instantiated (nothing is decoded
    with those options). bson's C extension reads the ``_type_marker`` of the
    options' document class on every call (RawBSONDocument's is 101); ``dict`` has
    none, and on Python 3.11 a missing attribute of a type raises and clears an
    AttributeError, a cost paid on every message. 0 is what bson takes for "none"."""

    _type_marker = 0


#: The default options for encoding: the same encoding as DEFAULT_OPTIONS (the
#: document class only matters when decoding), without that failed look-up.
ENCODE_OPTIONS: AnyCodecOptions = DEFAULT_CODEC_OPTIONS.with_options(document_class=_EncodingOnly)

# bson's encoder and decoder themselves (C when compiled), without the wrappers of
# bson.encode() and bson.decode(), which only check the codec options' type: the
# codecs call them once per message.
_dict_to_bson = bson._dict_to_bson
_bson_to_dict = bson._bson_to_dict


def decode_document(data: Buffer, codec_options: AnyCodecOptions, what: str) -> Any:
    """Decode exactly one BSON document spanning all of ``data``."""
    try:
        return bson.decode(data, codec_options)
    except Exception as exc:
        raise ProtocolError(f"{what}: invalid BSON document: {exc}") from exc


def decode_documents(data: Buffer, codec_options: AnyCodecOptions, what: str) -> list[Any]:
    """Decode zero or more BSON documents that exactly fill ``data``."""
    try:
        return bson.decode_all(data, codec_options)
    except Exception as exc:
        raise ProtocolError(f"{what}: invalid BSON documents: {exc}") from exc


def encode_document(document: EncodedOrDocument, codec_options: AnyCodecOptions) -> Buffer:
    """Encode a mapping; bytes-like values are taken as already-encoded BSON."""
    if isinstance(document, (bytes, bytearray, memoryview)):
        return document
    # bson.encode() minus its check that these are CodecOptions (they always are here).
    return _dict_to_bson(document, False, codec_options)


def has_field(document: Any, key: str, what: str) -> bool:
    """``key in document``, for a decoded document that may still be lazily decoded.

    A RawBSONDocument (chosen through codec options) defers validation of its
    contents until first access, so even a membership test may meet invalid BSON.
    """
    try:
        return key in document
    except Exception as exc:
        raise ProtocolError(f"{what}: invalid BSON document: {exc}") from exc


def read_cstring(data: Buffer, start: int, end: int, what: str) -> tuple[str, int]:
    """Read a NUL-terminated UTF-8 string in ``data[start:end]``; return it and the next offset."""
    if isinstance(data, memoryview):
        nul = _find_nul(data, start, end)
    else:
        nul = data.find(b"\x00", start, end)
    if nul < 0:
        raise ProtocolError(f"{what}: string is not NUL-terminated within its bounds")
    try:
        text = str(data[start:nul], "utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"{what}: string is not valid UTF-8: {exc}") from exc
    return text, nul + 1


def _find_nul(view: memoryview, start: int, end: int) -> int:
    # memoryview has no find(); scan in growing chunks so a short string (the usual
    # case) costs a tiny copy, and a huge bogus one costs a linear number of copies.
    chunk = 64
    pos = start
    while pos < end:
        stop = min(end, pos + chunk)
        found = bytes(view[pos:stop]).find(b"\x00")
        if found >= 0:
            return pos + found
        pos = stop
        chunk *= 2
    return -1
