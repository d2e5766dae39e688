"""`lamina` command line: the same engine calls the editor uses, printed.

Every failure exits non-zero with a `LAMINA_…` code and a one-line remedy on stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from index.engine import Engine, SyncReport
from index.errors import BadInput, LaminaError
from lsp_server.cli_common import ProgressBar, cli_config, open_engine, open_fresh_engine, read_text_input
from lsp_server.status_text import status_lines

if TYPE_CHECKING:
    from index.retrieval import SearchResult

EXIT_ERROR = 2
MAX_TOP_K = 1000


class _Parser(argparse.ArgumentParser):
    """argparse whose refusals carry LAMINA_BAD_INPUT like every other failure (not a bare usage line)."""

    def error(self, message: str):  # type: ignore[override]
        takes_text = self.prog.endswith((" search", " prepare"))  # the commands whose argument is free text
        if takes_text and "unrecognized arguments: -" in message:
            # `lamina search --basetemp`: a query that looks like an option (a flag, a config key)
            raise BadInput(
                f"{self.prog}: {message}",
                "a query or task that starts with '-' goes last, after `--`: lamina search --workspace P -- --basetemp;"
                f" see: {self.prog} --help",
            )
        if takes_text and "unrecognized arguments: " in message:  # `lamina search refund order`
            raise BadInput(
                f"{self.prog}: {message}",
                f'a query or task of several words is one argument: quote it ({self.prog} "refund an order");'
                f" see: {self.prog} --help",
            )
        raise BadInput(f"{self.prog}: {message}", f"see: {self.prog} --help")


def _count(lo: int, hi: int) -> Callable[[str], int]:
    """An int in [lo, hi]; `--top-k -1` used to slice off the last result silently."""

    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"{n} is outside {lo}..{hi}")
        return n

    parse.__name__ = "count"
    return parse


def _print_json(obj: object) -> None:
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(obj), indent=2).decode() + "\n")


def _fmt_report(r: SyncReport) -> str:
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(r.skipped.items())) or "none"
    return (
        f"generation {r.generation}: {r.files_indexed} files, {r.chunks_total} chunks"
        f" (+{r.added} ~{r.modified} -{r.removed}; chunked {r.chunked_files}, reused {r.reused_files})"
        f" in {r.seconds:.2f}s; skipped: {skipped}"
    )


def cmd_status(args: argparse.Namespace) -> int:
    eng, _ = open_engine(args.workspace, args.index_dir)
    with eng:
        st = eng.status()
    if args.json:
        _print_json(st)
        return 0
    print("\n".join(status_lines(st)))
    return 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    with Engine(Path(args.workspace), args.index_dir, cli_config(args.workspace), recover=True) as eng:
        report = eng.rebuild(progress=ProgressBar())
        if eng.recovered:
            print(f"note: LAMINA_INDEX_CORRUPT: {eng.recovered}; the index was rebuilt from scratch", file=sys.stderr)
    if args.json:
        _print_json(report)
    else:
        print(_fmt_report(report))
    return 0


def _read_query(args: argparse.Namespace) -> str:
    return read_text_input(args.query, args.query_file, what="query", usage='lamina search "QUERY" or --query-file F')


def _print_explain(res: SearchResult) -> None:
    """What the query was read as, on stderr; one line per fact, file names and the query's own text
    with control characters escaped (a file named with an ESC sequence recoloured the terminal)."""

    def say(line: str) -> None:
        print(_shown(line), file=sys.stderr)

    a = res.analysis
    say(f"retrieval: {res.retrieval} (generation {res.generation}, pending embeddings {res.pending_embeddings})")
    say(
        f"lexical terms: {' '.join(res.query_terms)}"
        + (f" (+{res.dropped_terms} dropped)" if res.dropped_terms else "")
    )
    if res.dense_text:
        short = res.dense_text.replace("\n", " ")
        say(f"dense text: {short[:160]}{'...' if len(short) > 160 else ''}")
    if res.file_leg:
        say("files by summary: " + ", ".join(f"{p} ({sim:.3f})" for p, sim in res.file_leg[:5]))
    if a is not None:
        from index.query_analysis import signature_callees  # the query path's module; `status` never needs it

        for f in a.frames[:8]:
            say(f"frame: {f.raw_path}:{f.line} in {f.function} ({f.language})")
        for m in a.error_messages[:3]:
            say(f"error message: {m}")
        for name in signature_callees(a.error_messages[:3]):
            say(f"callee named by the error: {name}")
        for link in a.links[:8]:
            say(f"{link.kind()}: {link.label()}")
        for name in a.markup:
            say(f"markup directive: .. {name}::")
        for ref in a.changes:
            say(f"named change: {ref.written}" + (f" ({ref.repo})" if ref.repo else ""))
        if a.identifiers:
            say("identifiers: " + ", ".join(f"{i.text} ({i.kind})" for i in a.identifiers[:20]))
        for d in a.dropped:
            say(f"dropped: {d}")
    for n in res.notes:
        say(f"note: {n}")


def _shown(path: str) -> str:
    """A path on one line: a newline or other control character in a file name is escaped
    (`a\\nb.py`), as `ls` does; --json keeps the name as it is."""
    return path if path.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)


class SearchOutput(msgspec.Struct):
    """`lamina search --json --with-state`: the hits with the retrieval state beside them (the plain
    `--json` list stays the contract; its state goes to stderr notes only)."""

    query: str
    legs: str
    retrieval: str  # hybrid | hybrid_partial | lexical_degraded | lexical | dense
    generation: int | None
    pending_embeddings: int
    notes: list[str]
    hits: list[Any]
    files: list[Any] | None = None


def cmd_search(args: argparse.Namespace) -> int:
    query = _read_query(args)
    eng, note = open_fresh_engine(args.workspace, args.index_dir, wait=args.legs != "lexical" and not args.no_wait)
    with eng:
        res = eng.query(query, top_k=args.top_k, legs=args.legs, analyzer=not args.no_analyzer, group=args.group)
    if note:
        print(f"note: {note}", file=sys.stderr)
    if args.explain:
        _print_explain(res)
    elif res.retrieval not in ("hybrid", args.legs) or (res.retrieval == "dense" and res.pending_embeddings):
        print(
            f"note: retrieval is {res.retrieval}"
            + (f" ({res.pending_embeddings} chunks pending)" if res.pending_embeddings else ""),
            file=sys.stderr,
        )
        for n in res.notes:
            print(f"note: {n}", file=sys.stderr)
    else:
        for n in res.notes:
            # truncated: always say so; and with nothing found, every note (why nothing matched)
            if n.startswith(("the query has", "weak match", "history leg off")) or not res.hits:
                print(f"note: {n}", file=sys.stderr)
    if args.expand:
        from index.retrieval.spans import expand_to_block

        res.hits = [expand_to_block(Path(args.workspace), h) for h in res.hits]
    if args.json and args.with_state:  # what a script needs to tell a degraded answer from a full one
        _print_json(
            SearchOutput(
                query=query,
                legs=args.legs,
                retrieval=res.retrieval,
                generation=res.generation,
                pending_embeddings=res.pending_embeddings,
                notes=[*([note] if note else []), *res.notes],
                hits=res.hits,
                files=res.files if args.group == "file" else None,
            )
        )
        return 0
    if args.json:
        _print_json(res.files if args.group == "file" else res.hits)
        return 0
    if not res.hits:
        print("no results")
    if args.group == "file":
        for i, g in enumerate(res.files or [], 1):
            print(f"{i:>3}. {_shown(str(g['file']))}  {g['score']:.3f}  ({g['hits']} hits)")
            for h in g["spans"]:  # type: ignore[union-attr]
                sym = f" {h.symbol}" if h.symbol else ""
                print(f"       {h.start_line}-{h.end_line}{sym} [{h.kind}] {h.score:.3f}")
        return 0
    shown_blocks: dict[tuple[str, int, int], int] = {}  # a class's methods share one block: print it once
    for i, h in enumerate(res.hits, 1):
        sym = f" {h.symbol}" if h.symbol else ""
        print(f"{i:>3}. {_shown(h.file)}:{h.start_line}-{h.end_line}{sym} [{h.kind}] {h.score:.3f}")
        if h.reasons:
            print(f"     {'; '.join(h.reasons)}")
        if args.expand and h.text is not None:
            block = (h.file, h.block_start_line, h.block_end_line)
            if block in shown_blocks:
                print(f"     block {h.block_start_line}-{h.block_end_line}: under #{shown_blocks[block]} above")
                continue
            shown_blocks[block] = i
            print(f"     block {h.block_start_line}-{h.block_end_line}:")
            for line in h.text.splitlines():
                print(f"       | {line}")
    return 0


def _referenced_by(index_dir: Path) -> set[str]:
    """The shared vectors one index folder uses: its spans', its file summaries', its commits'."""
    from index.history.index import embedded_text_shas
    from index.store import Store
    from index.summary_memo import load_memo, summary_shas

    used: set[str] = set()
    st = Store(index_dir, readonly=True)
    if st.exists:
        try:
            used.update(sha for _, sha in st.member_embed_keys())
            # the file summaries, from the memo the index keeps (only files it does not know are read)
            shas, _, _ = summary_shas(st.member_documents(), load_memo(index_dir), st.document_symbols)
            used.update(shas.values())
        finally:
            st.close()
    used.update(embedded_text_shas(index_dir))
    return used


def cmd_cache_gc(args: argparse.Namespace) -> int:
    """Reclaim shared vectors that no index on this machine references any more."""
    from index.config import cache_root
    from index.embed_store import EmbeddingStore
    from index.store import DB_FILE

    referenced: set[str] | None = set()
    roots = cache_root() / "indexes"
    dirs = [p for p in roots.iterdir() if p.is_dir()] if roots.exists() else []
    if args.index_dir:
        extra = Path(args.index_dir)
        if not (extra / DB_FILE).is_file():  # a mistyped path protected nothing: its vectors would go
            raise BadInput(
                f"--index-dir {extra} holds no Lamina index (no index.sqlite), so it protects no vector",
                "give the folder of the index to keep (`lamina context status` prints it as 'index'), or leave the option out",
            )
        dirs.append(extra)
    unreadable: list[str] = []
    for d in dirs:
        try:
            used = _referenced_by(d)
        except (LaminaError, sqlite3.DatabaseError, OSError, UnicodeDecodeError, msgspec.DecodeError) as exc:
            # Which vectors a damaged index uses cannot be told: keep them all rather than refuse
            # the whole collection (one broken folder stopped it with a rebuild nobody could aim).
            unreadable.append(d.name)
            why = exc.message if isinstance(exc, LaminaError) else f"{type(exc).__name__}: {exc}"
            print(
                f"warning: index {d} cannot be read ({why}); no unreferenced vector is deleted this time"
                " (rebuild that index from its workspace, or remove the folder if the workspace is gone)",
                file=sys.stderr,
            )
            continue
        if referenced is not None:
            referenced.update(used)
    if unreadable:
        referenced = None  # only the size cap applies this time
    es = EmbeddingStore()
    rep = es.gc(referenced)
    es.close()
    if args.json:
        _print_json(rep)
    else:
        print(
            f"embedding store: {rep.count_before} -> {rep.count_after} vectors"
            f" ({rep.deleted_unreferenced} unreferenced, {rep.deleted_lru} over the size cap);"
            f" {rep.bytes_before} -> {rep.bytes_after} bytes; {len(dirs)} indexes scanned"
        )
    return 0


class WorkflowRow(msgspec.Struct):
    """One workflow as `lamina workflows --json` lists it."""

    id: str
    title: str
    aliases: list[str]
    status: str
    file: str
    line: int
    local: bool = False  # from a graph file the repository does not track (LAMINA_LOCAL_WORKFLOWS=1)


def cmd_workflows(args: argparse.Namespace) -> int:
    """The product graph's workflows: what `--workflow ID` and selection can name."""
    from index.config import Config
    from index.graph import graph_invalid, load_graph

    ws = Path(args.workspace)  # checked by _check_args
    wdir = Config().workflows_dir
    graph, problems = load_graph(ws, wdir)
    if graph is None:
        raise graph_invalid(problems, wdir)
    local = set(graph.local_files)
    rows = []
    for wf in graph.workflows.values():
        loc = graph.locations.get(wf.id)
        file, line = (loc.file, loc.line) if loc is not None else ("", 0)
        rows.append(
            WorkflowRow(
                id=wf.id,
                title=wf.title,
                aliases=list(wf.aliases),
                status=wf.status,
                file=file,
                line=line,
                local=file in local,
            )
        )
    for p in problems:
        print(f"warning: {p.file}:{p.line}: {p.reason}", file=sys.stderr)
    if args.json:
        _print_json(rows)
        return 0
    if not rows:
        print(f"no workflows under {wdir} (see docs/workflows.md)")
    for r in rows:
        aliases = f" (aliases: {', '.join(r.aliases)})" if r.aliases else ""
        flags = (" [inactive]" if r.status != "active" else "") + (" [local override]" if r.local else "")
        print(f"{r.id}{flags}  {r.title}{aliases}  {r.file}:{r.line}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from lsp_server.factory import serve

    # a command-line path is the shell's (its working directory); only the editor's setting is the folder's
    serve(index_dir=os.path.abspath(os.path.expanduser(args.index_dir)) if args.index_dir else None)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from lsp_server.mcp.server import serve

    serve(args.workspace, index_dir=args.index_dir, embed_threads=args.embed_threads)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="lamina", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--workspace", default=".", help="workspace folder (default: .)")
        sp.add_argument(
            "--index-dir",
            default=os.environ.get("LAMINA_INDEX_DIR"),
            help="index folder (default: per-worktree under the user cache; env LAMINA_INDEX_DIR)",
        )
        sp.add_argument("--json", action="store_true", help="machine-readable output")

    ctx = sub.add_parser("context", help="index state and maintenance")
    csub = ctx.add_subparsers(dest="context_command", required=True)
    st = csub.add_parser("status", help="active generation, freshness, counts, skips, failures")
    common(st)
    st.set_defaults(func=cmd_status)
    rb = csub.add_parser("rebuild", help="invalidate and rebuild the index synchronously")
    common(rb)
    rb.set_defaults(func=cmd_rebuild)

    se = sub.add_parser("search", help="ranked source spans for a query")
    se.add_argument("query", nargs="?")
    common(se)
    se.add_argument("--query-file", help="read the query from a file (long bug reports)")
    se.add_argument("--top-k", type=_count(1, MAX_TOP_K), default=10, help=f"results (1..{MAX_TOP_K})")
    se.add_argument("--legs", choices=["lexical", "dense", "hybrid"], default="hybrid")
    se.add_argument("--group", choices=["file"], help="rank files, each with its best spans")
    se.add_argument("--no-wait", action="store_true", help="do not wait for pending embeddings")
    se.add_argument("--explain", action="store_true", help="print what was extracted from the query")
    se.add_argument("--no-analyzer", action="store_true", help="treat the query as plain text")
    se.add_argument("--expand", action="store_true", help="include each hit's enclosing block (small-to-big)")
    se.add_argument(
        "--with-state",
        action="store_true",
        help="with --json: an object with the retrieval state, generation, pending embeddings and notes beside the hits",
    )
    se.set_defaults(func=cmd_search)

    work = sub.add_parser("work", help="workflow selection and the packet")
    worksub = work.add_subparsers(dest="work_command", required=True)
    from lsp_server.prepare import add_prepare_parser

    add_prepare_parser(worksub, common)
    from lsp_server.verify import add_verify_parser

    add_verify_parser(worksub)

    wf = sub.add_parser(
        "workflows", help="list the product graph's workflows (ids, titles, aliases, status, file:line)"
    )
    common(wf)
    wf.set_defaults(func=cmd_workflows)

    serve = sub.add_parser("serve", help="run the language server over stdio")
    serve.add_argument("--index-dir", default=os.environ.get("LAMINA_INDEX_DIR"))
    serve.set_defaults(func=cmd_serve)

    mcp = sub.add_parser("mcp", help="the MCP server for coding agents, over stdio (docs/agents.md)")
    mcp.add_argument("--workspace", default=".", help="workspace folder (default: .)")
    mcp.add_argument("--index-dir", default=os.environ.get("LAMINA_INDEX_DIR"))
    mcp.add_argument(
        "--embed-threads",
        type=int,
        default=1,
        help="model threads (default 1: background embedding leaves the other cores to the agent)",
    )
    mcp.set_defaults(func=cmd_mcp)

    cache = sub.add_parser("cache", help="the shared embedding store")
    cachesub = cache.add_subparsers(dest="cache_command", required=True)
    gc = cachesub.add_parser("gc", help="reclaim vectors no index references")
    gc.add_argument("--index-dir", default=None, help="also count this index as a reference")
    gc.add_argument("--json", action="store_true")
    gc.set_defaults(func=cmd_cache_gc)
    return p


def _check_args(args: argparse.Namespace) -> None:
    """Values argparse cannot range-check where they are declared (the prepare parser)."""
    budget = getattr(args, "budget", None)
    if budget is not None and not 1 <= budget <= 10_000_000:
        raise BadInput(f"--budget {budget} is outside 1..10000000", "pass a positive token budget")
    if getattr(args, "with_state", False) and not args.json:
        raise BadInput("--with-state shapes the --json output", "add --json (or leave --with-state out)")
    if getattr(args, "workspace", None) is not None:
        from index.config import workspace_dir

        args.workspace = str(workspace_dir(args.workspace))


class Terminated(KeyboardInterrupt):
    """SIGTERM (a `timeout`, `docker stop`, a CI runner cancelling a job), raised where Ctrl-C's
    KeyboardInterrupt is, so it unwinds the same way: locks released, the index left at its last
    complete generation, one line said. The default action ended the process silently."""


def _raise_terminated(signum: int, frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process at once
    raise Terminated("stopped by SIGTERM")


SERVERS = ("serve", "mcp")  # long-running: SIGTERM keeps its default action (end at once, quietly)


def _keep_signals() -> None:
    """Nothing to put back: no handler was installed."""


def _stop_on_sigterm() -> Callable[[], None]:
    """Make SIGTERM stop a one-shot command like Ctrl-C; returns what puts the old handler back."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # main() called off the main thread (an embedding host): leave signals alone
        return _keep_signals

    def restore() -> None:
        signal.signal(signal.SIGTERM, old)

    return restore


def _interrupted(exc: KeyboardInterrupt) -> int:
    """One line for a stopped command, and the shell's status for the signal: 128 + its number."""
    by, signum = ("SIGTERM", signal.SIGTERM) if isinstance(exc, Terminated) else ("Ctrl-C, SIGINT", signal.SIGINT)
    print(
        f"LAMINA_INTERRUPTED: stopped ({by}); the index keeps its last complete generation"
        " (run the command again to finish)",
        file=sys.stderr,
    )
    return 128 + int(signum)


def main(argv: Sequence[str] | None = None) -> int:
    args_for_errors = None
    restore = _keep_signals
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # refused by the command's own parser, so the fix names `lamina search --help`, not `lamina --help`
            words = (getattr(args, k, None) for k in ("command", "context_command", "work_command", "cache_command"))
            _Parser(prog=" ".join(["lamina", *(w for w in words if w)])).error(
                f"unrecognized arguments: {' '.join(extra)}"
            )
        args_for_errors = args
        if args.command not in SERVERS:
            restore = _stop_on_sigterm()
        _check_args(args)
        return int(args.func(args) or 0)
    except LaminaError as exc:
        print(f"{exc.code}: {exc.message}", file=sys.stderr)
        if exc.remedy:
            print(f"  fix: {exc.remedy}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        return _interrupted(exc)
    except BrokenPipeError:  # `lamina search ... | head`: the reader left, nothing is wrong
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        except OSError:
            pass
        return 0
    except Exception as exc:  # the last line of defence: a code and a message, never a traceback
        from index.engine import storage_error

        err = storage_error(exc, None, Path(getattr(args_for_errors, "index_dir", None) or "the index folder"))
        if err is not None:
            print(f"{err.code}: {err.message}", file=sys.stderr)
            print(f"  fix: {err.remedy}", file=sys.stderr)
            return EXIT_ERROR
        print(f"LAMINA_INTERNAL: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(
            "  fix: this is a bug in Lamina; run again with LAMINA_DEBUG=1 for the traceback and report it",
            file=sys.stderr,
        )
        if os.environ.get("LAMINA_DEBUG") == "1":
            raise
        return EXIT_ERROR
    finally:
        restore()


if __name__ == "__main__":
    sys.exit(main())
