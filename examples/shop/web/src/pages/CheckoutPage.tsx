import { useState } from "react";
import { CheckoutFailed, submitCheckout } from "../api/checkout";
import { cartStore } from "../store/cartStore";
import { sessionStore } from "../store/sessionStore";
import type { Address, PlacedOrder } from "../types";
import { formatMoney } from "../utils/money";
import { validateEmail } from "../utils/validation";

const EMPTY_ADDRESS: Address = { name: "", line1: "", city: "", postcode: "", country: "IE" };

export function CheckoutPage({ tokenizeCard }: { tokenizeCard: () => Promise<string> }) {
  const [email, setEmail] = useState("");
  const [address, setAddress] = useState<Address>(EMPTY_ADDRESS);
  const [coupon, setCoupon] = useState("");
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [banner, setBanner] = useState<string | null>(null);
  const [submitting, setSubmitting] = useState(false);
  const [placed, setPlaced] = useState<PlacedOrder | null>(null);
  const cart = cartStore.getState().cart;

  if (!sessionStore.getState().token) {
    return <main><p>Please <a href="/login?next=/checkout">log in</a> to check out.</p></main>;
  }
  if (placed) {
    return (
      <main>
        <h1>Thank you!</h1>
        <p>Order {placed.orderId} is confirmed. Total {formatMoney(placed.total)}. We email you when it ships.</p>
      </main>
    );
  }

  async function onSubmit(event: { preventDefault(): void }) {
    event.preventDefault();
    if (submitting || !cart) return; // a double click must not place two orders
    const emailProblem = validateEmail(email);
    if (emailProblem) return setErrors({ email: emailProblem });
    setSubmitting(true);
    setBanner(null);
    try {
      const cardToken = await tokenizeCard();
      const order = await submitCheckout({ cartId: cart.id, email, cardToken, address, coupon });
      cartStore.dispatch({ type: "cart/cleared" });
      setPlaced(order);
    } catch (err) {
      if (err instanceof CheckoutFailed) {
        setErrors(err.fields);
        setBanner(err.message);
      } else {
        setBanner("something went wrong; your card has not been charged");
      }
    } finally {
      setSubmitting(false);
    }
  }

  const field = (key: keyof Address, label: string) => (
    <label>
      {label}
      <input value={address[key]} onChange={(e) => setAddress({ ...address, [key]: e.target.value })} />
      {errors[key] && <span className="error">{errors[key]}</span>}
    </label>
  );

  return (
    <form onSubmit={onSubmit}>
      {banner && <p role="alert">{banner}</p>}
      <label>
        Email
        <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} />
        {errors.email && <span className="error">{errors.email}</span>}
      </label>
      {field("name", "Full name")}
      {field("line1", "Street address")}
      {field("city", "Town or city")}
      {field("postcode", "Postcode / Eircode")}
      {field("country", "Country code")}
      <label>
        Coupon code
        <input value={coupon} onChange={(e) => setCoupon(e.target.value)} />
        {errors.coupon && <span className="error">{errors.coupon}</span>}
      </label>
      {errors.card && <p className="error">{errors.card}</p>}
      <button type="submit" disabled={submitting}>{submitting ? "Placing order…" : "Place order"}</button>
    </form>
  );
}
