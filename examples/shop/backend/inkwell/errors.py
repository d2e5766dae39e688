"""Domain errors. The API layer maps each class to one HTTP status."""
from __future__ import annotations


class InkwellError(Exception):
    """Base class: the message is safe to show to the customer."""

    status = 400
    code = "bad_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(InkwellError):
    code = "invalid"


class NotFound(InkwellError):
    status = 404
    code = "not_found"


class Forbidden(InkwellError):
    status = 403
    code = "forbidden"


class AuthError(InkwellError):
    status = 401
    code = "unauthenticated"


class CartError(InkwellError):
    code = "cart_error"


class CheckoutError(InkwellError):
    status = 409
    code = "checkout_failed"


class PaymentError(InkwellError):
    status = 402
    code = "payment_failed"


class RefundError(InkwellError):
    status = 409
    code = "refund_refused"


class InventoryError(InkwellError):
    status = 409
    code = "out_of_stock"


class CouponError(InkwellError):
    code = "coupon_invalid"


class OrderStateError(InkwellError):
    status = 409
    code = "bad_transition"


class RateLimited(InkwellError):
    status = 429
    code = "rate_limited"
