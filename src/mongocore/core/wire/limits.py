"""Size limits a server announces in its hello reply, checked before anything is sent.

A server states ``maxBsonObjectSize`` (one document), ``maxMessageSizeBytes`` (one
whole wire message, header included) and ``maxWriteBatchSize`` (write statements in
one write command). The server accepts a command document up to
``maxBsonObjectSize`` plus 16 KiB, so that a maximum-size user document still fits
inside the command that carries it; documents themselves get no such allowance.

Every check raises DocumentTooLarge naming the limit and the offending size, and
happens while encoding, so an oversized request never reaches the socket.

The same announcement bounds what a reply may claim, so it is not trusted as given:
:func:`bounded_max_message_size` caps it at what MongoDB servers use (48,000,000
bytes) and replaces a non-positive one by that default, and :func:`max_reply_size`
adds a small allowance for the framing around a reply (an incompressible payload
wrapped in OP_COMPRESSED is a little larger than the message it carries). A header
claiming more is refused before its body is read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from typing import Any, NamedTuple, Optional

from mongocore.core.wire.header import HEADER_SIZE
from mongocore.errors import DocumentTooLarge

__all__ = [
    "COMMAND_OVERHEAD",
    "DEFAULT_MAX_BSON_OBJECT_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE_BYTES",
    "DEFAULT_MAX_WRITE_BATCH_SIZE",
    "MAX_MESSAGE_SIZE_CAP",
    "REPLY_OVERHEAD",
    "SizeLimits",
    "bounded_max_message_size",
    "check_batch_size",
    "check_command_size",
    "check_document_size",
    "check_message_size",
    "check_sequence_sizes",
    "max_reply_size",
    "op_msg_overhead",
    "split_batches",
]

COMMAND_OVERHEAD = 16 * 1024
"""What the server allows a command document beyond ``maxBsonObjectSize``."""

# Defaults for a server whose hello reply omits a field (the hello command's docs).
DEFAULT_MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024
DEFAULT_MAX_MESSAGE_SIZE_BYTES = 48_000_000
DEFAULT_MAX_WRITE_BATCH_SIZE = 100_000

#: The largest maxMessageSizeBytes believed: MongoDB servers announce 48,000,000, and a
#: larger announcement would only let a hostile server make the client allocate more.
MAX_MESSAGE_SIZE_CAP = 48_000_000
#: What a reply may claim beyond maxMessageSizeBytes: OP_COMPRESSED's own fields and a
#: compressor's framing around data that did not compress.
REPLY_OVERHEAD = 16 * 1024

# flagBits, the kind byte of the body section; then kind byte and size of one sequence.
_OP_MSG_FIXED = HEADER_SIZE + 4 + 1
_SEQUENCE_FIXED = 1 + 4


class SizeLimits(NamedTuple):
    """The three limits of one server, as announced in its hello reply."""

    max_bson_object_size: int = DEFAULT_MAX_BSON_OBJECT_SIZE
    max_message_size_bytes: int = DEFAULT_MAX_MESSAGE_SIZE_BYTES
    max_write_batch_size: int = DEFAULT_MAX_WRITE_BATCH_SIZE

    @classmethod
    def from_hello(cls, hello: Mapping[str, Any]) -> SizeLimits:
        """Read the limits from a hello reply, with the documented defaults for absent fields."""
        return cls(
            int(hello.get("maxBsonObjectSize", DEFAULT_MAX_BSON_OBJECT_SIZE)),
            bounded_max_message_size(
                int(hello.get("maxMessageSizeBytes", DEFAULT_MAX_MESSAGE_SIZE_BYTES))
            ),
            int(hello.get("maxWriteBatchSize", DEFAULT_MAX_WRITE_BATCH_SIZE)),
        )

    @property
    def max_command_size(self) -> int:
        """The largest command document the server accepts."""
        return self.max_bson_object_size + COMMAND_OVERHEAD


def bounded_max_message_size(announced: int) -> int:
    """The maxMessageSizeBytes to use for a server that announced ``announced``.

    A value up to :data:`MAX_MESSAGE_SIZE_CAP` is used as it is; a larger one is capped
    to it, and a non-positive one is replaced by the default (which is the cap).
    """
    if announced < 1:
        return DEFAULT_MAX_MESSAGE_SIZE_BYTES
    return min(announced, MAX_MESSAGE_SIZE_CAP)


def max_reply_size(max_message_size_bytes: int) -> int:
    """The most bytes one reply (header included, or uncompressed inside OP_COMPRESSED)
    may claim from a server whose maxMessageSizeBytes is ``max_message_size_bytes``."""
    return bounded_max_message_size(max_message_size_bytes) + REPLY_OVERHEAD


def check_document_size(size: int, max_bson_object_size: int, what: str = "document") -> None:
    """Raise DocumentTooLarge if a document of ``size`` bytes exceeds maxBsonObjectSize."""
    if size > max_bson_object_size:
        raise _document_too_large(what, size, max_bson_object_size)


def _document_too_large(what: str, size: int, max_bson_object_size: int) -> DocumentTooLarge:
    return DocumentTooLarge(
        f"{what} is {size} bytes, which exceeds maxBsonObjectSize ({max_bson_object_size} bytes)"
    )


def check_command_size(size: int, max_bson_object_size: int, what: str = "command") -> None:
    """Raise DocumentTooLarge if a command document exceeds maxBsonObjectSize + 16 KiB."""
    if size > max_bson_object_size + COMMAND_OVERHEAD:
        raise command_too_large(size, max_bson_object_size, what)


def command_too_large(
    size: int, max_bson_object_size: int, what: str = "command"
) -> DocumentTooLarge:
    """The error of a command over maxBsonObjectSize + 16 KiB (see check_command_size)."""
    limit = max_bson_object_size + COMMAND_OVERHEAD
    return DocumentTooLarge(
        f"{what} document is {size} bytes, which exceeds maxBsonObjectSize"
        f" ({max_bson_object_size} bytes) plus the {COMMAND_OVERHEAD}-byte command"
        f" allowance ({limit} bytes)"
    )


def check_message_size(size: int, max_message_size_bytes: int) -> None:
    """Raise DocumentTooLarge if a whole message of ``size`` bytes exceeds maxMessageSizeBytes."""
    if size > max_message_size_bytes:
        raise message_too_large(size, max_message_size_bytes)


def message_too_large(size: int, max_message_size_bytes: int) -> DocumentTooLarge:
    """The error of a message over maxMessageSizeBytes (see check_message_size)."""
    return DocumentTooLarge(
        f"message is {size} bytes, which exceeds maxMessageSizeBytes"
        f" ({max_message_size_bytes} bytes)"
    )


def check_batch_size(count: int, max_write_batch_size: int, what: str = "write batch") -> None:
    """Raise DocumentTooLarge if a batch of ``count`` statements exceeds maxWriteBatchSize."""
    if count > max_write_batch_size:
        raise _batch_too_large(what, count, max_write_batch_size)


def _batch_too_large(what: str, count: int, max_write_batch_size: int) -> DocumentTooLarge:
    return DocumentTooLarge(
        f"{what} has {count} statements, which exceeds maxWriteBatchSize ({max_write_batch_size})"
    )


def check_sequence_sizes(sizes: Sequence[int], limits: SizeLimits, identifier: str) -> None:
    """Raise DocumentTooLarge if an OP_MSG document sequence of documents of ``sizes``
    bytes has more than maxWriteBatchSize of them, or one larger than maxBsonObjectSize
    (named by its index).

    One call for the whole sequence, its largest size found by ``max()``: what names
    the sequence or a document is written only when one fails.
    """
    count = len(sizes)
    if count > limits.max_write_batch_size:
        what = f"document sequence {identifier!r}"
        raise _batch_too_large(what, count, limits.max_write_batch_size)
    max_size = limits.max_bson_object_size
    if sizes and max(sizes) > max_size:  # one C call for the whole sequence
        # Only now, for the message: the first document over the limit.
        index = next(i for i, size in enumerate(sizes) if size > max_size)
        what = f"document at index {index} of sequence {identifier!r}"
        raise _document_too_large(what, sizes[index], max_size)


def op_msg_overhead(body_size: int, identifier: str, checksum: bool = False) -> int:
    """Bytes of an OP_MSG besides its one document sequence's documents.

    ``body_size`` is the encoded command body; ``identifier`` names the sequence
    ("documents", "updates", "deletes").
    """
    ident_size = len(identifier.encode("utf-8")) + 1
    return _OP_MSG_FIXED + body_size + _SEQUENCE_FIXED + ident_size + (4 if checksum else 0)


def split_batches(
    documents: Sequence[Sized],
    overhead: int,
    limits: SizeLimits,
    max_document_size: Optional[int] = None,
) -> list[range]:
    """Split already-encoded documents into batches that each fit one message.

    Each batch has at most ``limits.max_write_batch_size`` documents, and together
    with ``overhead`` (see op_msg_overhead) at most ``limits.max_message_size_bytes``
    bytes. Batches are returned as index ranges into ``documents``, in order, so a
    caller can map a batch's write errors back to the original indexes.

    A document larger than ``max_document_size`` (by default maxBsonObjectSize; an
    update statement may be given maxBsonObjectSize + 16 KiB), or one that cannot fit
    a message even alone, raises DocumentTooLarge naming its index.
    """
    max_count = limits.max_write_batch_size
    if max_count < 1:
        raise ValueError(f"maxWriteBatchSize must be at least 1, got {max_count}")
    max_message = limits.max_message_size_bytes
    max_doc = limits.max_bson_object_size if max_document_size is None else max_document_size
    budget = max_message - overhead
    batches: list[range] = []
    start = 0
    used = 0
    for index, document in enumerate(documents):
        size = len(document)
        if size > max_doc:
            raise DocumentTooLarge(
                f"document at index {index} is {size} bytes, which exceeds the"
                f" {max_doc}-byte limit (maxBsonObjectSize is"
                f" {limits.max_bson_object_size} bytes)"
            )
        if size > budget:
            raise DocumentTooLarge(
                f"document at index {index} is {size} bytes; with the {overhead} bytes"
                f" of command around it the message would exceed maxMessageSizeBytes"
                f" ({max_message} bytes)"
            )
        if index > start and (used + size > budget or index - start >= max_count):
            batches.append(range(start, index))
            start = index
            used = 0
        used += size
    if start < len(documents):
        batches.append(range(start, len(documents)))
    return batches
