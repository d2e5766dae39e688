// Money is integer cents on the wire; only this module turns it into text.

const SYMBOLS: Record<string, string> = { EUR: "€", GBP: "£", USD: "$" };

export function formatMoney(cents: number, currency = "EUR"): string {
  if (!Number.isInteger(cents)) throw new Error(`amount must be whole cents, got ${cents}`);
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(cents);
  const whole = Math.floor(abs / 100).toLocaleString("en-IE");
  const frac = String(abs % 100).padStart(2, "0");
  return `${sign}${SYMBOLS[currency] ?? currency + " "}${whole}.${frac}`;
}

export function parseMoney(text: string): number {
  const cleaned = text.replace(/[€£$,\s]/g, "");
  if (!/^-?\d+(\.\d{1,2})?$/.test(cleaned)) throw new Error(`not an amount: "${text}"`);
  const [whole, frac = ""] = cleaned.replace("-", "").split(".");
  const cents = Number(whole) * 100 + Number(frac.padEnd(2, "0"));
  return cleaned.startsWith("-") ? -cents : cents;
}

export const lineTotal = (unitPrice: number, quantity: number): number => unitPrice * quantity;

export function percentOff(cents: number, percent: number): number {
  // Half-to-even, like the backend, so a quoted discount matches the charged one.
  const exact = (cents * percent) / 100;
  const floor = Math.floor(exact);
  const diff = exact - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}
