"""Code-aware tokens, identical on the index and the query side.

`getUserName`, `get_user_name` and `get-user-name` all yield the parts
`get user name` plus one whole-identifier token `getusername`, so a query
for the parts or for the identifier in any spelling matches. Identifiers are
never stemmed; only English function words are dropped. Words are letters and
digits of any script (`größe`, `Rückerstattung`, `退款`): an ASCII-only pattern
cut them into fragments that matched other words' fragments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

# A word: letters, digits, underscores (any script). Kebab-case runs are joined later. The ASCII
# pattern finds the same words in ASCII text, ~15 % faster: most files are ASCII (O(1) to ask).
_WORD_ASCII = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z][A-Za-z0-9_]*)*")
_WORD_ANY = re.compile(r"\w+(?:-[^\W\d_]\w*)*")


def words(text: str) -> list[str]:
    """The words of `text`, in order."""
    return (_WORD_ASCII if text.isascii() else _WORD_ANY).findall(text)


_SEP = re.compile(r"[_\-]+")
# camelCase / PascalCase / acronym / digit boundaries.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    """a an the of to in on at by for with is are was were be been being it its this that
    these those and or but as from i we you he she they me my our your their them us have has
    had having do does did doing will would should can could may might must shall not no nor so
    if then than there here what which who whom when where how why also just very too into
    onto about above below over under again further once only own same such both each few
    other some most more am""".split()
)

MAX_TOKEN_LEN = 64


def split_identifier(word: str) -> list[str]:
    """Lower-cased parts of one identifier (`HTTPServer_v2` -> http server v 2)."""
    parts: list[str] = []
    for piece in _SEP.split(word):
        if piece:
            found = _PART.findall(piece) if piece.isascii() else _unicode_parts(piece)
            parts.extend(p.lower() for p in found)
    return parts


def _kind(c: str) -> str:
    """U upper, L other letter (lower, or a script without case), D digit."""
    return "D" if c.isdigit() else "U" if c.isupper() else "L"


def _unicode_parts(piece: str) -> list[str]:
    """`_PART`'s split for a piece with non-ASCII letters, by str's own character classes (re has
    no \\p{Lu}): camelCase, an acronym before a capitalised word, letters against digits."""
    out: list[str] = []
    start = 0
    for i in range(1, len(piece)):
        a, b = _kind(piece[i - 1]), _kind(piece[i])
        acronym_end = a == "U" and b == "U" and i + 1 < len(piece) and _kind(piece[i + 1]) == "L"
        if (a == "L" and b == "U") or (a == "D") != (b == "D") or acronym_end:
            out.append(piece[start:i])
            start = i
    out.append(piece[start:])
    return out


def whole_form(word: str) -> str:
    """Spelling-independent form of an identifier: lower case, no separators."""
    return _SEP.sub("", word).lower()


@lru_cache(maxsize=262144)
def word_tokens(word: str) -> tuple[str, ...]:
    """Tokens of one word; memoized because code repeats its words endlessly."""
    if len(word) > MAX_TOKEN_LEN * 2:
        return ()
    parts = split_identifier(word)
    whole = whole_form(word)
    if len(parts) > 1:
        out = [p for p in parts if len(p) > 1 and p not in STOPWORDS]
        if whole and len(whole) <= MAX_TOKEN_LEN:
            out.append(whole)
        return tuple(out)
    if whole and len(whole) > 1 and whole not in STOPWORDS and len(whole) <= MAX_TOKEN_LEN:
        return (whole,)
    return ()


def iter_tokens(text: str) -> Iterator[str]:
    for word in words(text):
        yield from word_tokens(word)


def tokenize(text: str) -> list[str]:
    """All tokens of `text`, in order, with repeats (for term frequencies)."""
    out: list[str] = []
    for word in words(text):
        out.extend(word_tokens(word))
    return out


def path_tokens(path: str) -> list[str]:
    """Tokens of a workspace path: directories, stem and extension-free parts."""
    return tokenize(path.replace("/", " ").replace(".", " "))
