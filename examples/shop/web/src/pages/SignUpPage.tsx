import { useState } from "react";
import { logIn, signUp } from "../api/account";
import { ApiError } from "../api/client";
import { sessionStore } from "../store/sessionStore";
import { validateEmail, validatePassword } from "../utils/validation";

export function SignUpPage({ mode = "sign-up" }: { mode?: "sign-up" | "log-in" }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);

  const clientError = (): string | null =>
    validateEmail(email) ??
    (mode === "sign-up" ? validatePassword(password, email) ?? (name.trim() ? null : "please tell us your name") : null);

  async function onSubmit(event: { preventDefault(): void }) {
    event.preventDefault();
    const problem = clientError();
    if (problem) return setError(problem);
    try {
      const session = mode === "sign-up" ? await signUp(email, name, password) : await logIn(email, password);
      sessionStore.dispatch({ type: "session/started", accountId: session.accountId, token: session.session });
      const next = new URLSearchParams(globalThis.location?.search).get("next");
      globalThis.location?.assign(next?.startsWith("/") ? next : "/account");
    } catch (err) {
      setError(err instanceof ApiError ? err.message : "could not reach the shop, please try again");
    }
  }

  return (
    <form onSubmit={onSubmit}>
      <h1>{mode === "sign-up" ? "Create your Inkwell account" : "Log in"}</h1>
      {error && <p role="alert">{error}</p>}
      <input type="email" placeholder="Email" value={email} onChange={(e) => setEmail(e.target.value)} />
      {mode === "sign-up" && <input placeholder="Your name" value={name} onChange={(e) => setName(e.target.value)} />}
      <input type="password" placeholder="Password" value={password} onChange={(e) => setPassword(e.target.value)} />
      <button type="submit">{mode === "sign-up" ? "Create account" : "Log in"}</button>
      {mode === "log-in" && <a href="/account/forgot">Forgot your password?</a>}
    </form>
  );
}
