import type { Book } from "../types";
import { api } from "./client";

export type SortKey = "title" | "price-asc" | "price-desc" | "newest";

export interface BookPage {
  items: Book[];
  page: number;
  pages: number;
}

export interface SearchResponse {
  hits: Book[];
  didYouMean: string | null;
}

export function fetchBooks(category?: string, sort: SortKey = "title", page = 1): Promise<BookPage> {
  return api.request<BookPage>("/api/books", { query: { category, sort, page } });
}

export function fetchBook(isbn: string): Promise<Book> {
  return api.request<Book>(`/api/books/${encodeURIComponent(isbn)}`);
}

// Search results for one query are cached for a minute: typing back and forth is common.
const searchCache = new Map<string, { at: number; result: SearchResponse }>();
const SEARCH_TTL_MS = 60_000;

export async function searchBooks(query: string, maxPriceEuros?: number): Promise<SearchResponse> {
  const q = query.trim();
  if (q.length < 2) return { hits: [], didYouMean: null };
  const key = `${q.toLowerCase()}|${maxPriceEuros ?? ""}`;
  const cached = searchCache.get(key);
  if (cached && Date.now() - cached.at < SEARCH_TTL_MS) return cached.result;
  const result = await api.request<SearchResponse>("/api/books/search", {
    query: { q, maxPrice: maxPriceEuros?.toFixed(2) },
  });
  searchCache.set(key, { at: Date.now(), result });
  return result;
}

export const clearSearchCache = (): void => searchCache.clear();
