"""Orders and their lifecycle."""
