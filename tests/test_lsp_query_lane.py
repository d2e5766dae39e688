"""Searches and packets run on a lane of their own: a burst of them never queues an editor's hover.

On pygls' one pool a hover sent behind 40 searches was answered after all of them (11 s median in
bench/request_burst.py). The property checked is an order, not a time: the hover is answered
before most of the searches sent ahead of it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from tests.lsp_session import Session, copy_shop, server_env

REFUNDS = "backend/inkwell/payments/refunds.py"


def test_a_hover_behind_a_burst_of_searches_is_answered_before_most_of_them(tmp_path: Path) -> None:
    ws = copy_shop(tmp_path / "shop")
    s = Session(ws, tmp_path / "index", server_env(tmp_path / "cache"))
    try:
        s.wait_generation()
        s.request("lamina/search", {"query": "refund an order", "legs": "hybrid"}, timeout=60)  # the model is loaded
        line0 = next(i for i, t in enumerate((ws / REFUNDS).read_text().splitlines()) if "def is_eligible" in t)
        answered: list[str] = []

        async def burst_then_hover() -> str | None:
            send = s.client.protocol.send_request_async

            async def search(i: int) -> None:
                await send("lamina/search", {"query": f"refund order {i} payment", "legs": "hybrid", "topK": 200})
                answered.append(f"search {i}")

            searches = [asyncio.ensure_future(search(i)) for i in range(40)]
            await asyncio.sleep(0)  # each task sends its search before the hover goes out
            hover = await s.client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=(ws / REFUNDS).as_uri()),
                    position=types.Position(line=line0, character=8),
                )
            )
            answered.append("hover")
            await asyncio.gather(*searches)
            return hover.contents.value if hover is not None else None  # type: ignore[union-attr]

        text = s.run(burst_then_hover(), 180)
        assert text and "is_eligible" in text
        assert answered.index("hover") < 20, answered  # on the shared pool: 41st, after all 40
        assert len(answered) == 41  # and every search was answered too
    finally:
        assert s.close() == 0
