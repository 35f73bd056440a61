"""The I/O shell: sockets, threads and clocks.

Connections (TLS, compression, the handshake, authentication), the CMAP pool, one
monitor thread per server, the live topology, SRV polling, server sessions, command
monitoring and logging, and the retry executor that carries out the core's policy.
It imports from :mod:`mongocore.core`, never from :mod:`mongocore.api`.
"""
