"""Wiring: one place that builds every service, so tests and the server share the graph."""
from __future__ import annotations

from dataclasses import dataclass

from inkwell.accounts.reset import PasswordResetStore
from inkwell.accounts.service import AccountService
from inkwell.cart.service import CartService
from inkwell.catalog.browse import CatalogBrowser
from inkwell.catalog.repository import BookRepository
from inkwell.catalog.search import BookSearch
from inkwell.checkout.service import CheckoutService
from inkwell.inventory.restock import RestockPlanner
from inkwell.inventory.stock import StockLedger
from inkwell.jobs.queue import JobQueue
from inkwell.notifications.emails import EmailOutbox
from inkwell.orders.repository import OrderRepository
from inkwell.payments.gateway import PaymentGateway, SandboxGateway
from inkwell.payments.refunds import RefundService
from inkwell.payments.service import PaymentService
from inkwell.promotions.campaigns import CampaignScheduler
from inkwell.promotions.coupons import CouponService
from inkwell.reviews.service import ReviewService
from inkwell.shipping.service import ShippingService


@dataclass
class Shop:
    books: BookRepository
    browser: CatalogBrowser
    search: BookSearch
    stock: StockLedger
    restock: RestockPlanner
    carts: CartService
    orders: OrderRepository
    gateway: PaymentGateway
    payments: PaymentService
    refunds: RefundService
    coupons: CouponService
    campaigns: CampaignScheduler
    checkout: CheckoutService
    shipping: ShippingService
    accounts: AccountService
    resets: PasswordResetStore
    reviews: ReviewService
    outbox: EmailOutbox
    jobs: JobQueue


def build_shop(
    gateway: PaymentGateway | None = None, hash_iterations: int | None = None, sleep=lambda _s: None
) -> Shop:
    books = BookRepository()
    stock = StockLedger()
    orders = OrderRepository()
    outbox = EmailOutbox()
    gateway = gateway or SandboxGateway()
    payments = PaymentService(gateway, sleep=sleep)
    coupons = CouponService()
    carts = CartService(books, stock)
    accounts = AccountService(outbox, hash_iterations) if hash_iterations else AccountService(outbox)
    return Shop(
        books=books,
        browser=CatalogBrowser(books),
        search=BookSearch(books),
        stock=stock,
        restock=RestockPlanner(stock),
        carts=carts,
        orders=orders,
        gateway=gateway,
        payments=payments,
        refunds=RefundService(orders, payments, gateway, stock),
        coupons=coupons,
        campaigns=CampaignScheduler(coupons),
        checkout=CheckoutService(carts, books, stock, orders, payments, coupons, outbox),
        shipping=ShippingService(orders, payments, stock, outbox),
        accounts=accounts,
        resets=PasswordResetStore(),
        reviews=ReviewService(books, orders),
        outbox=outbox,
        jobs=JobQueue(),
    )
