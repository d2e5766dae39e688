import type { Address } from "../types";

const EMAIL = /^[^@\s]+@[^@\s]+\.[a-z]{2,}$/i;
const UK_POSTCODE = /^[A-Z]{1,2}\d[A-Z\d]? ?\d[A-Z]{2}$/i;
export const SHIPPABLE = ["IE", "GB", "DE", "FR", "NL", "US", "CA", "AU"] as const;

export function validateEmail(email: string): string | null {
  return EMAIL.test(email.trim()) ? null : "enter a valid email address";
}

// Mirrors accounts/passwords.py so the form rejects what the server would reject.
export function validatePassword(password: string, email = ""): string | null {
  if (password.length < 10) return "password must be at least 10 characters";
  const local = email.split("@")[0]?.toLowerCase() ?? "";
  if (local.length >= 4 && password.toLowerCase().includes(local)) {
    return "password must not contain your email address";
  }
  if (new Set(password).size < 5) return "password uses too few different characters";
  return null;
}

export function validateAddress(address: Address): Record<string, string> {
  const problems: Record<string, string> = {};
  if (!address.name.trim()) problems.name = "recipient name is missing";
  if (!address.line1.trim()) problems.line1 = "street address is missing";
  if (!address.city.trim()) problems.city = "town or city is missing";
  if (!(SHIPPABLE as readonly string[]).includes(address.country)) {
    problems.country = `we do not ship to ${address.country || "that country"}`;
  }
  if (address.country === "GB" && !UK_POSTCODE.test(address.postcode.trim())) {
    problems.postcode = `${address.postcode} is not a UK postcode`;
  }
  return problems;
}

export function debounce<A extends unknown[]>(fn: (...args: A) => void, waitMs: number): (...args: A) => void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return (...args: A) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => fn(...args), waitMs);
  };
}
