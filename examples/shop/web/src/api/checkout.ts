import type { Address, PlacedOrder } from "../types";
import { validateAddress } from "../utils/validation";
import { ApiError, api } from "./client";
import { forgetCart } from "./cart";

export interface CheckoutRequest {
  cartId: string;
  email: string;
  cardToken: string;
  address: Address;
  coupon?: string;
}

export class CheckoutFailed extends Error {
  constructor(message: string, public readonly fields: Record<string, string> = {}) {
    super(message);
  }
}

// Validate locally first so the customer sees every problem at once, then submit exactly once.
export async function submitCheckout(request: CheckoutRequest): Promise<PlacedOrder> {
  const fields = validateAddress(request.address);
  if (Object.keys(fields).length > 0) {
    throw new CheckoutFailed("please correct the highlighted fields", fields);
  }
  try {
    const order = await api.request<PlacedOrder>("/api/checkout", {
      method: "POST",
      body: { ...request, coupon: request.coupon?.trim() || undefined },
    });
    forgetCart();
    return order;
  } catch (err) {
    if (err instanceof ApiError) {
      if (err.code === "payment_failed") throw new CheckoutFailed(err.message, { card: err.message });
      if (err.code === "coupon_invalid") throw new CheckoutFailed(err.message, { coupon: err.message });
      throw new CheckoutFailed(err.message);
    }
    throw new CheckoutFailed("we could not reach the shop; your card has not been charged");
  }
}
