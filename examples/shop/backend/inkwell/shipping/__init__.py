"""Shipments and carrier tracking."""
