"""Packet v6 as compact markdown: what a person or an agent reads before starting work.

One line per fact: the selection, the closure as short lists, spans as
`` `file:start-end` `symbol` — why `` (paths and names as code), span text in fences, the
omitted tails, and the retrieval state. Nothing here changes the packet; it only shows it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from index.packet_models import (
    GraphState,
    NodeRef,
    Omitted,
    Packet,
    PacketSelection,
    PacketSpan,
    PacketWorkflow,
    RetrievalState,
    WorkflowCandidate,
    entry_ranks,
)
from index.selection import SelectionResult

MAX_CANDIDATES_SHOWN = 5
MAX_IDS_SHOWN = 8


def _candidates(cands: Sequence[WorkflowCandidate]) -> str:
    parts = []
    for c in cands[:MAX_CANDIDATES_SHOWN]:
        legs = []
        if c.lexical_rank:
            legs.append(f"lex #{c.lexical_rank}")
        if c.dense_rank:
            legs.append(f"dense #{c.dense_rank}")
        extra = f" ({', '.join(legs)})" if legs else ""
        parts.append(f"{c.workflow_id} {c.score:.3f}{extra}")
    more = len(cands) - MAX_CANDIDATES_SHOWN
    return "; ".join(parts) + (f"; +{more} more" if more > 0 else "")


def selection_markdown(sel: SelectionResult | PacketSelection) -> str:
    """One paragraph per line: a markdown viewer joins adjacent lines into one paragraph."""
    lines = [f"**Selection:** {sel.status}" + (f" → {', '.join(sel.selected)}" if sel.selected else "")]
    if sel.reasons:
        lines.append("Why: " + "; ".join(sel.reasons))
    if sel.candidates:
        lines.append("Candidates: " + _candidates(sel.candidates))
    return "\n\n".join(lines)


def head_markdown(schema: str, task: str, sel: SelectionResult | PacketSelection, graph: GraphState) -> str:
    """The packet's title, task, selection and the graph's loud lines, each a block of its own
    (index.packet pays for exactly this text before it packs the spans)."""
    loud = "\n".join(graph_state_lines(graph))
    return "\n\n".join(
        [f"# Packet ({schema})", task_markdown(task), selection_markdown(sel), *([loud] if loud else [])]
    )


def task_markdown(task: str) -> str:
    """The task as the user typed it: one line escaped like a reason; several (a pasted report, whose
    own markdown may hold an unclosed fence or a `---` under a line) in a fence of their own, so
    nothing of theirs takes over the packet's headings, lists or spans."""
    text = task.strip()
    if "\n" not in text and "\r" not in text:
        return f"**Task:** {inline(text)}"
    tick = fence(text)
    return f"**Task:**\n\n{tick}text\n{text}\n{tick}"


def _nodes(label: str, nodes: Sequence[NodeRef], show_text: bool = True) -> list[str]:
    if not nodes:
        return []
    if not show_text:
        return [f"- {label}: " + ", ".join(n.id for n in nodes)]
    out = [f"- {label}:"]
    for n in nodes:
        tag = f"[{n.kind}] " if n.kind else ""
        body = n.text or n.title
        out.append(f"  - {tag}{n.id}: {body}".rstrip())
    return out


def closure_markdown(w: PacketWorkflow) -> str:
    lines = [f"## Workflow {w.id} — {w.title}" + (" (inactive)" if w.status != "active" else "")]
    # the summary, where it is defined and the operations' label: paragraphs of their own
    if w.summary:
        lines += [w.summary, ""]
    if w.defined_at:
        lines += [f"Defined at {code(w.defined_at)}", ""]
    if w.operations:
        lines.append("Operations:")
        for op in w.operations:
            who = f"by {op.actor}" if op.actor else ""
            if op.authority and op.authority != op.actor:
                who += f" (authority {op.authority})" if who else f"authority {op.authority}"
            move = f"{op.from_state or '·'} → {op.to_state or '·'}" if (op.from_state or op.to_state) else ""
            meta = ", ".join(x for x in (who, move) if x)
            lines.append(f"{op.position}. {op.id}: {op.title}" + (f" — {meta}" if meta else ""))
            for link in op.implemented_by:
                lines.append(f"   - implemented by {code(link)}")
    lines += _nodes("Actors", w.actors, show_text=False)
    lines += _nodes("Entities", w.entities, show_text=False)
    lines += _nodes("Surfaces", w.surfaces, show_text=False)
    lines += _nodes("Invariants", w.invariants)
    lines += _nodes("Scenarios", w.scenarios)
    lines += _nodes("Risks", w.risks)
    lines += _nodes("Proof required", w.proof_requirements)
    if w.references:
        lines.append("- Relies on: " + ", ".join(r.id for r in w.references))
    if w.referenced_by:
        lines.append("- Relied on by: " + ", ".join(r.id for r in w.referenced_by))
    return "\n".join(lines)


def _ticks(text: str, least: int) -> str:
    """Backticks longer than any run of them in `text`, and at least `least` (a fence needs 3)."""
    return "`" * max(least, max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)


def code(text: str) -> str:
    """`text` as an inline code span, whatever backticks it holds (CommonMark's rule: a longer fence,
    padded when the text starts or ends with a backtick)."""
    tick = _ticks(text, 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
# Where a markdown viewer would read our plain text as markup: `*`, `<` (a tag: `in <module>`
# vanished), `[` (a link: a commit subject quoted in a reason), a backslash before punctuation, and
# a run of `_` at a word's edge (`__init__.py` rendered as a bold "init"); a `_` inside a word
# (`add_item`) never is, so it stays as typed.
_ACTIVE = re.compile(r"[*<\[]|\\(?=[!-/:-@\[-`{-~])|(?<![0-9A-Za-z])_+|_+(?![0-9A-Za-z])")


def _escape(plain: str) -> str:
    return _ACTIVE.sub(lambda a: "".join("\\" + c for c in a.group()), plain)


def inline(text: str) -> str:
    """Engine-written text (reasons, paths inside them) escaped for a markdown viewer; the code spans
    it already holds are kept as they are."""
    out: list[str] = []
    last = 0
    for m in _CODE_SPAN.finditer(text):
        out += (_escape(text[last : m.start()]), m.group())
        last = m.end()
    return "".join(out) + _escape(text[last:])


def span_header(file: str, start: int, end: int, symbol: str, authority: str, reasons: Sequence[str]) -> str:
    """A span's place and why, as markdown: the path and symbol as code (`pkg/__init__.py` and
    `Foo.__init__` were bold "init" in a preview), the reasons escaped."""
    sym = f" {code(symbol)}" if symbol else ""
    why = "; ".join(reasons[:4]) + (f"; +{len(reasons) - 4} more" if len(reasons) > 4 else "")
    return f"{code(f'{file}:{start}-{end}')}{sym} [{authority}] — {inline(why)}"


def fence(text: str) -> str:
    """The code fence around `text`: longer than any backtick run inside it."""
    return _ticks(text, 3)


def span_line(label: str, header: str, span_id: str, *, stale: bool, reresolved: bool) -> str:
    """A span's line in the markdown (the packet's budget counts the same line)."""
    flags = " **STALE**" if stale else (" (re-resolved)" if reresolved else "")
    return f"{label} {header}{flags} `{span_id}`"


def _span(label: str, s: PacketSpan, indent: str = "") -> list[str]:
    header = span_header(s.file, s.start_line, s.end_line, s.symbol, s.authority, s.reasons)
    lines = [indent + span_line(label, header, s.id, stale=s.stale, reresolved=s.stale_reresolved)]
    if s.text is not None:
        fence_ = fence(s.text)
        body = [
            f"{fence_}{s.language if s.language not in ('text', '') else ''}",
            *s.text.rstrip("\n").split("\n"),
            fence_,
        ]
        lines += [f"{indent}{x}" if x else x for x in body]
    return lines


def _entries(spans: Sequence[PacketSpan]) -> list[tuple[int, PacketSpan, list[PacketSpan]]]:
    """The spans as answers, numbered as the panel numbers them (entry_ranks): each answer once, at
    its first chunk's place, with the later chunks of its symbol (`continues`) under it."""
    groups: dict[int, tuple[PacketSpan, list[PacketSpan]]] = {}
    for rank, s in zip(entry_ranks(spans), spans, strict=True):
        if rank in groups:
            groups[rank][1].append(s)
        else:
            groups[rank] = (s, [])
    return [(rank, head, rest) for rank, (head, rest) in groups.items()]


# Declared spans lead (the graph's authority), so a declared #1 may score below a retrieved #2.
ORDER_NOTE = "Declared spans first, in the workflow's operation order; retrieved spans after them, by score."


def mixed_authority(p: Packet) -> bool:
    """Both declared and retrieved spans: the list is in two orders, which ORDER_NOTE says."""
    return {"declared", "retrieved"} <= {s.authority for s in p.spans}


def graph_state_lines(graph: GraphState) -> list[str]:
    """The graph's loud lines under the selection: local overrides, and a graph that does not validate."""
    out = []
    if graph.local_overrides:
        out.append(
            f"> **Local override**: graph files not tracked by the repository are loaded"
            f" (LAMINA_LOCAL_WORKFLOWS=1): {', '.join(graph.local_overrides)}"
        )
    if graph.state != "current":
        if out:
            out.append(">")  # two paragraphs of one quote, not one run-on line
        out.append(
            f"> WARNING: the workflow graph does not validate; this packet uses the last valid graph"
            f" {graph.version[:12]}. Fix:"
        )
        out += [f"> - {inline(x)}" for x in graph.problems]  # one item per problem
    return out


def footer_lines(
    omitted: Sequence[Omitted], r: RetrievalState, graph: GraphState, latency_ms: float, notes: Sequence[str]
) -> list[str]:
    """What follows the spans: the omitted tails, the retrieval state and the notes (the packet's
    budget pays for these lines too: index.packet reserves them before it packs the spans)."""
    out = []
    for o in omitted:
        ids = ", ".join(o.ids[:MAX_IDS_SHOWN]) + (", …" if len(o.ids) > MAX_IDS_SHOWN else "")
        what = "spans" if o.what == "span" else "span texts"
        out.append(f"{o.tail} {what} omitted ({o.reason}): {ids}")
    out.append("")
    out.append(
        f"## Retrieval: {r.retrieval}, generation {r.generation}, {r.freshness}"
        + (f", {r.pending_embeddings} embeddings pending" if r.pending_embeddings else "")
    )
    out.append(
        f"model {r.model_digest[:12]} · index {r.membership_digest[:12]} · graph {graph.version[:12]}"
        f" ({graph.state}) · {latency_ms:.0f} ms"
    )
    out += [f"- note: {inline(n)}" for n in [*r.notes, *notes]]  # paths and names in notes, as in reasons
    return out


def render_markdown(p: Packet) -> str:
    out = [head_markdown(p.schema, p.task, p.selection, p.graph)]
    for w in p.workflows:
        out.append("")
        out.append(closure_markdown(w))
    out.append("")
    src = "workflow localization" if p.span_source == "workflow" else "plain retrieval of the task (no workflow)"
    b = p.budget
    out.append(f"## Spans ({len(p.spans)}, from {src}; {b.used}/{b.limit} tokens, {b.mode})")
    if mixed_authority(p):
        out.append(ORDER_NOTE)
    for rank, head, rest in _entries(p.spans):  # a later chunk of a symbol: under its answer, indented
        out += _span(f"{rank}.", head)
        for s in rest:
            out += _span("- continued:", s, indent="   ")
    out += footer_lines(p.omitted, p.retrieval, p.graph, p.latency_ms, p.notes)
    return "\n".join(out) + "\n"
