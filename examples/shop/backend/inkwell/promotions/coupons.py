"""Coupons: a code worth a percentage or a fixed amount, with limits on who and when."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal

from inkwell.errors import CouponError
from inkwell.money import Money


@dataclass
class Coupon:
    code: str
    percent_off: Decimal | None = None
    amount_off: Money | None = None
    minimum_subtotal: Money = field(default_factory=Money.zero)
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    max_redemptions: int | None = None
    once_per_customer: bool = True
    campaign_id: str | None = None
    redeemed_by: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.code = normalize_code(self.code)
        if (self.percent_off is None) == (self.amount_off is None):
            raise CouponError(f"coupon {self.code} needs exactly one of percent_off or amount_off")
        if self.percent_off is not None and not 0 < self.percent_off <= 100:
            raise CouponError(f"coupon {self.code}: percent_off must be in (0, 100]")

    def discount_for(self, subtotal: Money) -> Money:
        if self.percent_off is not None:
            return subtotal.percent(self.percent_off)
        assert self.amount_off is not None
        return min(self.amount_off, subtotal)


def normalize_code(code: str) -> str:
    return code.strip().upper().replace(" ", "")


class CouponService:
    def __init__(self) -> None:
        self._coupons: dict[str, Coupon] = {}

    def register(self, coupon: Coupon) -> None:
        if coupon.code in self._coupons:
            raise CouponError(f"coupon code {coupon.code} already exists")
        self._coupons[coupon.code] = coupon

    def validate_coupon(
        self, code: str, account_id: str, subtotal: Money, now: datetime | None = None
    ) -> Coupon:
        now = now or datetime.now(timezone.utc)
        coupon = self._coupons.get(normalize_code(code))
        if coupon is None:
            raise CouponError(f"coupon {normalize_code(code)} does not exist")
        if coupon.valid_from and now < coupon.valid_from:
            raise CouponError(f"coupon {coupon.code} is not valid yet")
        if coupon.valid_until and now >= coupon.valid_until:
            raise CouponError(f"coupon {coupon.code} has expired")
        if coupon.max_redemptions is not None and len(coupon.redeemed_by) >= coupon.max_redemptions:
            raise CouponError(f"coupon {coupon.code} has been used up")
        if coupon.once_per_customer and account_id in coupon.redeemed_by:
            raise CouponError(f"you have already used coupon {coupon.code}")
        if subtotal < coupon.minimum_subtotal:
            raise CouponError(
                f"coupon {coupon.code} needs a subtotal of at least {coupon.minimum_subtotal.format()}"
            )
        return coupon

    def apply_coupon(self, code: str, account_id: str, subtotal: Money, now: datetime | None = None) -> Money:
        """The discount a coupon would give now; does not redeem it."""
        return self.validate_coupon(code, account_id, subtotal, now).discount_for(subtotal)

    def redeem(self, code: str, account_id: str) -> None:
        """Called once the order is placed, so an abandoned checkout keeps the coupon."""
        coupon = self._coupons[normalize_code(code)]
        coupon.redeemed_by.append(account_id)

    def release(self, code: str, account_id: str) -> None:
        coupon = self._coupons.get(normalize_code(code))
        if coupon and account_id in coupon.redeemed_by:
            coupon.redeemed_by.remove(account_id)

    def in_campaign(self, campaign_id: str) -> list[Coupon]:
        return [c for c in self._coupons.values() if c.campaign_id == campaign_id]
