"""HTTP API written against the standard library only."""
