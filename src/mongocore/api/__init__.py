"""The application API, in pymongo's shape: client, databases, collections, cursors,
bulk writes, results, write models and client sessions.

It builds on the I/O shell (:mod:`mongocore.io`) and the pure core
(:mod:`mongocore.core`); the package root re-exports its public names.
"""
