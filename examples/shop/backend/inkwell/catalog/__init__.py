"""Books, categories and how customers find them."""
