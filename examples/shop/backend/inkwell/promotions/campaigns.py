"""Promotional campaigns: a batch of single-use coupon codes with one shared window."""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import Enum

from inkwell.errors import CouponError, ValidationError
from inkwell.money import Money
from inkwell.promotions.coupons import Coupon, CouponService

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I: codes get typed by hand
MAX_CODES_PER_CAMPAIGN = 10_000


class CampaignStatus(str, Enum):
    DRAFT = "draft"
    ACTIVE = "active"
    ENDED = "ended"


@dataclass
class Campaign:
    id: str
    name: str
    starts_at: datetime
    ends_at: datetime
    percent_off: Decimal
    minimum_subtotal: Money
    status: CampaignStatus = CampaignStatus.DRAFT


def generate_code(prefix: str, length: int = 8) -> str:
    body = "".join(secrets.choice(CODE_ALPHABET) for _ in range(length))
    return f"{prefix.upper()}-{body}"


class CampaignScheduler:
    def __init__(self, coupons: CouponService) -> None:
        self._coupons = coupons
        self._campaigns: dict[str, Campaign] = {}

    def create_campaign(self, campaign: Campaign) -> Campaign:
        if campaign.ends_at <= campaign.starts_at:
            raise ValidationError(f"campaign {campaign.name!r} ends before it starts")
        if not 0 < campaign.percent_off <= 50:
            raise ValidationError("campaign discounts above 50% need finance sign-off")
        self._campaigns[campaign.id] = campaign
        return campaign

    def issue_codes(self, campaign_id: str, count: int, prefix: str) -> list[str]:
        campaign = self._campaigns[campaign_id]
        if campaign.status is CampaignStatus.ENDED:
            raise CouponError(f"campaign {campaign.name!r} has ended")
        if count < 1 or count > MAX_CODES_PER_CAMPAIGN:
            raise ValidationError(f"issue between 1 and {MAX_CODES_PER_CAMPAIGN} codes")
        codes = []
        while len(codes) < count:
            code = generate_code(prefix)
            try:
                self._coupons.register(
                    Coupon(
                        code=code,
                        percent_off=campaign.percent_off,
                        minimum_subtotal=campaign.minimum_subtotal,
                        valid_from=campaign.starts_at,
                        valid_until=campaign.ends_at,
                        max_redemptions=1,
                        campaign_id=campaign.id,
                    )
                )
            except CouponError:
                continue  # collision with an existing code: draw again
            codes.append(code)
        return codes

    def refresh_statuses(self, now: datetime) -> list[Campaign]:
        """Move campaigns through draft -> active -> ended; returns the ones that changed."""
        changed = []
        for campaign in self._campaigns.values():
            new = campaign.status
            if campaign.status is CampaignStatus.DRAFT and campaign.starts_at <= now < campaign.ends_at:
                new = CampaignStatus.ACTIVE
            elif campaign.status is not CampaignStatus.ENDED and now >= campaign.ends_at:
                new = CampaignStatus.ENDED
            if new is not campaign.status:
                campaign.status = new
                changed.append(campaign)
        return changed

    def redemption_rate(self, campaign_id: str) -> float:
        coupons = self._coupons.in_campaign(campaign_id)
        if not coupons:
            return 0.0
        return sum(1 for c in coupons if c.redeemed_by) / len(coupons)
