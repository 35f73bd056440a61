"""Codec options: how the documents of a client, database or collection are encoded
and how the documents handed back to the application are decoded.

mongocore uses bson's own :class:`~bson.codec_options.CodecOptions` (pymongo's), built
from pymongo's client options: the connection string's ``uuidRepresentation``,
``tz_aware``, ``unicode_decode_error_handler`` and ``datetime_conversion``, and the
keywords ``document_class``, ``tzinfo``, ``type_registry`` and ``codec_options``.

The wire layer decodes every reply with the default options: the driver reads its own
fields (``ok``, ``cursor``, ``writeErrors``) from plain dicts whatever the user chose.
Where the application's documents come out (cursor batches, findAndModify's value,
distinct's values, command replies), they are decoded again with the user's options,
and the documents going out are encoded with them once, to BSON-native values the wire
encodes unchanged. Both steps are skipped for the default options, so the default
path costs nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

import bson
from bson.binary import UuidRepresentation
from bson.codec_options import (
    DEFAULT_CODEC_OPTIONS,
    CodecOptions,
    DatetimeConversion,
    TypeRegistry,
)

from mongocore.errors import ConfigurationError

__all__ = [
    "CODEC_KEYWORDS",
    "DEFAULT_CODEC_OPTIONS",
    "AnyCodecOptions",
    "codec_options_for_client",
    "decode_document",
    "decode_documents",
    "decode_values",
    "is_default",
    "pop_codec_keywords",
    "to_wire",
    "to_wire_value",
]

AnyCodecOptions = CodecOptions[Any]

#: uuidRepresentation values (the URI's spelling) and bson's constants.
UUID_REPRESENTATIONS: Mapping[str, int] = {
    "unspecified": UuidRepresentation.UNSPECIFIED,
    "standard": UuidRepresentation.STANDARD,
    "pythonLegacy": UuidRepresentation.PYTHON_LEGACY,
    "javaLegacy": UuidRepresentation.JAVA_LEGACY,
    "csharpLegacy": UuidRepresentation.CSHARP_LEGACY,
}

#: Client keywords that are Python objects, never connection-string options
#: (compared without case and underscores, like every client keyword).
CODEC_KEYWORDS: Mapping[str, str] = {
    "documentclass": "document_class",
    "tzinfo": "tzinfo",
    "typeregistry": "type_registry",
    "codecoptions": "codec_options",
}

# Values decoded with these options encode back to the same BSON: every BSON date
# (even one out of datetime's range) becomes something the encoder takes again.
_WIRE_DECODE: AnyCodecOptions = CodecOptions(datetime_conversion=DatetimeConversion.DATETIME_AUTO)


def is_default(options: AnyCodecOptions) -> bool:
    """True for options that decode and encode exactly as the wire layer does."""
    return options is DEFAULT_CODEC_OPTIONS or options == DEFAULT_CODEC_OPTIONS


def pop_codec_keywords(keywords: MutableMapping[str, Any]) -> dict[str, Any]:
    """Take the Python-object codec keywords out of a client's keyword options."""
    taken: dict[str, Any] = {}
    for key in list(keywords):
        name = CODEC_KEYWORDS.get(key.replace("_", "").lower())
        if name is not None:
            taken[name] = keywords.pop(key)
    return taken


def codec_options_for_client(options: Any, keywords: Mapping[str, Any]) -> AnyCodecOptions:
    """The client's CodecOptions from its parsed options (a ClientOptions) and the
    keywords taken by :func:`pop_codec_keywords`.

    ``codec_options=`` is the base; the other options, when given, override its
    fields (as pymongo lets the client's keywords do).
    """
    base = keywords.get("codec_options")
    if base is not None and not isinstance(base, CodecOptions):
        raise ConfigurationError(f"codec_options must be a CodecOptions, not {base!r}")
    changes: dict[str, Any] = {}
    if options.uuid_representation is not None:
        changes["uuid_representation"] = UUID_REPRESENTATIONS[options.uuid_representation]
    if options.tz_aware:
        changes["tz_aware"] = True
    if options.unicode_decode_error_handler != "strict":
        changes["unicode_decode_error_handler"] = options.unicode_decode_error_handler
    if options.datetime_conversion is not None:
        changes["datetime_conversion"] = options.datetime_conversion
    for name in ("document_class", "tzinfo", "type_registry"):
        if keywords.get(name) is not None:
            changes[name] = keywords[name]
    if "type_registry" in changes and not isinstance(changes["type_registry"], TypeRegistry):
        raise ConfigurationError(
            f"type_registry must be a TypeRegistry, not {changes['type_registry']!r}"
        )
    if base is None and not changes:
        return DEFAULT_CODEC_OPTIONS
    try:
        if base is None:
            return CodecOptions(**changes)
        return base.with_options(**changes) if changes else base
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"invalid codec options: {exc}") from exc


# --- documents out: to BSON-native values -------------------------------------------


def to_wire(document: Mapping[str, Any], options: AnyCodecOptions) -> dict[str, Any]:
    """``document`` with every value the user's options encode (a ``uuid.UUID``, a
    custom type) replaced by the BSON value it encodes to, so that the wire layer's
    default encoding sends the same bytes. Raises what bson raises: a ValueError for
    a ``uuid.UUID`` with uuidRepresentation "unspecified", InvalidDocument for an
    unknown type."""
    return bson.decode(bson.encode(document, False, options), _WIRE_DECODE)


def to_wire_value(value: Any, options: AnyCodecOptions) -> Any:
    """One value (a document, a list of documents, a scalar) as in :func:`to_wire`."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return value  # already encoded BSON (a document sequence's bytes)
    if isinstance(value, Mapping):
        return to_wire(value, options)
    return to_wire({"v": value}, options)["v"]


# --- documents in: with the user's options -------------------------------------------


def decode_document(document: Any, options: AnyCodecOptions) -> Any:
    """A document the wire layer decoded with the defaults, decoded with ``options``."""
    if not isinstance(document, Mapping):
        return document
    return bson.decode(bson.encode(document), options)


def decode_documents(documents: Sequence[Any], options: AnyCodecOptions) -> list[Any]:
    """Each document of a batch decoded with ``options``."""
    if not documents:
        return []
    return bson.decode_all(b"".join(map(bson.encode, documents)), options)


def decode_values(values: Sequence[Any], options: AnyCodecOptions) -> list[Any]:
    """A list of values decoded with ``options`` (one encode and decode in all)."""
    decoded = bson.decode(bson.encode({"v": list(values)}), options)["v"]
    return list(decoded)
