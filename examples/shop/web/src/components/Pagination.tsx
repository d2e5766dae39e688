interface Props {
  page: number;
  pages: number;
  onChange: (page: number) => void;
}

// Shows first, last, and two pages either side of the current one: 1 … 4 5 [6] 7 8 … 20
export function pageWindow(page: number, pages: number, radius = 2): (number | "gap")[] {
  const out: (number | "gap")[] = [];
  for (let p = 1; p <= pages; p++) {
    if (p === 1 || p === pages || Math.abs(p - page) <= radius) {
      out.push(p);
    } else if (out[out.length - 1] !== "gap") {
      out.push("gap");
    }
  }
  return out;
}

export function Pagination({ page, pages, onChange }: Props) {
  if (pages <= 1) return null;
  return (
    <nav className="pagination" aria-label="Pages">
      <button disabled={page === 1} onClick={() => onChange(page - 1)}>
        Previous
      </button>
      {pageWindow(page, pages).map((p, i) =>
        p === "gap" ? (
          <span key={`gap-${i}`}>…</span>
        ) : (
          <button key={p} aria-current={p === page ? "page" : undefined} onClick={() => onChange(p)}>
            {p}
          </button>
        ),
      )}
      <button disabled={page === pages} onClick={() => onChange(page + 1)}>
        Next
      </button>
    </nav>
  );
}
