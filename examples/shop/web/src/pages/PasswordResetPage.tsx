import { useState } from "react";
import { confirmPasswordReset, requestPasswordReset } from "../api/account";
import { ApiError } from "../api/client";
import { validateEmail, validatePassword } from "../utils/validation";

// Two steps on one page: without ?token= it asks for an email, with one it sets the new password.
export function PasswordResetPage({ token }: { token?: string }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [message, setMessage] = useState<string | null>(null);
  const [done, setDone] = useState(false);

  async function onRequest(event: { preventDefault(): void }) {
    event.preventDefault();
    const problem = validateEmail(email);
    if (problem) return setMessage(problem);
    try {
      setMessage(await requestPasswordReset(email));
      setDone(true);
    } catch {
      setMessage("could not send the email right now; please try again in a minute");
    }
  }

  async function onReset(event: { preventDefault(): void }) {
    event.preventDefault();
    if (password !== confirm) return setMessage("the two passwords do not match");
    const problem = validatePassword(password);
    if (problem) return setMessage(problem);
    try {
      setMessage((await confirmPasswordReset(token!, password)).message);
      setDone(true);
    } catch (err) {
      // expired or used links get a way forward, not a dead end
      setMessage(err instanceof ApiError ? `${err.message}.` : "something went wrong");
    }
  }

  if (!token) {
    return (
      <form onSubmit={onRequest}>
        <h1>Forgot your password?</h1>
        {message && <p role="status">{message}</p>}
        {!done && <input type="email" value={email} onChange={(e) => setEmail(e.target.value)} />}
        {!done && <button type="submit">Email me a reset link</button>}
      </form>
    );
  }
  return (
    <form onSubmit={onReset}>
      <h1>Choose a new password</h1>
      {message && <p role="status">{message}</p>}
      {done ? (
        <a href="/login">Log in</a>
      ) : (
        <>
          <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} />
          <input type="password" value={confirm} onChange={(e) => setConfirm(e.target.value)} />
          <button type="submit">Set password</button>
          <a href="/account/forgot">Request a new link</a>
        </>
      )}
    </form>
  );
}
