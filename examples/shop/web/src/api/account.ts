import type { OrderSummary, Session } from "../types";
import { api } from "./client";

export function signUp(email: string, name: string, password: string): Promise<Session> {
  return api.request<Session>("/api/accounts", { method: "POST", body: { email, name, password } });
}

export function logIn(email: string, password: string): Promise<Session> {
  return api.request<Session>("/api/sessions", { method: "POST", body: { email, password } });
}

export const requestPasswordReset = async (email: string): Promise<string> => {
  const { message } = await api.request<{ message: string }>("/api/password-resets", {
    method: "POST",
    body: { email: email.trim() },
  });
  return message;
};

export const confirmPasswordReset = (token: string, password: string): Promise<{ message: string }> =>
  api.request("/api/password-resets/confirm", { method: "POST", body: { token, password } });

export function fetchMyOrders(): Promise<OrderSummary[]> {
  return api.request<OrderSummary[]>("/api/orders");
}

export function requestRefund(orderId: string, isbns: string[], reason: string): Promise<{ refunded: number; status: string }> {
  return api.request(`/api/orders/${orderId}/refund-requests`, { method: "POST", body: { isbns, reason } });
}
