"""The command line: ``python -m mongocore`` (status, topology watch, sim, demo)."""
