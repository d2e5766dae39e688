from datetime import timedelta

import pytest

from conftest import NOW
from inkwell.accounts.reset import issue_password_reset_token, redeem_password_reset_token
from inkwell.errors import AuthError, RateLimited, ValidationError


@pytest.fixture
def account(shop):
    return shop.accounts.sign_up(" Nora@Example.com ", "Nora", "correct horse battery")


def test_sign_up_normalises_email_and_sends_welcome(shop, account):
    assert account.email == "nora@example.com"
    assert shop.outbox.for_recipient("nora@example.com")[0].subject == "Welcome to Inkwell Books"
    with pytest.raises(ValidationError, match="already exists"):
        shop.accounts.sign_up("NORA@example.com", "Nora 2", "another long secret")


@pytest.mark.parametrize(
    ("password", "message"),
    [("short", "at least 10"), ("password123", "too common"), ("nora-is-great", "email address"),
     ("aaaaaaaaaaaa", "too few different")],
)
def test_weak_passwords_are_rejected(shop, password, message):
    with pytest.raises(ValidationError, match=message):
        shop.accounts.sign_up("nora@example.com", "Nora", password)


def test_five_wrong_passwords_lock_the_account(shop, account):
    for _ in range(5):
        with pytest.raises(AuthError, match="incorrect"):
            shop.accounts.authenticate("nora@example.com", "wrong password!", NOW)
    with pytest.raises(AuthError, match="too many failed attempts"):
        shop.accounts.authenticate("nora@example.com", "correct horse battery", NOW)
    assert shop.accounts.authenticate("nora@example.com", "correct horse battery", NOW + timedelta(minutes=16))


def test_password_reset_token_is_single_use(shop, account):
    token = issue_password_reset_token(shop.resets, shop.accounts, shop.outbox, "nora@example.com", NOW)
    assert token and token in shop.outbox.pending[-1].body
    redeem_password_reset_token(shop.resets, shop.accounts, token, "a brand new secret", NOW)
    assert shop.accounts.authenticate("nora@example.com", "a brand new secret", NOW)
    with pytest.raises(AuthError, match="already been used"):
        redeem_password_reset_token(shop.resets, shop.accounts, token, "yet another secret", NOW)


def test_password_reset_token_expires(shop, account):
    token = issue_password_reset_token(shop.resets, shop.accounts, shop.outbox, "nora@example.com", NOW)
    with pytest.raises(AuthError, match="expired"):
        redeem_password_reset_token(shop.resets, shop.accounts, token, "a brand new secret", NOW + timedelta(minutes=31))


def test_reset_for_unknown_email_reveals_nothing_and_requests_are_rate_limited(shop, account):
    assert issue_password_reset_token(shop.resets, shop.accounts, shop.outbox, "ghost@example.com", NOW) is None
    for minute in range(3):
        issue_password_reset_token(shop.resets, shop.accounts, shop.outbox, "nora@example.com", NOW + timedelta(minutes=minute))
    with pytest.raises(RateLimited):
        issue_password_reset_token(shop.resets, shop.accounts, shop.outbox, "nora@example.com", NOW + timedelta(minutes=5))
