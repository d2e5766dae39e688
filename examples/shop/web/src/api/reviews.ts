import { ApiError, api } from "./client";

export interface ReviewDraft {
  rating: number;
  title: string;
  body: string;
}

export interface PostedReview {
  id: string;
  status: "publish" | "hold" | "reject";
  verifiedBuyer: boolean;
}

export const MIN_REVIEW_LENGTH = 20;
export const MAX_REVIEW_LENGTH = 5000;

export function reviewProblems(draft: ReviewDraft): string[] {
  const problems: string[] = [];
  if (!Number.isInteger(draft.rating) || draft.rating < 1 || draft.rating > 5) {
    problems.push("choose between 1 and 5 stars");
  }
  const length = draft.body.trim().length;
  if (length < MIN_REVIEW_LENGTH) problems.push(`write at least ${MIN_REVIEW_LENGTH} characters`);
  if (length > MAX_REVIEW_LENGTH) problems.push(`keep it under ${MAX_REVIEW_LENGTH} characters`);
  if (/https?:\/\//i.test(draft.body)) problems.push("links are not allowed in reviews");
  return problems;
}

export async function postReview(isbn: string, draft: ReviewDraft): Promise<PostedReview> {
  const problems = reviewProblems(draft);
  if (problems.length > 0) throw new Error(problems.join("; "));
  try {
    return await api.request<PostedReview>(`/api/books/${isbn}/reviews`, { method: "POST", body: draft });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) throw new Error("log in to review this book");
    throw err;
  }
}

export function reviewStatusMessage(review: PostedReview): string {
  if (review.status === "hold") return "Thanks! A moderator will check your review before it appears.";
  return review.verifiedBuyer ? "Thanks! Your review is live with a verified-buyer badge." : "Thanks! Your review is live.";
}
