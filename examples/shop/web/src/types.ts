// Shapes of the JSON the backend returns (see docs/api.md). Amounts are integer cents.

export type Cents = number;

export interface Book {
  isbn: string;
  title: string;
  authors: string[];
  price: Cents;
  currency: string;
  format: "hardcover" | "paperback" | "ebook" | "audiobook";
  description?: string;
  available?: number;
  rating?: number | null;
}

export interface CartLine {
  isbn: string;
  title: string;
  unitPrice: Cents;
  quantity: number;
}

export interface Cart {
  id: string;
  status: "open" | "checked_out" | "abandoned";
  subtotal: Cents;
  lines: CartLine[];
}

export interface Address {
  name: string;
  line1: string;
  city: string;
  postcode: string;
  country: string;
}

export interface PlacedOrder {
  orderId: string;
  status: string;
  total: Cents;
}

export interface OrderSummary {
  id: string;
  status: string;
  total: Cents;
  placedAt: string;
}

export interface Session {
  accountId: string;
  session: string;
}

export interface SalesReport {
  orders: number;
  gross: Cents;
  refunds: Cents;
  net: Cents;
  topSellers: [string, number][];
}
