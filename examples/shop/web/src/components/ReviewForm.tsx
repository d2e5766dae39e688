import { useState } from "react";
import { postReview, reviewProblems, reviewStatusMessage, type ReviewDraft } from "../api/reviews";

export function ReviewForm({ isbn, onPosted }: { isbn: string; onPosted: () => void }) {
  const [draft, setDraft] = useState<ReviewDraft>({ rating: 0, title: "", body: "" });
  const [message, setMessage] = useState<string | null>(null);
  const [submitting, setSubmitting] = useState(false);
  const problems = reviewProblems(draft);

  async function onSubmit(event: { preventDefault(): void }) {
    event.preventDefault();
    if (problems.length > 0) {
      setMessage(problems.join("; "));
      return;
    }
    setSubmitting(true);
    try {
      const review = await postReview(isbn, draft);
      setMessage(reviewStatusMessage(review));
      setDraft({ rating: 0, title: "", body: "" });
      onPosted();
    } catch (err) {
      setMessage((err as Error).message);
    } finally {
      setSubmitting(false);
    }
  }

  return (
    <form className="review-form" onSubmit={onSubmit}>
      <fieldset>
        <legend>Your rating</legend>
        {[1, 2, 3, 4, 5].map((star) => (
          <button
            type="button"
            key={star}
            aria-pressed={draft.rating >= star}
            onClick={() => setDraft({ ...draft, rating: star })}
          >
            ★
          </button>
        ))}
      </fieldset>
      <input placeholder="Title" value={draft.title} onChange={(e) => setDraft({ ...draft, title: e.target.value })} />
      <textarea
        placeholder="What did you think? (no spoilers, please)"
        value={draft.body}
        onChange={(e) => setDraft({ ...draft, body: e.target.value })}
      />
      <small>{draft.body.trim().length} characters</small>
      {message && <p role="status">{message}</p>}
      <button type="submit" disabled={submitting}>
        Post review
      </button>
    </form>
  );
}
