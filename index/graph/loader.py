"""Read `.lamina/workflows/**/*.y{a,}ml` into a validated, digested Graph.

YAML is composed into nodes first so every mapping key and list item keeps
its 1-based line; values are then decoded one node at a time with msgspec,
so one bad node reports its own problem without hiding the others.
"""

from __future__ import annotations

import difflib
import os
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from index.conflicts import conflict_lines
from index.gitinfo import run_git
from index.graph.digest import graph_version
from index.graph.schema import NODE_KINDS, Graph, GraphProblem, SourceLocation
from index.graph.validate import UNKNOWN_REFERENCE, NodeRecord, check_records, fields_of, has_errors, line_for
from index.lines import line_at, line_count

MAX_GRAPH_FILE_BYTES = 2 * 1024 * 1024
# A graph file's YAML, aliases expanded: bounds that no hand-written graph comes near, and that
# keep an alias bomb (a few lines expanding to billions of nodes) or a 10,000-deep nesting from
# hanging or overflowing the walks below (every index sync reads the graph).
MAX_GRAPH_NODES = 1_000_000
MAX_GRAPH_DEPTH = 64
YAML_SUFFIXES = (".yaml", ".yml")
# A top-level key with this prefix is no node kind: it holds anchors for merge keys.
EXTENSION_PREFIX = "x-"

if TYPE_CHECKING:  # yaml is imported where a file is parsed: a cached graph (every query) needs none
    import yaml

LineMap = dict[tuple[Any, ...], int]

_PATH_STEP = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]")
_AT = re.compile(r"\s*-\s*at\s*`\$([^`]*)`\s*$")
_UNKNOWN = re.compile(r"unknown field `([^`]*)`")


LOCAL_OPT_IN_ENV = "LAMINA_LOCAL_WORKFLOWS"


def local_opt_in() -> bool:
    """Whether graph files the repository does not track are loaded (an explicit, visible choice)."""
    return os.environ.get(LOCAL_OPT_IN_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def load_graph(
    workspace: Path, workflows_dir: str = ".lamina/workflows", *, local: bool | None = None
) -> tuple[Graph | None, list[GraphProblem]]:
    """The graph and every problem found; the graph is None if any problem is an error.

    In a git repository the graph is the files the repository tracks (their working-tree
    content): an untracked or ignored file would otherwise steer selection unseen (issue 13
    #8). `local=True` (default: LAMINA_LOCAL_WORKFLOWS=1) also loads those files and lists
    them in `Graph.local_files`; without it each one is a warning naming the opt-in.
    """
    workspace = Path(workspace)
    root = workspace / workflows_dir
    use_local = local_opt_in() if local is None else local
    problems: list[GraphProblem] = []
    records: list[NodeRecord] = []
    files = _graph_files(workspace, root)
    tracked = tracked_paths(workspace, workflows_dir)
    local_files: list[str] = []
    unread = False  # a file with errors and no node read from it (a YAML syntax error, say)
    for path, rel in files:
        if tracked is not None and rel not in tracked:
            if not use_local:
                problems.append(
                    GraphProblem(
                        rel,
                        1,
                        "warning",
                        "not tracked by the repository: not part of the graph"
                        f" (set {LOCAL_OPT_IN_ENV}=1 to load it as a local override)",
                    )
                )
                continue
            local_files.append(rel)
        file_records, file_problems = parse_graph_file(path, rel)
        records.extend(file_records)
        problems.extend(file_problems)
        if not file_records and has_errors(file_problems):
            unread = True
    checked = check_records(records)
    if unread:  # a file that does not parse defines nothing: other files' references to it are its echo
        checked = [p for p in checked if not UNKNOWN_REFERENCE.search(p.reason)]
    problems.extend(checked)
    problems = sorted(set(problems), key=lambda p: (p.file, p.line, p.severity, p.reason))
    if has_errors(problems):
        return None, problems
    graph = build_graph(records)
    graph.local_files = local_files
    return graph, problems


def tracking_signature(root: Path) -> tuple[tuple[str, int, int], ...]:
    """The git index's stat and the local opt-in: `git add` or the opt-in changes what the graph is
    without touching a graph file, so caches keyed by the files' stats add this."""
    out = [("local", int(local_opt_in()), 0)]
    for parent in (root, *root.parents):
        git = parent / ".git"
        if git.exists():
            idx = git / "index" if git.is_dir() else None
            if idx is not None and idx.exists():
                st = idx.stat()
                out.append((idx.as_posix(), st.st_size, st.st_mtime_ns))
            break
    return tuple(out)


def tracked_paths(workspace: Path, workflows_dir: str) -> set[str] | None:
    """Workspace-relative paths git tracks under `workflows_dir`; None outside a git repository."""
    ws = Path(workspace)
    # gitinfo's git: read-only (no optional locks, transports or automatic maintenance), time-bounded
    if not (ws / ".git").exists() and run_git(ws, "rev-parse", "--is-inside-work-tree") is None:
        return None
    out = run_git(ws, "-c", "core.quotepath=off", "ls-files", "-z", "--", workflows_dir)
    if out is None:
        return None
    # ls-files prints paths relative to the cwd (the workspace); graph files are named relative to it too
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


def load_partial_graph(workspace: Path, workflows_dir: str = ".lamina/workflows") -> Graph:
    """The nodes of every graph file that parses cleanly on its own, for an editor to keep showing
    while another file is broken (cross-file checks are the full load's job; the first id wins)."""
    workspace = Path(workspace)
    records: list[NodeRecord] = []
    seen: set[tuple[str, str]] = set()
    for path, rel in _graph_files(workspace, workspace / workflows_dir):
        file_records, file_problems = parse_graph_file(path, rel)
        if has_errors(file_problems):
            continue
        for rec in file_records:
            if (rec.kind, rec.node.id) not in seen:
                seen.add((rec.kind, rec.node.id))
                records.append(rec)
    return build_graph(records)


def build_graph(records: Iterable[NodeRecord]) -> Graph:
    """Assemble validated records (ids already checked unique) into a Graph."""
    graph = Graph()
    tables: dict[str, dict[str, Any]] = {kind: {} for kind in NODE_KINDS}
    locations: dict[str, SourceLocation] = {}
    for rec in records:
        tables[rec.kind][rec.node.id] = rec.node
        locations[rec.node.id] = SourceLocation(rec.file, rec.line(()))
        if rec.kind == "workflows":
            for i, op in enumerate(rec.node.operations):
                key = f"{rec.node.id}/{op.id}"
                locations[key] = SourceLocation(rec.file, rec.line(("operations", i)))
                for k in range(len(op.implemented_by)):
                    sub = ("operations", i, "implemented_by", k)
                    locations[f"{key}/implemented_by/{k}"] = SourceLocation(rec.file, rec.line(sub))
    for kind, table in tables.items():
        setattr(graph, kind, dict(sorted(table.items())))
    graph.locations = dict(sorted(locations.items()))
    graph.version = graph_version(graph)
    return graph


def _graph_files(workspace: Path, root: Path) -> list[tuple[Path, str]]:
    if not root.is_dir():
        return []
    base = workspace.resolve()
    found: list[tuple[Path, str]] = []
    for path in root.rglob("*"):
        if path.suffix.lower() not in YAML_SUFFIXES or not path.is_file():
            continue
        try:
            rel = path.resolve().relative_to(base).as_posix()
        except ValueError:  # a symlink leading out of the workspace
            continue
        found.append((path, rel))
    return sorted(found, key=lambda item: item[1])


def parse_graph_file(path: Path, rel: str) -> tuple[list[NodeRecord], list[GraphProblem]]:
    """Decode one file into node records; problems carry `rel` and a 1-based line."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [], [GraphProblem(rel, 1, "error", f"cannot read file: {exc.strerror or exc}")]
    if len(raw) > MAX_GRAPH_FILE_BYTES:
        return [], [GraphProblem(rel, 1, "error", f"file larger than {MAX_GRAPH_FILE_BYTES} bytes")]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_at(raw, exc.start)
        return [], [GraphProblem(rel, line, "error", "file is not valid UTF-8")]
    return parse_graph_text(text, rel)


def parse_graph_text(text: str, rel: str) -> tuple[list[NodeRecord], list[GraphProblem]]:
    import yaml

    problems: list[GraphProblem] = []
    conflicts = conflict_lines(text.encode("utf-8", "surrogatepass"))
    if conflicts:  # YAML would fail a line or two further on, on whichever side it met first
        where = ", ".join(map(str, conflicts[:5]))
        return [], [GraphProblem(rel, conflicts[0], "error", f"unresolved merge conflict (<<<<<<< at line {where})")]
    at = _editor_lines(text)
    try:
        data, lines = _compose(text, rel, problems, at)
    except RecursionError:  # PyYAML's pure-Python composer, on a deep block nesting
        return [], [GraphProblem(rel, 1, "error", f"nested deeper than {MAX_GRAPH_DEPTH} levels")]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = at(mark) if mark is not None else 1
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context = getattr(exc, "context", None)
        reason = f"YAML syntax error: {what}" + (f" ({context})" if context else "")
        return [], [GraphProblem(rel, line, "error", reason)]
    if data is None:
        return [], problems
    if not isinstance(data, dict):
        problems.append(
            GraphProblem(rel, 1, "error", f"top level must be a mapping of node kinds, got {_type_name(data)}")
        )
        return [], problems
    records: list[NodeRecord] = []
    for key, value in data.items():
        key_line = lines.get((key,), 1)
        if isinstance(key, str) and key.startswith(EXTENSION_PREFIX):
            continue  # a place for YAML anchors the nodes merge in (`<<: *defaults`), as in compose files
        if key not in NODE_KINDS:
            hint = _suggest(str(key), NODE_KINDS)
            problems.append(GraphProblem(rel, key_line, "error", f"unknown top-level key '{key}'{hint}"))
            continue
        if value is None:
            continue
        if not isinstance(value, list):
            problems.append(
                GraphProblem(rel, key_line, "error", f"'{key}' must be a list of nodes, got {_type_name(value)}")
            )
            continue
        for i, item in enumerate(value):
            base = (key, i)
            label = f"{key}[{i}]"
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                label += f" (id '{item['id']}')"
            unknown = _unknown_fields(key, item, lines, base)
            for line, reason in unknown:
                problems.append(GraphProblem(rel, line, "error", f"{label}: {reason}"))
            try:
                node = msgspec.convert(item, type=NODE_KINDS[key], strict=True)
            except msgspec.ValidationError as exc:
                line, reason = _explain(str(exc), lines, base)
                if not (unknown and reason.startswith("unknown field")):
                    problems.append(GraphProblem(rel, line, "error", f"{label}: {reason}"))
                continue
            records.append(NodeRecord(key, node, rel, lines, base))
    return records, problems


def _compose(text: str, rel: str, problems: list[GraphProblem], at: LineOf) -> tuple[Any, LineMap]:
    """Python data plus a line for every key path; duplicate keys become problems."""
    import yaml

    deep = _flow_too_deep(text)
    if deep is not None:  # libyaml's composer recurses in C: 100,000 brackets overflow its stack
        problems.append(GraphProblem(rel, deep, "error", f"nested deeper than {MAX_GRAPH_DEPTH} levels"))
        return None, {}
    # libyaml when present (10x faster); both keep marks, so lines are identical.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        shape = _shape_problem(node, at)
        if shape is not None:
            problems.append(GraphProblem(rel, shape[0], "error", shape[1]))
            return None, {}
        own = _own_keys(node, at)  # constructing folds merged pairs (`<<: *defaults`) into node.value
        try:
            data = loader.construct_document(node)
        except (ValueError, OverflowError) as exc:  # a date that does not exist, an int past Python's digit limit
            line = _unreadable_scalar(loader, node, at)
            why = str(exc).split(";")[0]  # not Python's advice to raise its digit limit
            problems.append(
                GraphProblem(rel, line, "error", f"value cannot be read: {why} (quote it to keep it as text)")
            )
            return None, {}
    finally:
        loader.dispose()
    lines: LineMap = {}
    _walk(node, data, (), lines, rel, problems, at, own)
    return data, lines


def _own_keys(root: yaml.Node, at: LineOf) -> dict[int, tuple[frozenset[int], int]]:
    """Each mapping node's own key nodes (by id), before a merge key's pairs join them (a key
    written beside `<<: *defaults` overrides the merged one; it is no duplicate), and the line of
    its first merge key (0: none)."""
    import yaml

    own: dict[int, tuple[frozenset[int], int]] = {}
    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            if id(node) in own:
                continue  # an alias of a mapping already read
            merge = next((at(k.start_mark) for k, _ in node.value if k.tag == "tag:yaml.org,2002:merge"), 0)
            own[id(node)] = (frozenset(id(k) for k, _ in node.value), merge)
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return own


def _unreadable_scalar(loader: Any, root: yaml.Node, at: LineOf) -> int:
    """The line of the first scalar the loader cannot turn into a value (only on that failure)."""
    import yaml

    stack: list[yaml.Node] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            loader.constructed_objects, loader.recursive_objects = {}, {}  # the failed pass left its marks
            try:
                loader.construct_object(node, deep=True)
            except (ValueError, OverflowError, yaml.YAMLError):
                return at(node.start_mark)
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in reversed(node.value) for n in reversed(pair))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
    return 1


_BRACKET = re.compile(r"[\[\]{}]")
# YAML 1.1 (PyYAML and libyaml alike) also ends a line at NEL, U+2028 and U+2029; editors and the
# LSP end one only at \n, \r\n and a lone \r (index.lines). A mark's line counts the former.
_YAML_ONLY_BREAKS = re.compile("[\x85\u2028\u2029]")
LineOf = Callable[["yaml.Mark"], int]


def _editor_lines(text: str) -> LineOf:
    """A YAML mark of `text` -> the 1-based line an editor shows it on (`file:line` in problems and
    `defined_at` must open where the user reads it). The mark's line minus the YAML-only breaks
    before it; with none in the file (nearly always), the mark's own line."""
    odd = [m.start() for m in _YAML_ONLY_BREAKS.finditer(text)]
    if not odd:
        return lambda mark: int(mark.line) + 1
    return lambda mark: int(mark.line) + 1 - bisect_left(odd, mark.index)


def _flow_too_deep(text: str) -> int | None:
    """The line where `[`/`{` open deeper than MAX_GRAPH_DEPTH, read before any YAML parser.

    Counts every bracket, quoted or not: a string holding 64 more opening brackets than closing
    ones is refused too, which no graph needs."""
    level = 0
    for m in _BRACKET.finditer(text):
        if m.group() in "[{":
            level += 1
            if level > MAX_GRAPH_DEPTH:
                return line_count(text[: m.start()])
        elif level:
            level -= 1
    return None


def _shape_problem(root: yaml.Node, at: LineOf) -> tuple[int, str] | None:
    """(line, reason) when the document, its aliases expanded, is deeper than MAX_GRAPH_DEPTH or
    has more than MAX_GRAPH_NODES values; None otherwise. Iterative, and linear in the distinct
    nodes: an alias is the same node object, measured once."""
    import yaml

    size: dict[int, int] = {}  # -1 while on the current path: an alias to it would recurse
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, level, done = stack.pop()
        if isinstance(node, yaml.MappingNode):
            kids = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        else:
            kids = []
        if done:
            size[id(node)] = 1 + sum(size[id(k)] for k in kids)
            if size[id(node)] > MAX_GRAPH_NODES:
                return at(node.start_mark), f"more than {MAX_GRAPH_NODES:,} values once YAML aliases are expanded"
            continue
        if id(node) in size:  # an alias of a node already measured
            continue
        if level > MAX_GRAPH_DEPTH:
            return at(node.start_mark), f"nested deeper than {MAX_GRAPH_DEPTH} levels"
        size[id(node)] = -1
        stack.append((node, level, True))
        for kid in kids:
            if size.get(id(kid)) == -1:
                return at(node.start_mark), "a YAML alias refers to a node that contains it"
            stack.append((kid, level + 1, False))
    return None


def _walk(
    node: yaml.Node,
    data: Any,
    path: tuple[Any, ...],
    lines: LineMap,
    rel: str,
    problems: list[GraphProblem],
    at: LineOf,
    own: dict[int, tuple[frozenset[int], int]],
) -> None:
    import yaml

    lines.setdefault(path, at(node.start_mark))
    if isinstance(node, yaml.MappingNode) and isinstance(data, dict):
        by_text = {str(k): k for k in data}
        seen: dict[str, int] = {}
        mine = own.get(id(node))
        pairs = node.value
        if mine is not None and any(id(k) not in mine[0] for k, _ in pairs):
            # merged pairs joined (prepended): the node's own keys first, they override
            pairs = [p for p in pairs if id(p[0]) in mine[0]] + [p for p in pairs if id(p[0]) not in mine[0]]
        for key_node, value_node in pairs:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            text = key_node.value
            merged = mine is not None and id(key_node) not in mine[0]
            # a merged key is placed at the node's `<<:` line: a problem with it (a duplicate id) is
            # this node's, and the anchor it came from is one jump away
            line = mine[1] if merged and mine is not None else at(key_node.start_mark)
            if text in seen:
                if not merged:  # a merged key is overridden, not repeated
                    problems.append(
                        GraphProblem(rel, line, "error", f"duplicate key '{text}' (first at line {seen[text]})")
                    )
                continue
            seen[text] = line
            key = by_text.get(text, text)
            lines[path + (key,)] = line
            if key in data:
                _walk(value_node, data[key], path + (key,), lines, rel, problems, at, own)
    elif isinstance(node, yaml.SequenceNode) and isinstance(data, list):
        for i, (item_node, item) in enumerate(zip(node.value, data, strict=True)):
            _walk(item_node, item, path + (i,), lines, rel, problems, at, own)


def _unknown_fields(kind: str, item: Any, lines: LineMap, base: tuple[Any, ...]) -> list[tuple[int, str]]:
    """Every unknown key of a node and of its operations (msgspec stops at the first)."""
    out: list[tuple[int, str]] = []

    def scan(obj: Any, prefix: tuple[Any, ...]) -> None:
        if not isinstance(obj, dict):
            return
        allowed = fields_of(kind, prefix)
        for k in obj:
            if str(k) not in allowed:
                where = f" (in {_fmt_path(prefix)})" if prefix else ""
                hint = _suggest(str(k), allowed)
                out.append((line_for(lines, base + prefix + (k,)), f"unknown field '{k}'{hint}{where}"))

    scan(item, ())
    if kind == "workflows" and isinstance(item, dict) and isinstance(item.get("operations"), list):
        for j, op in enumerate(item["operations"]):
            scan(op, ("operations", j))
    return out


def _explain(message: str, lines: LineMap, base: tuple[Any, ...]) -> tuple[int, str]:
    """Turn a msgspec validation message into (line, reason) relative to one node."""
    sub: list[Any] = []
    at = _AT.search(message)
    if at:
        message = message[: at.start()]
        for m in _PATH_STEP.finditer(at.group(1)):
            sub.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
    unknown = _UNKNOWN.search(message)
    if unknown:
        sub.append(unknown.group(1))
    where = _fmt_path(sub)
    reason = message[0].lower() + message[1:] if message else "invalid value"
    if unknown:
        reason = f"unknown field '{unknown.group(1)}'"
        reason += _suggest(unknown.group(1), fields_of(base[0], sub[:-1]))
    if where and not unknown:
        reason += f" (at {where})"
    elif unknown and len(sub) > 1:
        reason += f" (in {_fmt_path(sub[:-1])})"
    return line_for(lines, base + tuple(sub)), reason


def _fmt_path(path: Iterable[Any]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path).lstrip(".")


def _suggest(word: str, options: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _type_name(value: Any) -> str:
    names: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)
