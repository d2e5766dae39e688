"""Whole-phrase matching shared by alias validation and workflow selection.

A phrase matches a text when its words appear contiguously in the text's
words. Words are case-folded runs of letters and digits of any script (NFKC first, so
`Rückgabe`, `退款` and full-width `ＲＥＦＵＮＤ` are words, not the pieces an ASCII-only
pattern left: an alias in another language had "no content words"), so `place-order`,
`place_order`, `Place Order` and `place order` are the same phrase, and
`refund:` contains the word `refund` but `refunding` does not. English
function words and one-letter words are skipped on both sides, so the title
`Submit the order` is found in "can't submit my order". A trailing plural `s`
is folded on both sides (`carts` ~ `cart`), never `ss`.
"""

from __future__ import annotations

import re
import unicodedata

from index.tokens import STOPWORDS

_WORD = re.compile(r"[^\W_]+")


def _fold(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def phrase_words(text: str) -> tuple[str, ...]:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return tuple(_fold(w) for w in _WORD.findall(folded) if len(w) > 1 and w not in STOPWORDS)


def find_phrase(words: tuple[str, ...], phrase: tuple[str, ...]) -> list[tuple[int, int]]:
    """Every [start, end) span of `words` equal to `phrase` (empty phrase: none)."""
    n = len(phrase)
    if n == 0 or n > len(words):
        return []
    return [(i, i + n) for i in range(len(words) - n + 1) if words[i : i + n] == phrase]
