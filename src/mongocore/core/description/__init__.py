"""The SDAM pure core: server and topology descriptions, and how outcomes change them.

Nothing in this package does I/O, starts threads or reads a clock: time is an argument.
"""
