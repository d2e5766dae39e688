"""Automatic screening of review text before it is published."""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

BLOCKED_WORDS = frozenset({"scam", "idiot", "garbage"})
URL_PATTERN = re.compile(r"https?://|www\.", re.IGNORECASE)
SPOILER_MARKERS = ("spoiler", "the ending is", "dies at the end")


class Verdict(str, Enum):
    PUBLISH = "publish"
    HOLD = "hold"        # a human moderator looks at it
    REJECT = "reject"


@dataclass(frozen=True)
class Screening:
    verdict: Verdict
    reasons: tuple[str, ...]


def screen_review_text(title: str, body: str) -> Screening:
    """Reject links (review spam), hold insults and spoilers for a moderator."""
    text = f"{title}\n{body}"
    reasons: list[str] = []
    if URL_PATTERN.search(text):
        return Screening(Verdict.REJECT, ("links are not allowed in reviews",))
    words = set(re.findall(r"[a-z']+", text.lower()))
    if words & BLOCKED_WORDS:
        reasons.append("contains language a moderator should check")
    if any(marker in text.lower() for marker in SPOILER_MARKERS):
        reasons.append("may contain spoilers")
    letters = [c for c in body if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) / len(letters) > 0.6:
        reasons.append("mostly capital letters")
    return Screening(Verdict.HOLD if reasons else Verdict.PUBLISH, tuple(reasons))
