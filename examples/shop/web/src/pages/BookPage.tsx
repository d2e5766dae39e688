import { useCallback, useEffect, useState } from "react";
import { fetchBook } from "../api/catalog";
import { BookCard } from "../components/BookCard";
import { ReviewForm } from "../components/ReviewForm";
import { sessionStore } from "../store/sessionStore";
import type { Book } from "../types";

export function stockMessage(book: Book): string {
  if (book.format === "ebook" || book.format === "audiobook") return "Instant download";
  if (!book.available) return "Out of stock – we are reordering it";
  if (book.available <= 3) return `Only ${book.available} left`;
  return "In stock, ships in 1–2 working days";
}

export function BookPage({ isbn }: { isbn: string }) {
  const [book, setBook] = useState<Book | null>(null);
  const [error, setError] = useState<string | null>(null);
  const loggedIn = Boolean(sessionStore.getState().token);

  const load = useCallback(() => {
    fetchBook(isbn).then(setBook, (err: Error) => setError(err.message));
  }, [isbn]);

  useEffect(load, [load]);

  if (error) return <main><p role="alert">{error}</p></main>;
  if (!book) return <main><p>Loading…</p></main>;

  return (
    <main className="book-page">
      <BookCard book={book} />
      <p className="stock">{stockMessage(book)}</p>
      {book.description && <p className="description">{book.description}</p>}
      <section>
        <h2>Reviews {book.rating != null && <small>(average {book.rating.toFixed(1)} ★)</small>}</h2>
        {loggedIn ? (
          <ReviewForm isbn={book.isbn} onPosted={load} />
        ) : (
          <p>
            <a href={`/login?next=/books/${book.isbn}`}>Log in</a> to write a review.
          </p>
        )}
      </section>
    </main>
  );
}
