"""Inkwell Books: the backend of a small online bookshop."""

__version__ = "2.4.0"
