"""The wire protocol codec: bytes in, messages out; messages in, bytes out.

Pure code, no sockets: OP_MSG for every command and reply, legacy OP_QUERY and
OP_REPLY for the first handshake, OP_COMPRESSED around any of them, the standard
message header, request ids, the size limits a server announces, and reading one
message through a caller-supplied ``recv_exactly``. Both directions are encoded and
decoded, so the client's connections and the simulated server share it.
"""

from __future__ import annotations

from mongocore.wire.checksum import crc32c
from mongocore.wire.codec import (
    CompressedMessage,
    Message,
    check_header,
    decode_body,
    decode_message,
    decode_op_compressed,
    encode_op_compressed,
    read_message,
)
from mongocore.wire.header import (
    HEADER_SIZE,
    MAX_INT32,
    MsgHeader,
    OpCode,
    RequestIdGenerator,
    next_request_id,
    pack_header,
    unpack_header,
)
from mongocore.wire.legacy import (
    QUERY_AWAIT_DATA,
    QUERY_EXHAUST,
    QUERY_NO_CURSOR_TIMEOUT,
    QUERY_OPLOG_REPLAY,
    QUERY_PARTIAL,
    QUERY_SECONDARY_OK,
    QUERY_TAILABLE_CURSOR,
    REPLY_AWAIT_CAPABLE,
    REPLY_CURSOR_NOT_FOUND,
    REPLY_QUERY_FAILURE,
    REPLY_SHARD_CONFIG_STALE,
    OpQuery,
    OpReply,
    decode_op_query,
    decode_op_reply,
    encode_handshake_query,
    encode_op_query,
    encode_op_reply,
)
from mongocore.wire.limits import (
    COMMAND_OVERHEAD,
    DEFAULT_MAX_BSON_OBJECT_SIZE,
    DEFAULT_MAX_MESSAGE_SIZE_BYTES,
    DEFAULT_MAX_WRITE_BATCH_SIZE,
    SizeLimits,
    check_batch_size,
    check_command_size,
    check_document_size,
    check_message_size,
    op_msg_overhead,
    split_batches,
)
from mongocore.wire.op_msg import (
    CHECKSUM_PRESENT,
    EXHAUST_ALLOWED,
    MORE_TO_COME,
    OpMsg,
    decode_op_msg,
    encode_op_msg,
)

__all__ = [
    "CHECKSUM_PRESENT",
    "COMMAND_OVERHEAD",
    "DEFAULT_MAX_BSON_OBJECT_SIZE",
    "DEFAULT_MAX_MESSAGE_SIZE_BYTES",
    "DEFAULT_MAX_WRITE_BATCH_SIZE",
    "EXHAUST_ALLOWED",
    "HEADER_SIZE",
    "MAX_INT32",
    "MORE_TO_COME",
    "QUERY_AWAIT_DATA",
    "QUERY_EXHAUST",
    "QUERY_NO_CURSOR_TIMEOUT",
    "QUERY_OPLOG_REPLAY",
    "QUERY_PARTIAL",
    "QUERY_SECONDARY_OK",
    "QUERY_TAILABLE_CURSOR",
    "REPLY_AWAIT_CAPABLE",
    "REPLY_CURSOR_NOT_FOUND",
    "REPLY_QUERY_FAILURE",
    "REPLY_SHARD_CONFIG_STALE",
    "CompressedMessage",
    "Message",
    "MsgHeader",
    "OpCode",
    "OpMsg",
    "OpQuery",
    "OpReply",
    "RequestIdGenerator",
    "SizeLimits",
    "check_batch_size",
    "check_command_size",
    "check_document_size",
    "check_header",
    "check_message_size",
    "crc32c",
    "decode_body",
    "decode_message",
    "decode_op_compressed",
    "decode_op_msg",
    "decode_op_query",
    "decode_op_reply",
    "encode_handshake_query",
    "encode_op_compressed",
    "encode_op_msg",
    "encode_op_query",
    "encode_op_reply",
    "next_request_id",
    "op_msg_overhead",
    "pack_header",
    "read_message",
    "split_batches",
    "unpack_header",
]
