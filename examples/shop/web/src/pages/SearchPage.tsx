import { useMemo, useState } from "react";
import { searchBooks, type SearchResponse } from "../api/catalog";
import { BookCard } from "../components/BookCard";
import { debounce } from "../utils/validation";

export function SearchPage({ initialQuery = "" }: { initialQuery?: string }) {
  const [query, setQuery] = useState(initialQuery);
  const [maxPrice, setMaxPrice] = useState<number | undefined>();
  const [result, setResult] = useState<SearchResponse | null>(null);
  const [searching, setSearching] = useState(false);

  const runSearch = useMemo(
    () =>
      debounce(async (q: string, price?: number) => {
        setSearching(true);
        try {
          setResult(await searchBooks(q, price));
        } finally {
          setSearching(false);
        }
      }, 250),
    [],
  );

  function onQueryChange(next: string) {
    setQuery(next);
    runSearch(next, maxPrice);
  }

  return (
    <main>
      <input
        type="search"
        placeholder="Search by title, author or ISBN"
        value={query}
        onChange={(e) => onQueryChange(e.target.value)}
        aria-busy={searching}
      />
      <label>
        Max price (€)
        <input
          type="number"
          min={0}
          value={maxPrice ?? ""}
          onChange={(e) => {
            const price = e.target.value ? Number(e.target.value) : undefined;
            setMaxPrice(price);
            runSearch(query, price);
          }}
        />
      </label>
      {result?.didYouMean && (
        <p>
          No results. Did you mean <button onClick={() => onQueryChange(result.didYouMean!)}>{result.didYouMean}</button>?
        </p>
      )}
      <section className="grid">
        {result?.hits.map((book) => (
          <BookCard key={book.isbn} book={book} compact />
        ))}
      </section>
    </main>
  );
}
