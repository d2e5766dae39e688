"""Coupons and promotional campaigns."""
