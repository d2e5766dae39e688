"""The history leg's engine side: keep the database in step with HEAD and answer queries.

Only commits reachable from the indexed commit-ish ever vote: a checkout of an old commit sees
none of the commits after it (at a benchmark's base commit, the fix is in the future). A plain
folder, a missing `git` or an unreadable database turns the leg off with a reason, never a
traceback: the other legs answer without it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from index.change_refs import PER_NUMBER, ChangeRef, NamedChange
from index.config import HISTORY_FORMAT
from index.history.config import HistoryConfig, bot_regex
from index.history.db import (
    DB_NAME,
    UNREAD,
    HistoryDB,
    HistoryFormatError,
    StoredCommit,
    kept_changes,
    stored_form,
)
from index.history.gitlog import (
    CommitRecord,
    FileChange,
    GitError,
    GitRepo,
    is_ancestor,
    merge_changes,
    named_sha,
    read_log,
    read_merges,
    remote_names,
    resolve,
    rev_list,
    shallow_commits,
    shallow_file,
    since_time,
    skip_reason,
    toplevel_prefix,
    tree_paths,
)
from index.history.symbols import TouchedSymbol, read_symbols, read_symbols_many
from index.history.votes import (
    CommitHit,
    FileVotes,
    RenameMap,
    SymbolVote,
    current_path,
    fuse_hits,
    moved_paths,
    rename_map,
    resolve_hits,
    size_weight,
    symbol_votes,
    votes,
)
from index.store import connect_readonly
from index.tokens import tokenize

if TYPE_CHECKING:
    import numpy as np

# Unreachable commits are kept (a branch switch back reuses them) until they outnumber this
# many times the bound; then they are swept.
SWEEP_FACTOR = 1


def commit_text(subject: str, body: str) -> str:
    """What a commit's vector embeds: its whole message (the model truncates a long body)."""
    return f"{subject}\n\n{body}".strip()


def embedded_text_shas(index_dir: Path) -> set[str]:
    """sha256 of every commit message the history database at `index_dir` holds a vector of: the
    shared embedding store's garbage collector keeps them (another worktree reuses them)."""
    import hashlib

    path = index_dir / DB_NAME
    if not path.exists():
        return set()
    try:
        conn = connect_readonly(path)
        try:
            rows = conn.execute(
                "SELECT c.subject, c.body FROM commits c JOIN commit_vectors v ON v.commit_id = c.id"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return set()
    return {hashlib.sha256(commit_text(str(s), str(b)).encode("utf-8")).hexdigest() for s, b in rows}


class SyncReport(msgspec.Struct, frozen=True):
    enabled: bool
    reason: str  # why the leg is off; "" when on
    mode: str  # off | unchanged | full | incremental | switch
    head: str
    added: int  # commits read from git and stored by this sync
    reachable: int  # commits the HEAD may query (skipped ones included)
    seconds: float
    shallow_file: str = ""  # where git marks a shallow clone: deepening it moves no HEAD, yet changes the history


class HistoryStatus(msgspec.Struct, frozen=True):
    enabled: bool
    reason: str
    head: str
    head_time: int
    reachable: int
    voting: int  # reachable commits that are neither bot nor mass changes
    stored: int
    merges: int = 0  # reachable merges (read for the numbers their messages name; they never vote)


class StoredBound(msgspec.Struct, frozen=True):
    """The bound a history database was read with (meta `bound`), what its readers report."""

    max_commits: int
    max_years: float


# What a read-only reader read from git keeps in memory (it cannot store it): at most this many
# commits' symbols before they are dropped and read again.
_READER_MEMORY = 4096


class HistoryIndex:
    """One workspace's history; `sync()` before `search()`; cheap to construct (no I/O).

    `readonly`: a reader's (`open_existing` and queries only): the database is opened `mode=ro`,
    so a read-only index folder (another user's, a read-only mount) or a full disk still serves
    the leg; what a query reads from git (symbols, a merge's files, a commit named beyond the
    bound) is kept in memory instead of stored.
    """

    def __init__(
        self,
        index_dir: Path,
        workspace: Path,
        cfg: HistoryConfig | None = None,
        git_dir: str = "",
        *,
        readonly: bool = False,
    ) -> None:
        self.cfg = cfg or HistoryConfig()
        self.readonly = readonly
        self.path = index_dir / DB_NAME
        self.repo = GitRepo(cwd=str(workspace), git_dir=git_dir)
        self._db: HistoryDB | None = None
        self._db_file: tuple[int, int] | None = None  # (device, inode) of the file `_db` has open
        self._reason = "not synced yet"
        self._prefix: str | None = None
        self._renames: tuple[str, RenameMap] | None = None
        self._moved: tuple[tuple[str, int], dict[str, str]] | None = None
        # HEAD -> its tree's paths; (head, hash of today's paths) -> those the tree lacks (`uncommitted`)
        self._tree: tuple[str, frozenset[str]] | None = None
        self._uncommitted: tuple[tuple[str, int], frozenset[str]] | None = None
        # (head, model, count, dense_commits) -> commit ids and their message vectors, for dense_search
        self._matrix: tuple[tuple[str, str, int, int], np.ndarray, np.ndarray] | None = None
        # (head, dense_commits, vote window start) the vectors outside the searched set were last dropped for
        self._dropped_for: tuple[str, int, int] | None = None
        # (head, hash prefix) -> id of the commit it names beyond the reading bound (None: none)
        self._older_ids: dict[tuple[str, str], int | None] = {}
        # A shallow clone's boundary commits, as the last sync found them (`shallow_commits`)
        self._shallow: frozenset[str] = frozenset()
        # A read-only reader's memory of what it read from git (`readonly`): sha -> encoded symbols;
        # commit id -> files (a merge's, a remembered commit's); commits named beyond the bound, under
        # negative ids (never a stored one's)
        self._mem_symbols: dict[str, bytes] = {}
        self._mem_files: dict[int, list[FileChange]] = {}
        self._mem_commits: dict[int, StoredCommit] = {}

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> HistoryIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, *, rebuild: bool) -> HistoryDB:
        """`rebuild` (a sync): a damaged or older database is only a cache of git, so it is dropped
        and read again. A reader never deletes one: another process may be serving from it, and a
        newer Lamina's database is never deleted by this one, whoever opens it."""
        if self._db is None:
            # The file's identity before connecting: a writer replacing it meanwhile leaves this one
            # noted, so the next `open_existing` follows the new file (noted after, this connection
            # would read the deleted one for good).
            ident = self._file_identity()
            try:
                self._db = HistoryDB(self.path, readonly=True) if self.readonly else HistoryDB(self.path)
            except sqlite3.DatabaseError as exc:
                if self.readonly or not rebuild or (isinstance(exc, HistoryFormatError) and exc.newer):
                    raise
                self._drop()
                ident = None  # created below: the next check notes the file it then finds
                self._db = HistoryDB(self.path)
            self._db_file = ident
        return self._db

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _forget(self) -> None:
        """Drop what was derived from the database's content (it is another history now)."""
        self._renames = None
        self._moved = None
        self._matrix = None
        self._older_ids = {}
        self._mem_symbols = {}
        self._mem_files = {}
        self._mem_commits = {}

    def _drop(self) -> None:
        self.close()
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    def _unusable(self, exc: sqlite3.DatabaseError | OSError) -> str:
        """Why the leg is off when its database cannot be read, and what to do about it."""
        if isinstance(exc, HistoryFormatError) and exc.newer:
            return (
                f"history database written by a newer Lamina (format {exc.found}; this one reads "
                f"{HISTORY_FORMAT}): upgrade Lamina, or delete {self.path} to have this one rebuild it"
            )
        if isinstance(exc, HistoryFormatError):
            return f"history database in an older format ({exc.found}): the next index sync rebuilds it"
        return f"history database unusable ({exc})"

    def _config_key(self) -> str:
        c = self.cfg
        return f"{c.max_commits}|{c.max_years}|{c.max_files}|{c.bot_pattern}"

    def bound(self) -> tuple[int, float] | None:
        """(max commits, max years) the stored history was read with (its writer's bound, which a
        reader serves); None before a sync or when the database cannot be read."""
        if self._reason or self._db is None:
            return None
        raw = self._db.get_meta("bound")
        if raw is not None:
            try:
                got = msgspec.json.decode(raw, type=StoredBound)
            except msgspec.DecodeError:
                return None
            return got.max_commits, got.max_years
        # Written before the bound had its own record: the config key starts with the same two numbers.
        commits, _, rest = (self._db.get_meta("config") or "").partition("|")
        try:
            return int(commits), float(rest.partition("|")[0])
        except ValueError:
            return None

    # -- sync ---------------------------------------------------------------------------------
    def sync(self, rev: str = "HEAD") -> SyncReport:
        """Bring the reachable set to `rev` (a commit-ish), reading only commits not stored yet."""
        t0 = time.perf_counter()
        if self.readonly:
            return self._off("opened read-only: only a writer syncs the history", t0)
        try:
            head, head_time = resolve(self.repo, rev, self.cfg.git_timeout_s)
            marker = shallow_file(self.repo, self.cfg.git_timeout_s)
            self._shallow = shallow_commits(self.repo, self.cfg.git_timeout_s, marker)
        except GitError as exc:
            return self._off(str(exc), t0)
        try:
            db = self._open(rebuild=True)
            if db.get_meta("config") not in (None, self._config_key()) or (
                (db.get_meta("shallow") or "") != self._shallow_key()
            ):
                # Skip flags and stored file lists depend on the bounds, and a shallow clone's
                # boundary commits show their whole tree until it is deepened: start over.
                self._drop()
                db = self._open(rebuild=True)
            mode, added = self._sync(db, head, head_time)
        except GitError as exc:
            return self._off(str(exc), t0)
        except (sqlite3.DatabaseError, OSError) as exc:
            self.close()
            return self._off(self._unusable(exc), t0)
        except Exception as exc:  # whatever went wrong, the stored set is not this HEAD's: it must not vote
            self.close()
            return self._off(f"{type(exc).__name__}: {exc}", t0)
        self._reason = ""
        self._renames = None
        self._moved = None
        return SyncReport(
            enabled=True,
            reason="",
            mode=mode,
            head=head,
            added=added,
            reachable=db.reachable_count(),
            seconds=time.perf_counter() - t0,
            shallow_file=str(marker),
        )

    def open_existing(self) -> bool:
        """Serve queries from what another engine synced (a reader never runs git log): True when
        a synced history database exists; its reachable set is the writer's last HEAD, read within
        the writer's bound (a reader configured with another one serves it as it is)."""
        if self._db is not None and not self._reason:
            if self._file_identity() != self._db_file:
                # A writer read the history again into a new file (another bound, an upgrade, a
                # rebuild): the open connection still reads the deleted one. Follow the new file.
                self.close()
                self._forget()
            elif self._db.get_meta("head"):
                return True
        if not self.path.exists():
            self._reason = "no history synced yet"
            return False
        try:
            db = self._open(rebuild=False)
            ready = bool(db.get_meta("head"))
        except (sqlite3.DatabaseError, OSError) as exc:
            self.close()
            self._reason = self._unusable(exc)
            return False
        self._reason = "" if ready else (db.get_meta("off") or "no history synced yet")
        return ready

    def _off(self, reason: str, t0: float) -> SyncReport:
        self._reason = reason
        self._withdraw(reason)
        return SyncReport(
            enabled=False, reason=reason, mode="off", head="", added=0, reachable=0, seconds=time.perf_counter() - t0
        )

    def _withdraw(self, reason: str) -> None:
        """After a failed sync the stored reachable set is an older HEAD's (before a reset, a branch
        switch, the folder's git going away): no reader may vote with it. Its HEAD is cleared (the
        commits stay: the next sync reuses them) and `reason` kept for readers' `status`."""
        if self.readonly or not self.path.exists():
            return
        try:
            db = self._open(rebuild=False)
            with _transaction(db):
                db.set_meta("head", "")
                db.set_meta("off", reason)
        except (sqlite3.DatabaseError, OSError):
            self.close()  # unreadable, or a newer Lamina's: readers find it unusable themselves

    def _shallow_key(self) -> str:
        """Meta `shallow`: empty for a full clone, else a digest of its boundary commits."""
        if not self._shallow:
            return ""
        import hashlib

        return hashlib.sha256(" ".join(sorted(self._shallow)).encode()).hexdigest()

    def _sync(self, db: HistoryDB, head: str, head_time: int) -> tuple[str, int]:
        # Read and keep reachable the newest `max_commits` whatever their age: the older ones never
        # vote (`max_years` is the vote window, applied per query) but their messages are FTS5's
        # statistics, so a term's rarity is judged on the repository's history, not on five years.
        cfg = msgspec.structs.replace(self.cfg, max_years=0.0)
        old = db.get_meta("head") or ""
        if old == head:
            return "unchanged", 0
        if old and is_ancestor(self.repo, old, head, cfg.git_timeout_s):
            new = read_log(self.repo, [f"{old}..{head}"], cfg, head_time, merges=True)
            if len(new) < cfg.max_commits:
                with _transaction(db):
                    ids = db.add_commits(self._with_skip(new), cfg.max_files)
                    db.add_reachable(ids.values())
                    db.trim_reachable(cfg.max_commits)
                    self._mark(db, head, head_time)
                return "incremental", len(new)
        if db.commit_count() == 0:
            records = read_log(self.repo, [head], cfg, head_time)
            records += read_merges(self.repo, [head], cfg, head_time)
            with _transaction(db):
                ids = db.add_commits(self._with_skip(records), cfg.max_files)
                db.set_reachable(ids.values())
                self._mark(db, head, head_time)
            return "full", len(records)
        # A branch switch or rebase: commits are immutable by sha, read only the missing ones.
        shas = rev_list(self.repo, [head], cfg, head_time)
        merges = rev_list(self.repo, [head], cfg, head_time, merges=True)
        known = db.known_ids([*shas, *merges])
        missing = [s for s in shas if s not in known]
        records = read_log(self.repo, [], cfg, head_time, shas=missing) if missing else []
        missing = [s for s in merges if s not in known]
        records += read_merges(self.repo, [], cfg, head_time, shas=missing) if missing else []
        with _transaction(db):
            ids = db.add_commits(self._with_skip(records), cfg.max_files)
            db.set_reachable([*known.values(), *ids.values()])
            db.sweep(SWEEP_FACTOR, cfg.max_commits)
            self._mark(db, head, head_time)
        return "switch", len(records)

    def _with_skip(self, records: Sequence[CommitRecord]) -> list[tuple[CommitRecord, str]]:
        """Each record with why it must not vote; a shallow clone's boundary commit keeps no files
        (git diffs it against nothing: its "change" is the whole tree) and never votes."""
        rx = bot_regex(self.cfg)
        return [
            (msgspec.structs.replace(c, changes=()), "shallow")
            if c.sha in self._shallow
            else (c, skip_reason(c, self.cfg, rx))
            for c in records
        ]

    def _mark(self, db: HistoryDB, head: str, head_time: int) -> None:
        db.remember_counts(since_time(self.cfg, head_time))
        db.set_meta("remotes", "\n".join(remote_names(self.repo, self.cfg.git_timeout_s)))
        db.set_meta("head", head)
        db.set_meta("head_time", str(head_time))
        db.set_meta("config", self._config_key())
        db.set_meta("shallow", self._shallow_key())
        db.set_meta("off", "")
        db.set_meta("bound", msgspec.json.encode(StoredBound(self.cfg.max_commits, self.cfg.max_years)).decode())

    # -- status -------------------------------------------------------------------------------
    def status(self) -> HistoryStatus:
        if self._reason or self._db is None:
            return HistoryStatus(
                enabled=False,
                reason=self._reason or "not synced yet",
                head="",
                head_time=0,
                reachable=0,
                voting=0,
                stored=0,
            )
        db = self._db
        reachable, merges = db.reachable_counts()
        return HistoryStatus(
            enabled=True,
            reason="",
            head=db.get_meta("head") or "",
            head_time=int(db.get_meta("head_time") or 0),
            reachable=reachable,
            voting=db.voting_count(self.vote_since()),  # within the vote window, as status says
            stored=db.commit_count(),
            merges=merges,
        )

    # -- queries ------------------------------------------------------------------------------
    def search(self, text: str, k: int | None = None) -> list[CommitHit]:
        """The reachable commits whose messages best match `text` (BM25, informative terms only)."""
        k = self.cfg.search_hits if k is None else k
        if self._reason or self._db is None or k <= 0:
            return []
        db = self._db
        tokens = tokenize(text)
        if not tokens:
            return []
        from index.lexical import match_expression, select_terms  # the query path: `status` never loads it

        qt = select_terms(
            tokens, db.doc_freqs(sorted(set(tokens))), max(db.fts_doc_count(), 1), self.cfg.max_query_terms
        )
        if not qt.terms:
            return []
        rows = db.bm25(
            match_expression(qt.terms), (self.cfg.subject_weight, self.cfg.body_weight), k, self.vote_since()
        )
        files = db.files_of([c.id for c, _ in rows])
        return [
            CommitHit(
                rank=i + 1,
                score=score,
                sha=c.sha,
                time=c.time,
                subject=c.subject,
                n_files=c.n_files,
                files=tuple(f.path for f in files[c.id]),
            )
            for i, (c, score) in enumerate(rows)
        ]

    def head_time(self) -> int:
        return int(self._db.get_meta("head_time") or 0) if self._db is not None else 0

    def vote_since(self) -> int:
        """The oldest committer time that votes (`max_years` before HEAD's time; 0: no window)."""
        return since_time(self.cfg, self.head_time())

    def prefix(self) -> str:
        """The workspace's folder inside the repository: git paths carry it, workspace paths do not."""
        if self._prefix is None:
            self._prefix = toplevel_prefix(self.repo, self.cfg.git_timeout_s)
        return self._prefix

    def _git_paths(self, current_paths: Collection[str]) -> tuple[str, Collection[str]]:
        """(the workspace's folder in the repository, today's workspace paths as git names them)."""
        pre = self.prefix()
        return pre, ({pre + p for p in current_paths} if pre else current_paths)

    def rename_map(self) -> RenameMap:
        head = self._db.get_meta("head") or "" if self._db is not None else ""
        if self._renames is None or self._renames[0] != head:
            events = self._db.renames_after(0) if self._db is not None else []
            self._renames = (head, rename_map([(e.time, e.old_path, e.path) for e in events]))
        return self._renames[1]

    def moved(self, current_paths: Collection[str]) -> dict[str, str]:
        """Workspace paths that no longer exist -> today's path the history renamed them to
        (votes.moved_paths), for a report that names files as an older release had them. Cached per
        HEAD and set of workspace paths; paths outside the workspace's folder are left out."""
        head = self._db.get_meta("head") or "" if self._db is not None else ""
        key = (head, hash(frozenset(current_paths)))  # a frozenset caches its hash: cheap per query
        if self._moved is not None and self._moved[0] == key:
            return self._moved[1]
        pre, current = self._git_paths(current_paths)
        out: dict[str, str] = {}
        for old, now in moved_paths(self.rename_map(), current).items():
            if old.startswith(pre) and now.startswith(pre):
                out[old[len(pre) :]] = now[len(pre) :]
        self._moved = (key, out)
        return out

    def resolve(self, hits: Sequence[CommitHit], current_paths: Collection[str]) -> list[CommitHit]:
        """Hits with files renamed to today's workspace paths; paths that no longer exist dropped."""
        pre, current = self._git_paths(current_paths)
        out = resolve_hits(hits, self.rename_map(), current)
        if pre:
            out = [msgspec.structs.replace(h, files=tuple(p[len(pre) :] for p in h.files)) for h in out]
        return out

    # -- changes a report names ---------------------------------------------------------------
    def repository_names(self) -> frozenset[str]:
        """Lower-case names of this repository (its remotes' last path component, as synced): a
        link or `owner/name#12` into another project names none of its changes."""
        raw = self._db.get_meta("remotes") if self._db is not None and not self._reason else None
        return frozenset(n for n in (raw or "").split("\n") if n)

    def named(self, refs: Sequence[ChangeRef], current_paths: Collection[str]) -> list[NamedChange]:
        """The reachable commits `refs` name, in the refs' order, each once, with the files and
        symbols they changed on today's paths. A merge's files and symbols are read from git the
        first time it is named (bounded like a lazy symbol read) and kept."""
        if self._reason or self._db is None or not refs:
            return []
        self._bound_named_memory()
        db, cfg = self._db, self.cfg
        names = self.repository_names()
        head = db.get_meta("head") or ""
        deadline = time.monotonic() + cfg.symbol_budget_s
        found: list[tuple[ChangeRef, StoredCommit]] = []
        seen: set[int] = set()
        for ref in refs:
            if not ref.same_repository(names):
                continue
            if ref.kind == "sha":
                one = db.by_prefix(ref.value) or self._older(db, ref.value, head, deadline)
                got = [one] if one is not None else []
            else:
                got = db.naming(int(ref.value), PER_NUMBER)
            for c in got:
                # HEAD itself is the version the reporter runs ("on main, commit 6bb2b85"), no past change.
                if c.id not in seen and c.skip != "bot" and c.sha != head:
                    seen.add(c.id)
                    found.append((ref, c))
        if not found:
            return []
        for i, (ref, c) in enumerate(found):
            if c.n_files == UNREAD and time.monotonic() < deadline:
                try:
                    changes = merge_changes(self.repo, c.sha, min(cfg.symbol_timeout_s, cfg.git_timeout_s))
                except GitError:
                    continue
                if db.readonly or c.id < 0:
                    self._mem_files[c.id] = list(changes) if len(changes) <= cfg.max_files else []
                else:
                    with _transaction(db):
                        db.set_files(c.id, changes, cfg.max_files)
                found[i] = (ref, msgspec.structs.replace(c, n_files=len(changes)))
        found = [(ref, c) for ref, c in found if 0 < c.n_files <= cfg.max_files]
        files = db.files_of([c.id for _, c in found])
        files.update((cid, fs) for cid, fs in self._mem_files.items() if cid in files)
        hits = [
            CommitHit(
                rank=i,
                score=1.0,
                sha=c.sha,
                time=c.time,
                subject=c.subject,
                n_files=c.n_files,
                files=tuple(f.path for f in files[c.id]),
            )
            for i, (_, c) in enumerate(found, 1)
        ]
        touched = self._symbols_today(hits, current_paths, len(hits))
        out: list[NamedChange] = []
        for (ref, _), h in zip(found, self.resolve(hits, current_paths), strict=True):
            syms = dict.fromkeys((s.path, s.name) for s in touched.get(h.sha, []))
            out.append(
                NamedChange(
                    ref=ref,
                    sha=h.sha,
                    subject=h.subject,
                    time=h.time,
                    n_files=h.n_files,
                    files=h.files,
                    symbols=tuple(syms),
                    weight=size_weight(h.n_files, cfg.max_files),
                )
            )
        return out

    def _bound_named_memory(self) -> None:
        """Before a query: what named changes left in memory (answers per hash prefix, a read-only
        reader's remembered commits and merges' files) is dropped once it holds _READER_MEMORY
        entries, to be read from git again: a long-lived server whose queries quote many hashes
        would otherwise grow without end. Never mid-query: a remembered commit's id must hold."""
        if len(self._older_ids) + len(self._mem_files) >= _READER_MEMORY:
            self._older_ids = {}
            self._mem_commits = {}
            self._mem_files = {}

    def _older(self, db: HistoryDB, prefix: str, head: str, deadline: float) -> StoredCommit | None:
        """The commit a hash names beyond the reading bound ("regressed in bbfd0d0", six years
        back), from git: stored like a sync stores it but not reachable, so it never votes and a
        later sweep may drop it. Answers (a miss or a timeout too) are kept per HEAD: git is asked
        once (its ancestry walk took 0.2 s on sphinx's mirror)."""
        key = (head, prefix)
        if key not in self._older_ids:
            left = deadline - time.monotonic()
            if left <= 0 or not head:
                return None  # out of time for this query: a later one asks
            try:
                sha = named_sha(self.repo, prefix, head, min(self.cfg.symbol_timeout_s, left))
                # the commit's files within what is left of the query's budget, not a sync's git timeout
                left = max(deadline - time.monotonic(), 0.01)
                bounded = msgspec.structs.replace(self.cfg, git_timeout_s=min(self.cfg.symbol_timeout_s, left))
                records = read_log(self.repo, [], bounded, 0, shas=[sha]) if sha else []
            except GitError:
                records = []  # too slow (a huge history without a commit-graph) or no git: not again per query
            cid = None
            if records and db.readonly:
                cid = self._remember(records[0])
            elif records:
                with _transaction(db):
                    cid = db.add_commits(self._with_skip(records[:1]), self.cfg.max_files).get(records[0].sha)
            self._older_ids[key] = cid
        cid = self._older_ids[key]
        if cid is not None and cid < 0:
            return self._mem_commits.get(cid)
        got = db.commits_by_id([cid]).get(cid) if cid is not None else None
        if cid is not None and (got is None or not got.sha.startswith(prefix.lower())):
            del self._older_ids[key]  # swept since (its id may be another commit's now): ask again next time
            return None
        return got

    def _remember(self, record: CommitRecord) -> int:
        """A read-only reader's stand-in for storing a commit named beyond the bound: kept in memory
        under a new negative id, as `add_commits` would store it (it never votes either)."""
        (c, skip), *_ = self._with_skip([record])
        cid = -(len(self._mem_commits) + 1)
        self._mem_commits[cid] = stored_form(c, skip, cid)
        self._mem_files[cid] = list(kept_changes(c, skip, self.cfg.max_files))
        return cid

    # -- the dense half: commit messages as vectors ------------------------------------------
    def unembedded(self, model: str, limit: int) -> list[tuple[int, str]]:
        """(commit id, message) of up to `limit` of the newest `dense_commits` voting commits in the
        vote window that have no vector of `model` yet; newest first (they vote most). Vectors of
        another model go."""
        if self._reason or self._db is None or self._db.readonly or self.cfg.dense_commits <= 0:
            return []
        self._db.use_vector_model(model)
        rows = self._db.unembedded(self.cfg.dense_commits, self.vote_since(), limit)
        return [(cid, commit_text(subject, body)) for cid, subject, body in rows]

    def drop_other_vectors(self) -> int:
        """Delete the vectors of commits `unembedded` does not cover (an older HEAD's window, another
        branch, a larger `dense_commits`): the search never reads them, so `status` counts what a
        query can find. Returns how many went. Once per HEAD, setting and vote window: only a HEAD
        move or a new setting or window leaves such vectors (`put_vectors` stores `unembedded`'s),
        and the scan (~20 ms on astropy) holds the lock queries vote under."""
        if self._reason or self._db is None or self._db.readonly or self.cfg.dense_commits <= 0:
            return 0
        since = self.vote_since()
        key = (self._db.get_meta("head") or "", self.cfg.dense_commits, since)
        if key == self._dropped_for:
            return 0
        with _transaction(self._db):
            n = self._db.drop_other_vectors(self.cfg.dense_commits, since)
        self._dropped_for = key
        return n

    def unembedded_count(self, model: str) -> int:
        """How many commits `unembedded` would still give for `model`, without reading them."""
        if self._reason or self._db is None or self.cfg.dense_commits <= 0:
            return 0
        return self._db.unembedded_count(self.cfg.dense_commits, self.vote_since(), model)

    def put_vectors(self, model: str, ids: Sequence[int], vecs: np.ndarray) -> None:
        """Store unit vectors of `model` for these commits (float16: the cosines need no more)."""
        if self._reason or self._db is None or self._db.readonly or self._db.get_meta("vector_model") != model:
            return  # the model changed while these were encoded: they are stale (or a reader's: not stored)
        import numpy as np

        rows = np.asarray(vecs, dtype=np.float16)
        with _transaction(self._db):
            self._db.put_vectors((int(cid), rows[i].tobytes()) for i, cid in enumerate(ids))
        self._matrix = None

    def vector_count(self) -> int:
        return self._db.vector_count() if self._db is not None and not self._reason else 0

    def dense_search(self, query_vector: np.ndarray, k: int | None = None) -> list[CommitHit]:
        """Of the commits `unembedded` covers (the newest `dense_commits` voting ones in the vote
        window), those whose message vectors are nearest `query_vector` (exact: a few thousand rows
        cost a matrix-vector product), best first; ties by newer commit."""
        import numpy as np

        k = self.cfg.dense_hits if k is None else k
        if self._reason or self._db is None or k <= 0:
            return []
        db = self._db
        key = (db.get_meta("head") or "", db.get_meta("vector_model") or "", db.vector_count(), self.cfg.dense_commits)
        if self._matrix is None or self._matrix[0] != key:
            rows = db.vector_rows(self.cfg.dense_commits, self.vote_since())
            ids = np.array([cid for cid, _ in rows], dtype=np.int64)
            mat = (  # float32 once here, not per query (5,000 commits: 7.7 MB)
                np.frombuffer(b"".join(v for _, v in rows), dtype=np.float16).reshape(len(rows), -1).astype(np.float32)
                if rows
                else np.zeros((0, 0), np.float32)
            )
            self._matrix = (key, ids, mat)
        _, ids, mat = self._matrix
        if not len(ids):
            return []
        q = np.asarray(query_vector, dtype=np.float32)
        sims = mat @ q
        top = np.argsort(-sims, kind="stable")[:k]
        chosen = [int(ids[i]) for i in top]
        commits = db.commits_by_id(chosen)
        files = db.files_of(chosen)
        hits = [
            CommitHit(
                rank=0,
                score=float(sims[i]),
                sha=commits[cid].sha,
                time=commits[cid].time,
                subject=commits[cid].subject,
                n_files=commits[cid].n_files,
                files=tuple(f.path for f in files[cid]),
            )
            for i, cid in zip(top, chosen, strict=True)
        ]
        hits.sort(key=lambda h: (-round(h.score, 6), -h.time, h.sha))
        return [msgspec.structs.replace(h, rank=r) for r, h in enumerate(hits, 1)]

    def file_votes(
        self,
        text: str,
        current_paths: Collection[str],
        k: int | None = None,
        *,
        symbols: bool = False,
        query_vector: np.ndarray | None = None,
    ) -> FileVotes:
        """The leg in one call: search, map paths to today's, vote (now = HEAD's time); `symbols`:
        also the symbols the best hits touched (`symbol_votes`, a `git show` per commit not read yet);
        `query_vector`: the commits nearest it by message vector join the BM25 hits (`fuse_hits`)."""
        raw = self.search(text, self.cfg.search_hits if k is None else k)
        if query_vector is not None:
            near = self.dense_search(query_vector)
            if near:
                raw = fuse_hits([raw, near], self.cfg.dense_rrf_k, max(len(raw), len(near)))
        hits = self.resolve(raw, current_paths)
        touches, n = self.touch_counts(hits)
        got = votes(hits, self.head_time(), self.cfg, touches, n)
        got = msgspec.structs.replace(got, uncommitted=self.uncommitted(current_paths))
        if symbols:
            got = msgspec.structs.replace(got, symbols=self.symbol_votes(raw, current_paths))
        return got

    def uncommitted(self, current_paths: Collection[str]) -> frozenset[str]:
        """Today's workspace paths that HEAD's tree lacks: files not committed yet, whose history is
        unknown rather than empty. Read from git once per HEAD (one `ls-tree`); none when git cannot
        answer in time."""
        head = self._db.get_meta("head") or "" if self._db is not None else ""
        if not head:
            return frozenset()
        key = (head, hash(frozenset(current_paths)))
        if self._uncommitted is not None and self._uncommitted[0] == key:
            return self._uncommitted[1]
        if self._tree is None or self._tree[0] != head:
            try:
                self._tree = (head, tree_paths(self.repo, head, self.cfg.git_timeout_s))
            except GitError:
                return frozenset()
        tree, pre = self._tree[1], self.prefix()
        nested: dict[str, bool] = {}  # folder -> inside a submodule (a tree entry) or a nested repository

        def elsewhere(path: str) -> bool:
            """In a submodule or a nested repository: committed there, in a history this leg does not read."""
            folder = path.rpartition("/")[0]
            if folder in nested:
                return nested[folder]
            got = bool(folder) and (
                pre + folder in tree
                or os.path.lexists(os.path.join(self.repo.cwd, folder, ".git"))
                or elsewhere(folder)
            )
            nested[folder] = got
            return got

        out = frozenset(p for p in current_paths if pre + p not in tree and not elsewhere(p))
        self._uncommitted = (key, out)
        return out

    def touch_counts(self, hits: Sequence[CommitHit]) -> tuple[dict[str, int], int]:
        """(path -> reachable voting commits that changed it, reachable voting commits) for `votes`."""
        if self._db is None or self._reason:
            return {}, 0
        pre = self.prefix()
        paths = [pre + p for h in hits for p in h.files]
        counts = self._db.touch_counts(paths, self.vote_since())
        return {p[len(pre) :]: n for p, n in counts.items()}, int(self._db.get_meta("voting") or 0)

    def symbols(self, hits: Sequence[CommitHit], limit: int | None = None) -> dict[str, list[TouchedSymbol]]:
        """Symbols the best `limit` voting hits touched (paths as in the commit), cached per sha.

        Read lazily: a `git show` per commit for the handful a query matched, bounded in time
        and bytes, and all of them within `symbol_budget_s`; a commit git cannot show in time
        contributes nothing rather than failing (cached ones always count).
        """
        if self._db is None or self._reason:
            return {}
        db = self._db
        n = self.cfg.symbol_commits if limit is None else limit
        deadline = time.monotonic() + self.cfg.symbol_budget_s
        out: dict[str, list[TouchedSymbol]] = {}
        remembered = {c.sha for c in self._mem_commits.values()}
        for h in [h for h in hits if 0 < h.n_files <= self.cfg.max_files][:n]:
            ids = db.known_ids([h.sha])
            cid = ids.get(h.sha)
            if cid is None and h.sha not in remembered:
                continue
            cached = db.symbols_of(cid) if cid is not None else None
            if cached is None:
                cached = self._mem_symbols.get(h.sha)
            if cached is not None:
                out[h.sha] = msgspec.msgpack.decode(cached, type=list[TouchedSymbol])
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                continue  # out of time for this query: a later one reads it
            try:
                syms = read_symbols(
                    self.repo, h.sha, min(self.cfg.symbol_timeout_s, left), self.cfg.symbol_max_bytes, self.path.parent
                )
            except GitError:
                continue
            if db.readonly or cid is None:
                if len(self._mem_symbols) >= _READER_MEMORY:
                    self._mem_symbols.clear()
                self._mem_symbols[h.sha] = msgspec.msgpack.encode(syms)
            else:
                db.put_symbols(cid, msgspec.msgpack.encode(syms))
            out[h.sha] = syms
        return out

    def symbols_unread(self, limit: int | None = None) -> list[tuple[int, str]]:
        """(id, sha) of up to `limit` (default `symbol_batch`) of the newest `symbol_prefetch`
        voting commits in the vote window whose symbols were not read yet."""
        if self._db is None or self._reason or self.cfg.symbol_prefetch <= 0:
            return []
        n = self.cfg.symbol_batch if limit is None else limit
        return self._db.symbols_unread(self.cfg.symbol_prefetch, self.vote_since(), n)

    def read_ahead(self, todo: Sequence[tuple[int, str]]) -> list[tuple[int, bytes]]:
        """The symbols of `todo` ((id, sha)), encoded for `put_symbols`: git only, no database, so a
        caller runs it outside its lock. GitError when git cannot answer in time."""
        got = read_symbols_many(
            self.repo,
            [sha for _, sha in todo],
            self.cfg.symbol_batch_timeout_s,
            self.cfg.symbol_max_bytes,
            self.path.parent,
        )
        return [(cid, msgspec.msgpack.encode(got.get(sha, []))) for cid, sha in todo]

    def put_symbols(self, rows: Sequence[tuple[int, bytes]]) -> None:
        if self._db is None or self._reason or self._db.readonly:
            return
        with _transaction(self._db):
            self._db.put_symbols_many(rows)

    def symbol_votes(
        self, hits: Sequence[CommitHit], current_paths: Collection[str], limit: int | None = None
    ) -> tuple[SymbolVote, ...]:
        """Symbols the best hits touched, on today's paths, weighted like file votes.

        `hits` as `search` returned them (paths at each commit): symbols are read from the
        commit and renamed here; symbols in files that no longer exist are dropped.
        """
        mapped = self._symbols_today(hits, current_paths, limit)
        if not mapped:
            return ()
        return symbol_votes([h for h in hits if h.sha in mapped], mapped, self.head_time(), self.cfg)

    def _symbols_today(
        self, hits: Sequence[CommitHit], current_paths: Collection[str], limit: int | None = None
    ) -> dict[str, list[TouchedSymbol]]:
        """sha -> the symbols the best `limit` hits touched (`symbols`), on today's workspace paths;
        symbols in files that no longer exist are dropped. `hits` with paths at each commit."""
        touched = self.symbols(hits, limit)
        if not touched:
            return {}
        pre, current = self._git_paths(current_paths)
        renames = self.rename_map()
        by_sha = {h.sha: h for h in hits}
        mapped: dict[str, list[TouchedSymbol]] = {}
        for sha, syms in touched.items():
            out: list[TouchedSymbol] = []
            for s in syms:
                now_p = current_path(s.path, by_sha[sha].time, renames, current)
                if now_p is not None:
                    out.append(msgspec.structs.replace(s, path=now_p[len(pre) :]))
            mapped[sha] = out
        return mapped


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any error (autocommit connection)."""

    def __init__(self, db: HistoryDB) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is None:
            self.db.conn.execute("COMMIT")
        else:
            self.db.conn.execute("ROLLBACK")
