// One fetch wrapper for every call: auth header, JSON, error messages, safe retries.

export class ApiError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ApiError";
  }

  get isRetryable(): boolean {
    return this.status === 502 || this.status === 503 || this.status === 504;
  }
}

export interface RequestOptions {
  method?: "GET" | "POST" | "PUT" | "DELETE";
  body?: unknown;
  query?: Record<string, string | number | undefined>;
  retries?: number;
}

const RETRYABLE_METHODS = new Set(["GET", "PUT", "DELETE"]);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class ApiClient {
  private token: string | null = null;

  constructor(
    private readonly baseUrl: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  setSession(token: string | null): void {
    this.token = token;
  }

  async request<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const method = options.method ?? "GET";
    // POSTs are not retried: a checkout sent twice must not become two orders.
    const retries = RETRYABLE_METHODS.has(method) ? options.retries ?? 2 : 0;
    let attempt = 0;
    for (;;) {
      try {
        return await this.once<T>(method, path, options);
      } catch (err) {
        const retryable = err instanceof ApiError ? err.isRetryable : err instanceof TypeError;
        if (!retryable || attempt >= retries) throw err;
        attempt += 1;
        await sleep(250 * 2 ** attempt);
      }
    }
  }

  private async once<T>(method: string, path: string, options: RequestOptions): Promise<T> {
    const url = new URL(path, this.baseUrl);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== "") url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { Accept: "application/json" };
    if (options.body !== undefined) headers["Content-Type"] = "application/json";
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    const response = await this.fetchImpl(url.toString(), {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const data = response.status === 204 ? null : await response.json().catch(() => null);
    if (!response.ok) {
      throw new ApiError(response.status, data?.error ?? "unknown", data?.message ?? `request failed (${response.status})`);
    }
    return data as T;
  }
}

export const api = new ApiClient(globalThis.location?.origin ?? "http://localhost:8000");
