import pytest

from conftest import MOCKINGBIRD, ORWELL, PRIDE, WUTHERING
from inkwell.cart.models import CartStatus
from inkwell.errors import CartError, InventoryError


def test_adding_the_same_book_twice_merges_lines(shop):
    cart = shop.carts.open_cart()
    shop.carts.add_item(cart.id, PRIDE)
    shop.carts.add_item(cart.id, PRIDE, 2)
    assert cart.lines[PRIDE].quantity == 3
    assert cart.subtotal().cents == 3 * 899


def test_cannot_add_more_than_in_stock(shop):
    cart = shop.carts.open_cart()
    with pytest.raises(InventoryError, match="only 2 copies"):
        shop.carts.add_item(cart.id, ORWELL, 3)


def test_ebooks_need_no_stock(shop):
    cart = shop.carts.open_cart()
    shop.carts.add_item(cart.id, WUTHERING, 1)
    assert cart.item_count == 1


def test_quantity_cap_per_line(shop):
    cart = shop.carts.open_cart()
    shop.stock.receive(PRIDE, 20)
    with pytest.raises(CartError, match="at most 10 copies"):
        shop.carts.add_item(cart.id, PRIDE, 11)


def test_failed_quantity_update_keeps_the_old_line(shop):
    cart = shop.carts.open_cart()
    shop.carts.add_item(cart.id, MOCKINGBIRD, 2)
    with pytest.raises(InventoryError):
        shop.carts.update_quantity(cart.id, MOCKINGBIRD, 9)
    assert cart.lines[MOCKINGBIRD].quantity == 2


def test_merge_guest_cart_after_login(shop):
    guest = shop.carts.open_cart()
    mine = shop.carts.open_cart("acct-1")
    shop.carts.add_item(guest.id, PRIDE, 2)
    shop.carts.add_item(mine.id, PRIDE, 1)
    merged = shop.carts.merge_guest_cart(guest.id, mine.id)
    assert merged.lines[PRIDE].quantity == 3
    assert guest.status is CartStatus.ABANDONED
    with pytest.raises(CartError, match="can no longer be changed"):
        shop.carts.add_item(guest.id, PRIDE)
