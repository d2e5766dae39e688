"""Cross-node checks of the product graph: ids, aliases, references, links.

Per-node shape (types, unknown fields, enum values) is checked while
decoding (loader.py); this module checks what needs the whole graph. Every
problem names a file and a 1-based line, so an editor can underline it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from index.errors import GraphInvalid
from index.graph.phrases import phrase_words
from index.graph.schema import NODE_KINDS, Graph, GraphProblem, Operation

ID_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")

SINGULAR = {
    "workflows": "workflow",
    "actors": "actor",
    "personas": "persona",
    "entities": "entity",
    "surfaces": "surface",
    "states": "state",
    "invariants": "invariant",
    "scenarios": "scenario",
    "risks": "risk",
    "proof_requirements": "proof requirement",
}


def a_kind(kind: str) -> str:
    """`an entity`, `a workflow`: the kind with its article, for messages."""
    word = SINGULAR[kind]
    return ("an " if word[0] in "aeiou" else "a ") + word


# Workflow list field -> kind its entries must name.
WORKFLOW_REFS = {
    "actors": "actors",
    "personas": "personas",
    "entities": "entities",
    "surfaces": "surfaces",
    "states": "states",
    "invariants": "invariants",
    "scenarios": "scenarios",
    "risks": "risks",
    "proof_requirements": "proof_requirements",
    "references": "workflows",
}
# The reason `check_records` gives a reference to an id no node has ("...: unknown actor 'clerk'"):
# a file that does not parse defines nothing, and the loader leaves these out while one does not.
UNKNOWN_REFERENCE = re.compile(r": unknown [a-z_ ]+ '")
OPERATION_REFS = {"actor": "actors", "authority": "actors", "from_state": "states", "to_state": "states"}
NODE_REFS = {"personas": {"actor": "actors"}, "states": {"entity": "entities"}}


class NodeRecord:
    """One decoded node plus where it came from (internal to loading)."""

    __slots__ = ("kind", "node", "file", "lines", "base")

    def __init__(self, kind: str, node: Any, file: str, lines: dict[tuple[Any, ...], int], base: tuple[Any, ...]):
        self.kind = kind
        self.node = node
        self.file = file
        self.lines = lines
        self.base = base

    def line(self, sub: Sequence[Any] = ()) -> int:
        return line_for(self.lines, self.base + tuple(sub))


def line_for(lines: Mapping[tuple[Any, ...], int], path: tuple[Any, ...]) -> int:
    """Line of the deepest known prefix of `path` (1 when nothing is known)."""
    for end in range(len(path), -1, -1):
        line = lines.get(path[:end])
        if line is not None:
            return line
    return 1


def fields_of(kind: str, prefix: Sequence[Any] = ()) -> list[str]:
    """Field names valid at `prefix` inside a node of `kind` (for typo hints)."""
    cls: Any = NODE_KINDS.get(kind)
    if kind == "workflows" and prefix and prefix[0] == "operations":
        cls = Operation
    return list(getattr(cls, "__struct_fields__", ()))


def has_errors(problems: Iterable[GraphProblem]) -> bool:
    return any(p.severity == "error" for p in problems)


def format_problems(problems: Iterable[GraphProblem]) -> str:
    """One `file:line: reason` per problem (warnings say so), in file/line order."""
    out = []
    for p in sorted(problems, key=lambda p: (p.file, p.line, p.severity, p.reason)):
        tag = "" if p.severity == "error" else f"{p.severity}: "
        out.append(f"{p.file}:{p.line}: {tag}{p.reason}")
    return "\n".join(out)


def graph_invalid(problems: Sequence[GraphProblem], workflows_dir: str = ".lamina/workflows") -> GraphInvalid:
    """The LAMINA_GRAPH_INVALID error for a failed load, listing every error."""
    errors = [p for p in problems if p.severity == "error"]
    return GraphInvalid(
        f"workflow graph has {len(errors)} error(s):\n{format_problems(errors)}",
        f"fix the listed lines under {workflows_dir} (a running server keeps serving the last valid graph meanwhile)",
    )


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, sorted(set(options)), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def check_records(records: Sequence[NodeRecord]) -> list[GraphProblem]:
    problems: list[GraphProblem] = []

    def err(rec: NodeRecord, sub: Sequence[Any], reason: str, severity: str = "error") -> None:
        problems.append(GraphProblem(rec.file, rec.line(sub), severity, reason))

    # Ids: present, kebab-case, unique across every kind.
    owner: dict[str, NodeRecord] = {}
    ids_by_kind: dict[str, set[str]] = {kind: set() for kind in NODE_KINDS}
    for rec in records:
        node_id = rec.node.id
        label = SINGULAR[rec.kind]
        if not node_id.strip():
            err(rec, ("id",), f"{label} has an empty id")
            continue
        if not ID_PATTERN.match(node_id):
            err(rec, ("id",), f"{label} id '{node_id}' is not kebab-case (lower-case letters, digits, single '-')")
        first = owner.get(node_id)
        if first is not None:
            err(
                rec,
                ("id",),
                f"duplicate id '{node_id}': already {a_kind(first.kind)} at {first.file}:{first.line(('id',))}",
            )
            continue
        owner[node_id] = rec
        ids_by_kind[rec.kind].add(node_id)

    def check_ref(rec: NodeRecord, sub: Sequence[Any], value: str, expected: str, what: str) -> None:
        if not value.strip():
            err(rec, sub, f"{what}: empty reference")
            return
        if value in ids_by_kind[expected]:
            return
        other = owner.get(value)
        if other is not None:
            err(rec, sub, f"{what}: '{value}' is {a_kind(other.kind)}, not {a_kind(expected)}")
        else:
            err(rec, sub, f"{what}: unknown {SINGULAR[expected]} '{value}'{_suggest(value, ids_by_kind[expected])}")

    # Workflow aliases: unique as phrases across workflows, and never another workflow's id.
    id_phrases: dict[tuple[str, ...], str] = {}
    for rec in records:
        if rec.kind == "workflows" and rec.node.id.strip():
            id_phrases.setdefault(phrase_words(rec.node.id), rec.node.id)
    alias_owner: dict[tuple[str, ...], tuple[str, NodeRecord, int]] = {}
    for rec in records:
        aliases = getattr(rec.node, "aliases", None)
        if not aliases:
            continue
        own: set[tuple[str, ...]] = set()
        for i, alias in enumerate(aliases):
            sub = ("aliases", i)
            words = phrase_words(alias)
            if not words:
                err(
                    rec,
                    sub,
                    f"{SINGULAR[rec.kind]} '{rec.node.id}': alias '{alias}' has no content words (only function words or single letters)",
                )
                continue
            if words in own:
                err(rec, sub, f"alias '{alias}' repeated in '{rec.node.id}'", "warning")
                continue
            own.add(words)
            if rec.kind != "workflows":
                continue
            if words == phrase_words(rec.node.id):
                err(rec, sub, f"alias '{alias}' is the workflow's own id", "warning")
                continue
            id_holder = id_phrases.get(words)
            if id_holder is not None and id_holder != rec.node.id:
                err(rec, sub, f"alias '{alias}' of workflow '{rec.node.id}' is the id of workflow '{id_holder}'")
                continue
            prior = alias_owner.get(words)
            if prior is not None and prior[0] != rec.node.id:
                err(
                    rec,
                    sub,
                    f"alias '{alias}' of workflow '{rec.node.id}' is already an alias of workflow "
                    f"'{prior[0]}' at {prior[1].file}:{prior[1].line(('aliases', prior[2]))} (case-insensitive)",
                )
                continue
            alias_owner[words] = (rec.node.id, rec, i)

    # References.
    for rec in records:
        node = rec.node
        for field, expected in NODE_REFS.get(rec.kind, {}).items():
            value = getattr(node, field)
            if value:
                check_ref(rec, (field,), value, expected, f"{SINGULAR[rec.kind]} '{node.id}' {field}")
        if rec.kind != "workflows":
            continue
        for field, expected in WORKFLOW_REFS.items():
            seen: set[str] = set()
            for i, value in enumerate(getattr(node, field)):
                what = f"workflow '{node.id}' {field}"
                if value in seen:
                    err(rec, (field, i), f"{what}: '{value}' listed twice", "warning")
                    continue
                seen.add(value)
                if field == "references" and value == node.id:
                    err(rec, (field, i), f"{what}: a workflow cannot reference itself")
                    continue
                check_ref(rec, (field, i), value, expected, what)
        op_ids: dict[str, int] = {}
        for j, op in enumerate(node.operations):
            base = ("operations", j)
            what = f"workflow '{node.id}' operation '{op.id}'"
            if not op.id.strip():
                err(rec, base + ("id",), f"workflow '{node.id}' operation #{j + 1} has an empty id")
            elif not ID_PATTERN.match(op.id):
                err(rec, base + ("id",), f"{what}: id is not kebab-case")
            elif op.id in op_ids:
                err(rec, base + ("id",), f"{what}: duplicate operation id (first at line {op_ids[op.id]})")
            else:
                op_ids[op.id] = rec.line(base + ("id",))
            for field, expected in OPERATION_REFS.items():
                value = getattr(op, field)
                if value:
                    check_ref(rec, base + (field,), value, expected, f"{what} {field}")
            for k, entry in enumerate(op.implemented_by):
                reason = implemented_by_syntax(entry)
                if reason:
                    err(rec, base + ("implemented_by", k), f"{what} implemented_by '{entry}': {reason}")
    return problems


def implemented_by_syntax(entry: str) -> str:
    """Why an `implemented_by` entry is malformed, or "" when it is well formed."""
    path, sep, symbol = entry.partition("::")
    if not path.strip():
        return "empty path"
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path) or "\\" in path:
        return "path must be workspace-relative POSIX (no leading '/', no drive, no '\\')"
    if any(part in ("..", "") for part in path.split("/")) or path.startswith("./"):
        return "path must not contain '..', '.' or empty segments"
    if sep and (not symbol.strip() or "::" in symbol):
        return "expected 'path' or 'path::Qualified.symbol'"
    return ""


def check_implemented_by(graph: Graph, symbols: Mapping[str, Sequence[str]]) -> list[GraphProblem]:
    """Warnings for `implemented_by` entries the index cannot resolve, with the nearest match."""
    problems: list[GraphProblem] = []
    all_paths = sorted(symbols)
    for wf_id, wf in sorted(graph.workflows.items()):
        for op in wf.operations:
            for k, entry in enumerate(op.implemented_by):
                loc = graph.locations.get(f"{wf_id}/{op.id}/implemented_by/{k}") or graph.locations.get(
                    f"{wf_id}/{op.id}"
                )
                file, line = (loc.file, loc.line) if loc else ("", 1)
                reason = _unresolved(entry, symbols, all_paths)
                if reason:
                    problems.append(
                        GraphProblem(
                            file,
                            line,
                            "warning",
                            f"workflow '{wf_id}' operation '{op.id}' implemented_by '{entry}': {reason}",
                        )
                    )
    return problems


def _unresolved(entry: str, symbols: Mapping[str, Sequence[str]], all_paths: list[str]) -> str:
    path, sep, symbol = entry.partition("::")
    if path not in symbols:
        close = difflib.get_close_matches(path, all_paths, n=1, cutoff=0.5)
        hint = f"; nearest indexed file '{close[0]}'" if close else ""
        return f"file not in the index{hint}"
    if not sep:
        return ""
    defined = list(symbols[path])
    if symbol in defined:
        return ""
    tail = symbol.rsplit(".", 1)[-1]
    suffix = sorted(s for s in defined if s.endswith("." + symbol) or s.rsplit(".", 1)[-1] == tail)
    close = suffix[:1] or difflib.get_close_matches(symbol, sorted(set(defined)), n=1, cutoff=0.5)
    if close:
        return f"symbol not found in {path}; nearest '{path}::{close[0]}'"
    elsewhere = sorted(p for p in all_paths if symbol in symbols[p])
    if elsewhere:
        return f"symbol not found in {path}; defined in '{elsewhere[0]}::{symbol}'"
    return f"symbol not found in {path}"
