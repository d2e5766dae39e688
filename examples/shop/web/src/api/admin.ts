import type { SalesReport } from "../types";
import { api } from "./client";

export function fetchSalesReport(from: string, to: string): Promise<SalesReport> {
  if (to <= from) return Promise.reject(new Error("the report must end after it starts"));
  return api.request<SalesReport>("/admin/reports/sales", { query: { from, to } });
}

export interface LowStockItem {
  isbn: string;
  available: number;
}

export const fetchLowStock = (): Promise<LowStockItem[]> => api.request<LowStockItem[]>("/admin/stock/low");

export function receiveDelivery(isbn: string, quantity: number): Promise<{ isbn: string; available: number }> {
  return api.request(`/admin/stock/${isbn}/deliveries`, { method: "POST", body: { quantity } });
}

export function shipOrder(orderId: string, carrier: string, trackingNumber: string) {
  return api.request<{ orderId: string; status: string; tracking: string }>(`/admin/orders/${orderId}/shipment`, {
    method: "POST",
    body: { carrier, trackingNumber },
  });
}

export function refundOrderAsAdmin(orderId: string, reason: string, isbns: string[] = []) {
  return api.request<{ refunded: number }>(`/admin/orders/${orderId}/refund`, {
    method: "POST",
    body: { reason, isbns },
  });
}

export function createCampaign(name: string, startsAt: string, endsAt: string, percentOff: number, codes: number) {
  return api.request<{ campaignId: string; codes: number }>("/admin/campaigns", {
    method: "POST",
    body: { name, startsAt, endsAt, percentOff, codes, prefix: name.slice(0, 4).toUpperCase() },
  });
}
