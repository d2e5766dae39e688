"""Background jobs run by the scheduler."""
