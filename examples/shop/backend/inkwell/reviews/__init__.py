"""Customer reviews of books."""
