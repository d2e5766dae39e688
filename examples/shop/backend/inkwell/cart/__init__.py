"""Shopping carts: what a customer intends to buy."""
