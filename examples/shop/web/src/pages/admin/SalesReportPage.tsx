import { useState } from "react";
import { fetchSalesReport } from "../../api/admin";
import { sessionStore } from "../../store/sessionStore";
import type { SalesReport } from "../../types";
import { formatMoney } from "../../utils/money";

function isoDay(date: Date): string {
  return date.toISOString().slice(0, 10);
}

export function lastMonthRange(today: Date): [string, string] {
  const start = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 1, 1));
  const end = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 1));
  return [isoDay(start), isoDay(end)];
}

export function SalesReportPage() {
  const [[from, to], setRange] = useState(lastMonthRange(new Date()));
  const [report, setReport] = useState<SalesReport | null>(null);
  const [error, setError] = useState<string | null>(null);

  if (!sessionStore.getState().isAdmin) {
    return <main><p role="alert">This page is for shop staff only.</p></main>;
  }

  async function load() {
    setError(null);
    try {
      setReport(await fetchSalesReport(from, to));
    } catch (err) {
      setError((err as Error).message);
    }
  }

  return (
    <main>
      <h1>Sales report</h1>
      <input type="date" value={from} onChange={(e) => setRange([e.target.value, to])} />
      <input type="date" value={to} onChange={(e) => setRange([from, e.target.value])} />
      <button onClick={load}>Run report</button>
      {error && <p role="alert">{error}</p>}
      {report && (
        <>
          <dl>
            <dt>Orders</dt><dd>{report.orders}</dd>
            <dt>Gross</dt><dd>{formatMoney(report.gross)}</dd>
            <dt>Refunds</dt><dd>{formatMoney(-report.refunds)}</dd>
            <dt>Net</dt><dd>{formatMoney(report.net)}</dd>
          </dl>
          <h2>Best sellers</h2>
          <ol>
            {report.topSellers.map(([title, copies]) => (
              <li key={title}>{title} — {copies} copies</li>
            ))}
          </ol>
        </>
      )}
    </main>
  );
}
