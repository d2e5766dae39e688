import type { Cart, CartLine } from "../types";
import { createStore } from "./store";

export interface CartState {
  cart: Cart | null;
  pending: Set<string>; // ISBNs with a request in flight, so buttons can disable themselves
  error: string | null;
}

export type CartAction =
  | { type: "cart/loaded"; cart: Cart }
  | { type: "cart/requested"; isbn: string }
  | { type: "cart/failed"; isbn: string; message: string }
  | { type: "cart/cleared" };

export const initialCartState: CartState = { cart: null, pending: new Set(), error: null };

export function cartReducer(state: CartState, action: CartAction): CartState {
  switch (action.type) {
    case "cart/requested": {
      const pending = new Set(state.pending).add(action.isbn);
      return { ...state, pending, error: null };
    }
    case "cart/loaded":
      return { cart: action.cart, pending: new Set(), error: null };
    case "cart/failed": {
      const pending = new Set(state.pending);
      pending.delete(action.isbn);
      return { ...state, pending, error: action.message };
    }
    case "cart/cleared":
      return initialCartState;
  }
}

export const itemCount = (state: CartState): number =>
  state.cart?.lines.reduce((sum: number, line: CartLine) => sum + line.quantity, 0) ?? 0;

export const lineFor = (state: CartState, isbn: string): CartLine | undefined =>
  state.cart?.lines.find((line) => line.isbn === isbn);

export function freeShippingGap(state: CartState, thresholdCents = 3500): number {
  const subtotal = state.cart?.subtotal ?? 0;
  return Math.max(0, thresholdCents - subtotal);
}

export const cartStore = createStore(cartReducer, initialCartState);
