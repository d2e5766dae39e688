"""Transactional emails."""
