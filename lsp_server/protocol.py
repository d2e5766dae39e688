"""pygls' LSP protocol, with its `shutdown` safe while requests are still in flight.

pygls cancels the pending requests by iterating over the live `_request_futures`; a
cancelled pool future runs its done-callback at once, which pops it from that dict,
so any request still queued at `shutdown` made the answer an internal error
("dictionary changed size during iteration", pygls#606) and the following `exit`
a non-zero one. Here the pending requests are cancelled from a snapshot.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method


class LaminaProtocol(LanguageServerProtocol):
    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id  # this request's own future is answered, not cancelled
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current_id and not future.done():
                future.cancel()
        self._shutdown = True
        return None
