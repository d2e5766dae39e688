import { describe, expect, it } from "vitest";
import { cartReducer, freeShippingGap, initialCartState, itemCount, lineFor } from "../store/cartStore";
import { createStore } from "../store/store";
import type { Cart } from "../types";

const cart: Cart = {
  id: "c1",
  status: "open",
  subtotal: 2848,
  lines: [
    { isbn: "9780141439518", title: "Pride and Prejudice", unitPrice: 899, quantity: 2 },
    { isbn: "9780452284234", title: "Nineteen Eighty-Four", unitPrice: 1050, quantity: 1 },
  ],
};

describe("cartReducer", () => {
  it("tracks requests in flight per ISBN and clears them when the cart loads", () => {
    let state = cartReducer(initialCartState, { type: "cart/requested", isbn: "9780141439518" });
    expect(state.pending.has("9780141439518")).toBe(true);
    state = cartReducer(state, { type: "cart/loaded", cart });
    expect(state.pending.size).toBe(0);
    expect(itemCount(state)).toBe(3);
    expect(lineFor(state, "9780452284234")?.quantity).toBe(1);
  });

  it("keeps the cart and shows the message when a request fails", () => {
    const loaded = cartReducer(initialCartState, { type: "cart/loaded", cart });
    const failed = cartReducer(loaded, { type: "cart/failed", isbn: "x", message: "only 2 copies left" });
    expect(failed.cart).toBe(cart);
    expect(failed.error).toBe("only 2 copies left");
  });

  it("computes the gap to free shipping", () => {
    const loaded = cartReducer(initialCartState, { type: "cart/loaded", cart });
    expect(freeShippingGap(loaded)).toBe(652);
    expect(freeShippingGap(initialCartState)).toBe(3500);
  });
});

describe("createStore", () => {
  it("notifies subscribers only when the state changes", () => {
    const store = createStore((s: number, a: number) => s + a, 0);
    const seen: number[] = [];
    const unsubscribe = store.subscribe((s) => seen.push(s));
    store.dispatch(2);
    store.dispatch(0);
    unsubscribe();
    store.dispatch(5);
    expect(seen).toEqual([2]);
    expect(store.getState()).toBe(7);
  });
});
