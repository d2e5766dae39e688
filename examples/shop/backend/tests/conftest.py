from __future__ import annotations

from datetime import datetime, timezone

import pytest

from inkwell.app import Shop, build_shop
from inkwell.checkout.service import Address
from inkwell.seed import seed

PRIDE = "9780141439518"
MOCKINGBIRD = "9780061120084"
ORWELL = "9780452284234"
WUTHERING = "9781853260001"  # e-book, no stock needed
NOW = datetime(2024, 5, 6, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def shop() -> Shop:
    shop = build_shop(hash_iterations=1_000)
    seed(shop.books, shop.stock)
    return shop


@pytest.fixture
def dublin() -> Address:
    return Address("Nora Byrne", "12 Dame Street", "Dublin", "D02 X285", "IE")


@pytest.fixture
def placed_order(shop: Shop, dublin: Address):
    """A pending order for two Pride and Prejudice and one Orwell, payment authorised."""
    cart = shop.carts.open_cart("acct-1")
    shop.carts.add_item(cart.id, PRIDE, 2)
    shop.carts.add_item(cart.id, ORWELL, 1)
    return shop.checkout.submit_order(cart.id, "acct-1", "nora@example.com", dublin, "tok_visa")
