"""Password reset tokens: single use, short-lived, stored only as a hash, rate limited."""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from inkwell.accounts.service import AccountService
from inkwell.errors import AuthError, RateLimited
from inkwell.notifications.emails import EmailOutbox

TOKEN_TTL = timedelta(minutes=30)
MAX_REQUESTS_PER_HOUR = 3
RESET_URL = "https://inkwellbooks.example/account/reset?token={token}"


@dataclass
class ResetToken:
    account_id: str
    token_hash: str
    expires_at: datetime
    used: bool = False


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class PasswordResetStore:
    def __init__(self) -> None:
        self.tokens: dict[str, ResetToken] = {}
        self.requests: dict[str, list[datetime]] = {}


def issue_password_reset_token(
    store: PasswordResetStore, accounts: AccountService, outbox: EmailOutbox, email: str,
    now: datetime | None = None,
) -> str | None:
    """Email a reset link. Returns the raw token (for tests) or None for an unknown email.

    The API answers the same way in both cases so that the form cannot be used to find
    out who has an account.
    """
    now = now or datetime.now(timezone.utc)
    account = accounts.find_by_email(email)
    if account is None:
        return None
    recent = [t for t in store.requests.get(account.id, []) if now - t < timedelta(hours=1)]
    if len(recent) >= MAX_REQUESTS_PER_HOUR:
        raise RateLimited("too many password reset requests; try again in an hour")
    store.requests[account.id] = recent + [now]
    for existing in store.tokens.values():
        if existing.account_id == account.id:
            existing.used = True  # only the newest link works
    token = secrets.token_urlsafe(32)
    store.tokens[_digest(token)] = ResetToken(account.id, _digest(token), now + TOKEN_TTL)
    outbox.queue(
        "password_reset", account.email,
        minutes=int(TOKEN_TTL.total_seconds() // 60), reset_url=RESET_URL.format(token=token),
    )
    return token


def redeem_password_reset_token(
    store: PasswordResetStore, accounts: AccountService, token: str, new_password: str,
    now: datetime | None = None,
) -> str:
    """Set a new password with a valid token; returns the account id."""
    now = now or datetime.now(timezone.utc)
    record = store.tokens.get(_digest(token))
    if record is None:
        raise AuthError("this reset link is not valid")
    if record.used:
        raise AuthError("this reset link has already been used")
    if now >= record.expires_at:
        raise AuthError("this reset link has expired; request a new one")
    accounts.set_password(record.account_id, new_password)
    record.used = True
    return record.account_id
