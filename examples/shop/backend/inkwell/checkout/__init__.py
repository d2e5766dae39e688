"""Turning a cart into an order: pricing and submission."""
