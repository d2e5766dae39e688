"""Long spans, several vectors: where a span's extra embedding windows start and end.

The model reads a span's first 128 tokens (path words, symbol, then the body): a long
function's later half is invisible to the dense leg. Each further window repeats the span's
header (so it still says which file and symbol it is) and the next slice of the body, the
slices overlapping by a few tokens so no phrase is cut in two everywhere; at query time a
span scores its best window (max-pooling, index.dense). Pure arithmetic over token offsets,
so the layout is testable without a model.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

# Below this many body tokens per window a header (a long path and a qualified symbol) leaves too
# little room for the body to say anything of its own: such spans keep their one vector.
MIN_BODY_TOKENS = 32


class WindowScheme(msgspec.Struct, frozen=True, kw_only=True):
    """How long spans are windowed. Part of the key of every stored window listing.

    - max_extra: windows after the first (the span's own vector); 0 switches windows off. 4 covers
      ~500 body tokens, more than a chunk holds (chunk_max_tokens 384 code tokens, ~1.3 model
      tokens each) for all but the densest code.
    - overlap: body tokens each window repeats from the one before it.
    - code_only: only spans of code files (index.file_summary.CODE_LANGUAGES) get windows. Long prose
      (docs sections, translation catalogues, templates) is more of the same in every window: on the
      dev set its windows lifted such files past the code a report was about (sphinx F@5 -7).
    """

    max_extra: int = 4
    overlap: int = 16
    code_only: bool = True

    @property
    def enabled(self) -> bool:
        return self.max_extra > 0

    @property
    def tag(self) -> str:
        return f"w{self.overlap}x{self.max_extra}{'c' if self.code_only else ''}"


def window_ranges(
    offsets: Sequence[tuple[int, int]], budget: int, overlap: int, max_extra: int
) -> list[tuple[int, int]]:
    """Character ranges of the body for windows 1.. (window 0 is the span's own vector).

    `offsets` are the body's model tokens as (start, end) characters; `budget` is how many body
    tokens one window holds beside the header. Window w starts at token w * (budget - overlap),
    as window 0 starts at 0; windows stop once the body is covered or at `max_extra`.
    """
    n = len(offsets)
    if max_extra <= 0 or budget < MIN_BODY_TOKENS or n <= budget:
        return []
    stride = budget - min(max(overlap, 0), budget // 2)
    out: list[tuple[int, int]] = []
    start = stride
    while len(out) < max_extra and start < n:
        end = min(n, start + budget)
        out.append((offsets[start][0], offsets[end - 1][1]))
        if end >= n:
            break
        start += stride
    return out
