"""Password hashing (PBKDF2-SHA256 from the standard library) and strength rules."""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from inkwell.errors import ValidationError

ITERATIONS = 310_000
MIN_LENGTH = 10
COMMON_PASSWORDS = frozenset({"password123", "qwertyuiop", "1234567890", "letmein123", "inkwellbooks"})


def hash_password(password: str, iterations: int = ITERATIONS) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return "pbkdf2_sha256${}${}${}".format(
        iterations, base64.b64encode(salt).decode(), base64.b64encode(digest).decode()
    )


def verify_password(password: str, stored: str) -> bool:
    """Constant-time check; the iteration count travels with the hash so it can be raised later."""
    try:
        scheme, iterations, salt_b64, digest_b64 = stored.split("$")
    except ValueError:
        return False
    if scheme != "pbkdf2_sha256":
        return False
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(salt_b64), int(iterations))
    return hmac.compare_digest(digest, base64.b64decode(digest_b64))


def needs_rehash(stored: str) -> bool:
    parts = stored.split("$")
    return len(parts) != 4 or int(parts[1]) < ITERATIONS


def check_password_strength(password: str, email: str = "") -> None:
    if len(password) < MIN_LENGTH:
        raise ValidationError(f"password must be at least {MIN_LENGTH} characters")
    if password.lower() in COMMON_PASSWORDS:
        raise ValidationError("this password is too common")
    local_part = email.split("@")[0].lower()
    if local_part and len(local_part) >= 4 and local_part in password.lower():
        raise ValidationError("password must not contain your email address")
    if len(set(password)) < 5:
        raise ValidationError("password uses too few different characters")
