"""The wire protocol codec: bytes in, messages out; messages in, bytes out."""
