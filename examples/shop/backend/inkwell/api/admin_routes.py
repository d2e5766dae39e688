"""Back-office routes: reports, stock, shipments, campaigns, refunds on behalf of customers."""
from __future__ import annotations

from datetime import date, datetime, timezone
from decimal import Decimal

from inkwell.admin.reports import build_sales_report
from inkwell.api.auth import admin_required
from inkwell.api.http import Request, Response, Router, ok
from inkwell.app import Shop
from inkwell.errors import ValidationError
from inkwell.money import Money
from inkwell.promotions.campaigns import Campaign


def parse_day(text: str) -> datetime:
    try:
        return datetime.combine(date.fromisoformat(text), datetime.min.time(), timezone.utc)
    except ValueError:
        raise ValidationError(f"{text!r} is not a date like 2024-03-01") from None


class AdminRoutes:
    def __init__(self, shop: Shop) -> None:
        self.shop = shop

    def register(self, router: Router) -> None:
        router.add("GET", "/admin/reports/sales", admin_required(self.sales_report))
        router.add("GET", "/admin/stock/low", admin_required(self.low_stock))
        router.add("POST", "/admin/stock/{isbn}/deliveries", admin_required(self.receive_delivery))
        router.add("POST", "/admin/orders/{order_id}/shipment", admin_required(self.ship_order))
        router.add("POST", "/admin/orders/{order_id}/refund", admin_required(self.refund_order))
        router.add("POST", "/admin/campaigns", admin_required(self.create_campaign))

    def sales_report(self, request: Request) -> Response:
        start, end = parse_day(request.query.get("from", "")), parse_day(request.query.get("to", ""))
        report = build_sales_report(self.shop.orders.placed_between(start, end), start, end)
        return ok({
            "orders": report.order_count, "gross": report.gross.cents, "refunds": report.refunds.cents,
            "net": report.net.cents, "topSellers": report.top_sellers,
        })

    def low_stock(self, request: Request) -> Response:
        return ok([{"isbn": i.isbn, "available": i.available} for i in self.shop.stock.below_reorder_point()])

    def receive_delivery(self, request: Request) -> Response:
        (quantity,) = request.require(request.json(), "quantity")
        available = self.shop.restock.receive_shipment(request.params["isbn"], int(quantity))
        return ok({"isbn": request.params["isbn"], "available": available})

    def ship_order(self, request: Request) -> Response:
        carrier, tracking = request.require(request.json(), "carrier", "trackingNumber")
        order_id = request.params["order_id"]
        self.shop.shipping.create_shipment(order_id, carrier, tracking)
        shipment = self.shop.shipping.mark_dispatched(order_id)
        return ok({"orderId": order_id, "status": shipment.status.value, "tracking": shipment.tracking_url})

    def refund_order(self, request: Request) -> Response:
        data = request.json()
        (reason,) = request.require(data, "reason")
        amount = self.shop.refunds.refund_order(request.params["order_id"], list(data.get("isbns", [])), reason)
        return ok({"refunded": amount.cents})

    def create_campaign(self, request: Request) -> Response:
        data = request.json()
        name, starts, ends, percent = request.require(data, "name", "startsAt", "endsAt", "percentOff")
        campaign = self.shop.campaigns.create_campaign(Campaign(
            id=name.lower().replace(" ", "-"), name=name, starts_at=parse_day(starts), ends_at=parse_day(ends),
            percent_off=Decimal(str(percent)), minimum_subtotal=Money(int(data.get("minimumSubtotal", 0))),
        ))
        codes = self.shop.campaigns.issue_codes(campaign.id, int(data.get("codes", 100)), data.get("prefix", "INK"))
        return ok({"campaignId": campaign.id, "codes": len(codes)}, status=201)
