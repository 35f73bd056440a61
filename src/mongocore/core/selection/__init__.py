"""The server-selection pure core: read preferences, suitability, staleness, latency window."""
