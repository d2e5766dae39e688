"""`python -m lsp_server [--index-dir D]`: the language server over stdio, as `lamina serve`."""

from __future__ import annotations

import sys

from lsp_server.cli import main

if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["serve"]:  # `python -m lsp_server serve`, as `lamina serve` is typed: the same
        args = args[1:]
    sys.exit(main(["serve", *args]))
