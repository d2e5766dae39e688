import { useState } from "react";
import { addToCart, createCart, rememberedCartId } from "../api/cart";
import { cartStore, lineFor } from "../store/cartStore";
import type { Book } from "../types";
import { formatMoney } from "../utils/money";

interface Props {
  book: Book;
  compact?: boolean;
}

export function BookCard({ book, compact = false }: Props) {
  const [busy, setBusy] = useState(false);
  const inCart = lineFor(cartStore.getState(), book.isbn)?.quantity ?? 0;
  const soldOut = book.format !== "ebook" && book.available === 0;

  async function onAdd() {
    setBusy(true);
    cartStore.dispatch({ type: "cart/requested", isbn: book.isbn });
    try {
      const cartId = rememberedCartId() ?? (await createCart()).id;
      cartStore.dispatch({ type: "cart/loaded", cart: await addToCart(cartId, book.isbn) });
    } catch (err) {
      cartStore.dispatch({ type: "cart/failed", isbn: book.isbn, message: (err as Error).message });
    } finally {
      setBusy(false);
    }
  }

  return (
    <article className={compact ? "book-card compact" : "book-card"}>
      <a href={`/books/${book.isbn}`}>
        <img src={`/covers/${book.isbn}.jpg`} alt={`Cover of ${book.title}`} loading="lazy" />
        <h3>{book.title}</h3>
      </a>
      <p className="authors">{book.authors.join(", ")}</p>
      {!compact && book.rating != null && <p className="rating">★ {book.rating.toFixed(1)}</p>}
      <p className="price">{formatMoney(book.price, book.currency)}</p>
      <button onClick={onAdd} disabled={busy || soldOut}>
        {soldOut ? "Sold out" : inCart > 0 ? `In cart (${inCart}) – add another` : "Add to cart"}
      </button>
    </article>
  );
}
