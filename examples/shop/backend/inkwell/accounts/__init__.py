"""Customer and staff accounts, passwords and password resets."""
