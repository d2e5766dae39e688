"""Sign-up, login with lockout, and email verification."""
from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from inkwell.accounts.models import Account, Role, normalize_email
from inkwell.accounts.passwords import ITERATIONS, check_password_strength, hash_password, verify_password
from inkwell.errors import AuthError, NotFound, ValidationError
from inkwell.notifications.emails import EmailOutbox

MAX_FAILED_LOGINS = 5
LOCKOUT = timedelta(minutes=15)


class AccountService:
    def __init__(self, outbox: EmailOutbox, hash_iterations: int = ITERATIONS) -> None:
        self._outbox = outbox
        self._iterations = hash_iterations
        self._by_id: dict[str, Account] = {}
        self._by_email: dict[str, str] = {}

    def sign_up(self, email: str, name: str, password: str, role: Role = Role.CUSTOMER) -> Account:
        email = normalize_email(email)
        if email in self._by_email:
            raise ValidationError("an account with this email already exists")
        if not name.strip():
            raise ValidationError("please tell us your name")
        check_password_strength(password, email)
        account = Account(uuid.uuid4().hex, email, name.strip(), hash_password(password, self._iterations), role)
        self._by_id[account.id] = account
        self._by_email[email] = account.id
        self._outbox.queue("welcome", email, name=account.name)
        return account

    def get(self, account_id: str) -> Account:
        account = self._by_id.get(account_id)
        if account is None:
            raise NotFound(f"account {account_id} does not exist")
        return account

    def find_by_email(self, email: str) -> Account | None:
        try:
            account_id = self._by_email.get(normalize_email(email))
        except ValidationError:
            return None
        return self._by_id.get(account_id) if account_id else None

    def authenticate(self, email: str, password: str, now: datetime | None = None) -> Account:
        """Check credentials; the same message for unknown email and wrong password."""
        now = now or datetime.now(timezone.utc)
        account = self.find_by_email(email)
        if account is None:
            raise AuthError("email or password is incorrect")
        if account.is_locked(now):
            raise AuthError("too many failed attempts; try again in 15 minutes or reset your password")
        if not verify_password(password, account.password_hash):
            account.failed_logins += 1
            if account.failed_logins >= MAX_FAILED_LOGINS:
                account.locked_until = now + LOCKOUT
                account.failed_logins = 0
            raise AuthError("email or password is incorrect")
        account.failed_logins = 0
        account.locked_until = None
        return account

    def set_password(self, account_id: str, new_password: str) -> None:
        account = self.get(account_id)
        check_password_strength(new_password, account.email)
        account.password_hash = hash_password(new_password, self._iterations)
        account.locked_until = None
        account.failed_logins = 0

    def verify_email(self, account_id: str) -> None:
        self.get(account_id).email_verified = True
