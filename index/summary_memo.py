"""File summaries remembered by content, across generations and processes.

A file's summary (index.file_summary) is a function of its path and its document (content sha,
language, chunker version). Summarising every file reads every chunk's symbol and splits every
name: ~0.3 s on the stdlib's 730 files, which the first hybrid query of each new generation paid
(a server: after every edit) and every new process paid (a CLI search, a restart). The memo maps
path + document to the summary's sha, so only files whose document changed are summarised again,
and a small file in the index folder carries it to the next process. A row can never be stale:
its key names the content, and `SUMMARY_VERSION` names the recipe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import msgspec

from index.atomic_file import replace_file
from index.file_summary import CODE_LANGUAGES, SUMMARY_VERSION, summary_sha, summary_text

MEMO_FILE = "file-summaries.msgpack"

# path -> (doc_id, content sha, language, chunker version): Store.member_documents
Documents = Mapping[str, tuple[int, str, str, int]]
# (path, content sha, language, chunker version) -> summary sha
Key = tuple[str, str, str, int]
Memo = dict[Key, str]
SymbolReader = Callable[[Sequence[int]], Mapping[int, list[str]]]


class MemoFile(msgspec.Struct, frozen=True):
    """On disk: the recipe's version and one row per file (path, content sha, language, chunker
    version, summary sha)."""

    version: int
    rows: list[tuple[str, str, str, int, str]]


def _key(path: str, doc: tuple[int, str, str, int]) -> Key:
    return (path, doc[1], doc[2], doc[3])


def code_documents(docs: Documents) -> dict[str, tuple[int, str, str, int]]:
    """The members a summary is made for: code files (markdown and text have no symbol names)."""
    return {p: d for p, d in docs.items() if d[2] in CODE_LANGUAGES}


def summary_shas(docs: Documents, memo: Mapping[Key, str], symbols: SymbolReader) -> tuple[dict[str, str], Memo, int]:
    """(path -> summary sha for every code member, the memo for exactly these members, how many
    were summarised now). `symbols` reads the documents the memo does not know."""
    code = code_documents(docs)
    todo = [p for p, d in code.items() if _key(p, d) not in memo]
    fresh = {p: summary_sha(text) for p, text in summary_texts(code, todo, symbols).items()}
    shas = {p: fresh[p] if p in fresh else memo[_key(p, d)] for p, d in code.items()}
    return shas, {_key(p, d): shas[p] for p, d in code.items()}, len(todo)


def summary_texts(docs: Documents, paths: Sequence[str], symbols: SymbolReader) -> dict[str, str]:
    """path -> summary text of these code members (the texts the encoder needs; never memoised)."""
    code = code_documents(docs)
    wanted = [p for p in paths if p in code]
    read = symbols(sorted({code[p][0] for p in wanted})) if wanted else {}
    return {p: summary_text(p, read.get(code[p][0], [])) for p in wanted}


def load_memo(index_dir: Path) -> Memo:
    """The memo a process left in `index_dir`; empty when absent, unreadable or of another recipe."""
    try:
        data = msgspec.msgpack.decode((index_dir / MEMO_FILE).read_bytes(), type=MemoFile)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    if data.version != SUMMARY_VERSION:
        return {}
    return {(p, sha, lang, cv): s for p, sha, lang, cv, s in data.rows}


def save_memo(index_dir: Path, memo: Mapping[Key, str]) -> bool:
    """Replace the memo file atomically; False when the folder is not writable (the next process
    summarises again, nothing else changes)."""
    rows = [(p, sha, lang, cv, s) for (p, sha, lang, cv), s in sorted(memo.items())]
    try:
        blob = msgspec.msgpack.encode(MemoFile(SUMMARY_VERSION, rows))
    except UnicodeEncodeError:  # a path no UTF-8 spells (the sync skips those; never trust it here)
        return False
    try:
        replace_file(index_dir / MEMO_FILE, blob)
    except OSError:
        return False
    return True
