"""`python -m lsp_server [--index-dir D]`: the language server over stdio, as `lamina serve`."""

from __future__ import annotations

import sys

from lsp_server.cli import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
