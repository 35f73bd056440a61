"""The pure core: what the specs decide, as functions over immutable values.

No sockets, no threads, no clocks read inside (time is an argument): server and
topology descriptions (SDAM), server selection, the retry policy, the wire codec,
connection strings and options, credentials, events and codec options. Nothing here
imports from :mod:`mongocore.io`, :mod:`mongocore.api` or :mod:`mongocore.cli`.
"""
