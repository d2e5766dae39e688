"""Authorisation, capture and refunds through the payment gateway."""
