import { useEffect, useState } from "react";
import { fetchBooks, type BookPage, type SortKey } from "../api/catalog";
import { BookCard } from "../components/BookCard";
import { Pagination } from "../components/Pagination";

const SORT_LABELS: Record<SortKey, string> = {
  title: "Title A–Z",
  "price-asc": "Price: low to high",
  "price-desc": "Price: high to low",
  newest: "Newest first",
};

export function CatalogPage({ category }: { category?: string }) {
  const [sort, setSort] = useState<SortKey>("title");
  const [page, setPage] = useState(1);
  const [data, setData] = useState<BookPage | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let cancelled = false; // a slow response for an old page must not overwrite a newer one
    setError(null);
    fetchBooks(category, sort, page)
      .then((result) => !cancelled && setData(result))
      .catch((err: Error) => !cancelled && setError(err.message));
    return () => {
      cancelled = true;
    };
  }, [category, sort, page]);

  return (
    <main>
      <header className="catalog-header">
        <h1>{category ? category.replace(/-/g, " ") : "All books"}</h1>
        <select value={sort} onChange={(e) => { setSort(e.target.value as SortKey); setPage(1); }}>
          {Object.entries(SORT_LABELS).map(([key, label]) => (
            <option key={key} value={key}>
              {label}
            </option>
          ))}
        </select>
      </header>
      {error && <p role="alert">Could not load books: {error}</p>}
      {!data && !error && <p>Loading…</p>}
      {data && (
        <>
          <section className="grid">
            {data.items.map((book) => (
              <BookCard key={book.isbn} book={book} />
            ))}
          </section>
          <Pagination page={data.page} pages={data.pages} onChange={setPage} />
        </>
      )}
    </main>
  );
}
