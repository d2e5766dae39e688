"""Accounts for customers and staff."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum

from inkwell.errors import ValidationError

EMAIL_PATTERN = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)


class Role(str, Enum):
    CUSTOMER = "customer"
    ADMIN = "admin"
    WAREHOUSE = "warehouse"


@dataclass
class Account:
    id: str
    email: str
    name: str
    password_hash: str
    role: Role = Role.CUSTOMER
    email_verified: bool = False
    failed_logins: int = 0
    locked_until: datetime | None = None
    created_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    @property
    def is_staff(self) -> bool:
        return self.role in (Role.ADMIN, Role.WAREHOUSE)

    def is_locked(self, now: datetime) -> bool:
        return self.locked_until is not None and now < self.locked_until


def normalize_email(email: str) -> str:
    """One account per mailbox: compare addresses case-insensitively and without spaces."""
    cleaned = email.strip().lower()
    if not EMAIL_PATTERN.match(cleaned):
        raise ValidationError(f"{email!r} is not a valid email address")
    return cleaned
