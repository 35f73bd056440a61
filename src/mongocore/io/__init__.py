"""The I/O shell: sockets, pools, monitor threads and the live topology."""
