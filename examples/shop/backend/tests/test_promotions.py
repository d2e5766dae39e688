from datetime import timedelta
from decimal import Decimal

import pytest

from conftest import NOW
from inkwell.errors import CouponError, ValidationError
from inkwell.money import Money
from inkwell.promotions.campaigns import Campaign, CampaignStatus
from inkwell.promotions.coupons import Coupon


def test_fixed_amount_coupon_never_exceeds_subtotal(shop):
    shop.coupons.register(Coupon("TENOFF", amount_off=Money(1000)))
    assert shop.coupons.apply_coupon("tenoff", "a", Money(650), NOW) == Money(650)


def test_coupon_validity_window_and_minimum(shop):
    shop.coupons.register(Coupon(
        "SUMMER", percent_off=Decimal(15), minimum_subtotal=Money(2000),
        valid_from=NOW, valid_until=NOW + timedelta(days=7),
    ))
    with pytest.raises(CouponError, match="not valid yet"):
        shop.coupons.apply_coupon("SUMMER", "a", Money(5000), NOW - timedelta(seconds=1))
    with pytest.raises(CouponError, match="at least €20.00"):
        shop.coupons.apply_coupon("SUMMER", "a", Money(1999), NOW)
    with pytest.raises(CouponError, match="has expired"):
        shop.coupons.apply_coupon("SUMMER", "a", Money(5000), NOW + timedelta(days=7))
    assert shop.coupons.apply_coupon("SUMMER", "a", Money(2000), NOW) == Money(300)


def test_coupon_needs_exactly_one_kind_of_discount():
    with pytest.raises(CouponError, match="exactly one"):
        Coupon("BOTH", percent_off=Decimal(5), amount_off=Money(100))


def test_campaign_issues_unique_single_use_codes_and_ends(shop):
    campaign = shop.campaigns.create_campaign(Campaign(
        "spring", "Spring sale", NOW, NOW + timedelta(days=3), Decimal(20), Money(1500),
    ))
    codes = shop.campaigns.issue_codes("spring", 25, "spr")
    assert len(set(codes)) == 25 and all(c.startswith("SPR-") for c in codes)
    assert not any(ch in codes[0][4:] for ch in "01OI")
    assert shop.campaigns.refresh_statuses(NOW) == [campaign] and campaign.status is CampaignStatus.ACTIVE
    shop.coupons.redeem(codes[0], "acct-1")
    with pytest.raises(CouponError, match="used up"):
        shop.coupons.validate_coupon(codes[0], "acct-2", Money(5000), NOW)
    assert shop.campaigns.redemption_rate("spring") == pytest.approx(1 / 25)
    shop.campaigns.refresh_statuses(NOW + timedelta(days=3))
    with pytest.raises(CouponError, match="has ended"):
        shop.campaigns.issue_codes("spring", 1, "spr")


def test_campaign_discount_cap(shop):
    with pytest.raises(ValidationError, match="finance sign-off"):
        shop.campaigns.create_campaign(Campaign("x", "Too generous", NOW, NOW + timedelta(days=1), Decimal(60), Money(0)))
