"""An index's status as the lines `lamina context status` prints, shared with the editor's Context
Status details (which showed the raw JSON): one wording for the same facts everywhere."""

from __future__ import annotations

import time

from index.engine import Status
from index.files import skipped_since
from index.gitinfo import CLEAN_DIGEST


def tree_state(dirty_digest: str) -> str:
    """The working tree as the generation saw it: `clean`, or uncommitted changes with the digest
    that tells two such states apart; nothing outside git."""
    if not dirty_digest:
        return ""
    if dirty_digest == CLEAN_DIGEST:
        return ", clean"
    return f", uncommitted changes (digest {dirty_digest[:12]})"


def _history(st: Status) -> str:
    facts = ""
    if st.history.startswith("on"):
        votes = f"those of the last {st.history_max_years:g} years vote" if st.history_max_years else "all vote"
        n = st.history_max_commits
        read = f"newest {n:,} commit{'' if n == 1 else 's'} read, {votes}; " if n else ""
        r = st.history_reachable
        # the commits held: at the bound HEAD may reach many more, which were not read
        bound = " (the bound: older ones are not read)" if n and r >= n else ""
        held = f"{r:,} commit{'' if r == 1 else 's'} reachable from HEAD{bound}, {st.history_voting:,} can vote; "
        facts = f" ({read}{held}{st.history_vectors} commit messages embedded)"
    return f"history     {st.history}{facts}"


def status_lines(st: Status) -> list[str]:
    """`lamina context status`, line by line (label column, then the facts)."""
    out = [f"workspace   {st.workspace}", f"index       {st.index_dir}"]
    if st.generation is None:
        out.append("generation  none (run: lamina context rebuild)")
    else:
        m = st.manifest
        assert m is not None
        out.append(f"generation  {st.generation} ({st.generation_state}), built {time.ctime(st.created_at or 0)}")
        revision = m.source_revision[:12] or ("(no commit yet)" if m.dirty_digest else "(no git)")
        out.append(f"source      {m.branch or '(detached)'} @ {revision}{tree_state(m.dirty_digest)}")
        out.append(
            f"digests     membership {m.membership_digest[:16]} model {m.model_digest[:16]}"
            f" graph {m.graph_version[:16]} schema {m.schema_version}"
        )
    f = st.freshness
    extra = f" (+{f.added} ~{f.modified} -{f.removed}: {', '.join(f.examples)})" if f.state == "stale" else ""
    out.append(f"freshness   {f.state}{extra}; workflow graph {f.graph}")
    out.append(
        f"contents    {st.files} files, {st.chunks} chunks, {st.documents} stored contents (this and earlier checkouts')"
    )
    out.append(f"retrieval   {st.retrieval}; pending embeddings {st.pending_embeddings}")
    if st.dense_unavailable:
        out.append(f"dense leg   off: {st.dense_unavailable}")
    if st.history:
        out.append(_history(st))
    if st.code_graph:
        out.append(f"code graph  {st.code_graph}")
    if st.windows:
        out.append(f"windows     {st.windows}")
    skipped = ", ".join(f"{k} {v}" for k, v in sorted(st.skipped.items())) or "none"
    out.append(f"skipped     {skipped}")
    if st.skipped_recent:
        out.append(f"            since the full scan: {skipped_since(st.skipped_recent)}")
    if st.last_failure:
        out.append(f"last failure generation {st.last_failure['generation']}: {st.last_failure['error']}")
    return out
