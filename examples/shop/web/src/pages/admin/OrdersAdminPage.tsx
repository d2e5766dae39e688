import { useState } from "react";
import { refundOrderAsAdmin, shipOrder } from "../../api/admin";
import { formatMoney } from "../../utils/money";

const CARRIERS = ["an-post", "dhl", "royal-mail"] as const;

// Warehouse staff dispatch packed orders here; support staff issue refunds for customers.
export function OrdersAdminPage() {
  const [orderId, setOrderId] = useState("");
  const [carrier, setCarrier] = useState<(typeof CARRIERS)[number]>("an-post");
  const [tracking, setTracking] = useState("");
  const [reason, setReason] = useState("");
  const [log, setLog] = useState<string[]>([]);

  const note = (line: string) => setLog((previous) => [line, ...previous].slice(0, 20));

  async function onShip() {
    if (!orderId || !tracking) return note("order id and tracking number are both required");
    try {
      const result = await shipOrder(orderId.trim(), carrier, tracking);
      note(`${result.orderId} dispatched: ${result.tracking}`);
    } catch (err) {
      note(`${orderId}: ${(err as Error).message}`);
    }
  }

  async function onRefund() {
    if (reason.trim().length < 5) return note("give a reason the customer will understand");
    if (!confirm(`Refund the rest of order ${orderId}? This cannot be undone.`)) return;
    try {
      const { refunded } = await refundOrderAsAdmin(orderId.trim(), reason.trim());
      note(`${orderId}: refunded ${formatMoney(refunded)}`);
    } catch (err) {
      note(`${orderId}: ${(err as Error).message}`);
    }
  }

  return (
    <main>
      <h1>Orders</h1>
      <input placeholder="INK-1001" value={orderId} onChange={(e) => setOrderId(e.target.value)} />
      <fieldset>
        <legend>Dispatch</legend>
        <select value={carrier} onChange={(e) => setCarrier(e.target.value as (typeof CARRIERS)[number])}>
          {CARRIERS.map((c) => <option key={c}>{c}</option>)}
        </select>
        <input placeholder="Tracking number" value={tracking} onChange={(e) => setTracking(e.target.value)} />
        <button onClick={onShip}>Mark dispatched</button>
      </fieldset>
      <fieldset>
        <legend>Refund</legend>
        <input placeholder="Reason" value={reason} onChange={(e) => setReason(e.target.value)} />
        <button onClick={onRefund}>Refund order</button>
      </fieldset>
      <ul className="log">{log.map((line, i) => <li key={i}>{line}</li>)}</ul>
    </main>
  );
}
