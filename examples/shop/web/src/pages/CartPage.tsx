import { useEffect, useState } from "react";
import { addToCart, removeFromCart } from "../api/cart";
import { cartStore, freeShippingGap, itemCount, type CartState } from "../store/cartStore";
import { formatMoney, lineTotal } from "../utils/money";

function useCart(): CartState {
  const [state, setState] = useState(cartStore.getState());
  useEffect(() => cartStore.subscribe(setState), []);
  return state;
}

export function CartPage() {
  const state = useCart();
  const cart = state.cart;

  async function change(isbn: string, delta: number) {
    if (!cart) return;
    cartStore.dispatch({ type: "cart/requested", isbn });
    try {
      const line = cart.lines.find((l) => l.isbn === isbn);
      const next =
        delta < 0 && line && line.quantity + delta <= 0
          ? await removeFromCart(cart.id, isbn)
          : delta > 0
            ? await addToCart(cart.id, isbn, delta)
            : await removeFromCart(cart.id, isbn).then(() => addToCart(cart.id, isbn, (line?.quantity ?? 1) + delta));
      cartStore.dispatch({ type: "cart/loaded", cart: next });
    } catch (err) {
      cartStore.dispatch({ type: "cart/failed", isbn, message: (err as Error).message });
    }
  }

  if (!cart || cart.lines.length === 0) {
    return (
      <main>
        <h1>Your cart is empty</h1>
        <a href="/books">Browse the catalog</a>
      </main>
    );
  }

  const gap = freeShippingGap(state);
  return (
    <main>
      <h1>Your cart ({itemCount(state)} items)</h1>
      {state.error && <p role="alert">{state.error}</p>}
      <table>
        <tbody>
          {cart.lines.map((line) => (
            <tr key={line.isbn}>
              <td>{line.title}</td>
              <td>
                <button disabled={state.pending.has(line.isbn)} onClick={() => change(line.isbn, -1)}>−</button>
                {line.quantity}
                <button disabled={state.pending.has(line.isbn)} onClick={() => change(line.isbn, 1)}>+</button>
              </td>
              <td>{formatMoney(lineTotal(line.unitPrice, line.quantity))}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="subtotal">Subtotal: {formatMoney(cart.subtotal)}</p>
      {gap > 0 && <p>Add {formatMoney(gap)} more for free delivery in Ireland.</p>}
      <a className="button" href="/checkout">Go to checkout</a>
    </main>
  );
}
