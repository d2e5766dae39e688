import { api } from "../api/client";
import { createStore } from "./store";

export interface SessionState {
  accountId: string | null;
  token: string | null;
  isAdmin: boolean;
}

export type SessionAction =
  | { type: "session/started"; accountId: string; token: string }
  | { type: "session/ended" };

const SESSION_KEY = "inkwell.session";
const anonymous: SessionState = { accountId: null, token: null, isAdmin: false };

// The admin flag is read from the signed token only for showing menus; the server re-checks it.
export function decodeAdminFlag(token: string): boolean {
  try {
    const parts = atob(token.replace(/-/g, "+").replace(/_/g, "/")).split(":");
    return parts[1] === "1";
  } catch {
    return false;
  }
}

export function sessionReducer(state: SessionState, action: SessionAction): SessionState {
  switch (action.type) {
    case "session/started":
      return { accountId: action.accountId, token: action.token, isAdmin: decodeAdminFlag(action.token) };
    case "session/ended":
      return anonymous;
  }
}

function restore(): SessionState {
  const raw = globalThis.localStorage?.getItem(SESSION_KEY);
  if (!raw) return anonymous;
  try {
    const saved = JSON.parse(raw) as SessionState;
    return saved.token ? saved : anonymous;
  } catch {
    return anonymous;
  }
}

export const sessionStore = createStore(sessionReducer, restore());

sessionStore.subscribe((state) => {
  api.setSession(state.token);
  if (state.token) globalThis.localStorage?.setItem(SESSION_KEY, JSON.stringify(state));
  else globalThis.localStorage?.removeItem(SESSION_KEY);
});
