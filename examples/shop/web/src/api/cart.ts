import type { Cart } from "../types";
import { ApiError, api } from "./client";

const CART_KEY = "inkwell.cartId";

export async function createCart(): Promise<Cart> {
  const cart = await api.request<Cart>("/api/carts", { method: "POST" });
  localStorage.setItem(CART_KEY, cart.id);
  return cart;
}

export function rememberedCartId(): string | null {
  return localStorage.getItem(CART_KEY);
}

export const addToCart = async (cartId: string, isbn: string, quantity = 1): Promise<Cart> => {
  if (!Number.isInteger(quantity) || quantity < 1) {
    throw new Error("quantity must be a whole number of at least 1");
  }
  try {
    return await api.request<Cart>(`/api/carts/${cartId}/items`, { method: "POST", body: { isbn, quantity } });
  } catch (err) {
    // The cart expired or was checked out in another tab: start a fresh one and retry once.
    if (err instanceof ApiError && (err.status === 404 || err.code === "cart_error")) {
      const fresh = await createCart();
      return api.request<Cart>(`/api/carts/${fresh.id}/items`, { method: "POST", body: { isbn, quantity } });
    }
    throw err;
  }
};

export const removeFromCart = (cartId: string, isbn: string): Promise<Cart> =>
  api.request<Cart>(`/api/carts/${cartId}/items/${isbn}`, { method: "DELETE" });

export function forgetCart(): void {
  localStorage.removeItem(CART_KEY);
}
