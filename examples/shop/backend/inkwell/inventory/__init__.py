"""Stock levels, reservations and supplier reorders."""
