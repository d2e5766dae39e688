"""Transactional emails. Messages are queued in an outbox and sent by a background job."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from string import Template

from inkwell.errors import ValidationError

TEMPLATES: dict[str, tuple[str, str]] = {
    "order_confirmation": (
        "Your Inkwell order $order_id",
        "Thank you for your order $order_id. We charged $total and will email you when it ships.",
    ),
    "shipping_notification": (
        "Your order $order_id is on its way",
        "Order $order_id left our warehouse with $carrier. Track it at $tracking_url.",
    ),
    "password_reset": (
        "Reset your Inkwell password",
        "Someone asked to reset your password. Use this link within $minutes minutes: $reset_url\n"
        "If it was not you, ignore this email; your password is unchanged.",
    ),
    "refund_issued": (
        "Refund for order $order_id",
        "We refunded $amount to your card. It can take 5-10 working days to appear.",
    ),
    "welcome": ("Welcome to Inkwell Books", "Hello $name, your account is ready."),
    "low_stock_report": ("Low stock: $count titles", "These titles are at or below their reorder point:\n$listing"),
}


@dataclass
class EmailMessage:
    template: str
    to: str
    subject: str
    body: str
    queued_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    sent_at: datetime | None = None
    attempts: int = 0


def render_template(template: str, **values: str) -> tuple[str, str]:
    """Fill a template; a missing value is an error rather than a "$name" in a customer's inbox."""
    if template not in TEMPLATES:
        raise ValidationError(f"no email template named {template!r}")
    subject, body = TEMPLATES[template]
    try:
        return Template(subject).substitute(values), Template(body).substitute(values)
    except KeyError as exc:
        raise ValidationError(f"email {template!r} is missing the value {exc.args[0]!r}") from None


class EmailOutbox:
    def __init__(self) -> None:
        self.pending: list[EmailMessage] = []
        self.sent: list[EmailMessage] = []

    def queue(self, template: str, to: str, **values: object) -> EmailMessage:
        if "@" not in to:
            raise ValidationError(f"cannot email {to!r}: not an address")
        subject, body = render_template(template, **{k: str(v) for k, v in values.items()})
        message = EmailMessage(template, to, subject, body)
        self.pending.append(message)
        return message

    def mark_sent(self, message: EmailMessage, now: datetime | None = None) -> None:
        message.sent_at = now or datetime.now(timezone.utc)
        self.pending.remove(message)
        self.sent.append(message)

    def for_recipient(self, to: str) -> list[EmailMessage]:
        return [m for m in self.pending + self.sent if m.to == to]
