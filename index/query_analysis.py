"""Read a pasted bug report the way an engineer does.

People paste tracker issues, CI logs and tracebacks. A bag of words treats the
`pip list` dump like the one sentence that says what is wrong; this module
splits the report into signals the ranker can use with visible reasons:
stack frames (mapped to workspace files by path suffix in index.retrieval.paths), error
messages (matched to the string literal at the raise site by index.retrieval.literals), identifiers, the code the
reporter pasted (evidence) and the prose around it (intent, what the dense leg
embeds). Template boilerplate and version dumps are dropped and listed.

Everything here is a pure, deterministic function of its input: regexes and
small state machines, no I/O, fast enough to run on every query.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence

import msgspec

from index.change_refs import ChangeRef, report_refs

__all__ = [
    "StackFrame",
    "Identifier",
    "CodeLink",
    "QueryAnalysis",
    "analyze_query",
    "code_links",
    "code_pointers",
    "path_mentions",
    "signature_callees",
]


class StackFrame(msgspec.Struct, frozen=True):
    raw_path: str  # as written in the report (Java: package path + file name)
    line: int | None
    function: str
    language: str
    order: int  # 0 = outermost frame; the deepest frame has the highest order


class Identifier(msgspec.Struct, frozen=True):
    text: str
    # backtick | dotted | camel | snake | flag | config_key | path | code
    # Dotted kinds carry the whole chain (`xr.where`); match on its tail parts.
    kind: str


class CodeLink(msgspec.Struct, frozen=True):
    """A permalink into a repository's source tree (GitHub, GitLab, Gitea, Bitbucket): the path
    below the ref as the URL spells it, and the lines it highlights (None: the whole file)."""

    path: str
    start_line: int | None = None
    end_line: int | None = None
    # What the reporter wrote instead of a URL, as written: a pointer in backticks (`sessions.py:313`;
    # its path may be a bare file name, index.retrieval.paths.link_target) or a path mentioned with
    # its directory (`requests/sessions.py`: no lines, the whole file); "" for a permalink.
    written: str = ""

    def kind(self) -> str:
        """ "link" (a permalink), "pointer" (a `path:line` written) or "mention" (a path written, no lines):
        what switches it (AnalyserConfig links / pointers / mentions) and how reasons word it."""
        if not self.written:
            return "link"
        return "pointer" if self.start_line is not None else "mention"

    def covers(self, start_line: int, end_line: int) -> bool:
        """The linked lines overlap lines `start_line`-`end_line` (a whole-file link covers none)."""
        if self.start_line is None:
            return False
        return start_line <= (self.end_line or self.start_line) and self.start_line <= end_line

    def label(self) -> str:
        """How reasons and `--explain` name it: `pkg/mod.py#L3-L5`, or the pointer as written."""
        return f"`{self.written}`" if self.written else f"{self.path}{self.fragment()}"

    def fragment(self) -> str:
        """`#L3`, `#L3-L5`, or "" for a whole-file link: how reasons and `--explain` name the lines."""
        if self.start_line is None:
            return ""
        tail = f"-L{self.end_line}" if self.end_line is not None and self.end_line != self.start_line else ""
        return f"#L{self.start_line}{tail}"


class QueryAnalysis(msgspec.Struct, frozen=True):
    frames: list[StackFrame]
    error_messages: list[str]
    exception_types: list[str]
    identifiers: list[Identifier]
    intent_text: str
    code_text: str
    dropped: list[str]
    links: list[CodeLink] = []
    changes: list[ChangeRef] = []  # past changes the report names (index.change_refs)
    # Markup directives the report shows (`.. include::`, `.. py:function::`), in order: a report
    # about a documentation tool's directive names it this way, and the code that registers the
    # name implements it (index.retrieval.candidates.option_sites).
    markup: list[str] = []


# ---------------------------------------------------------------------------
# Small shared vocabularies
# ---------------------------------------------------------------------------

_CODE_EXT_LANG = {
    "py": "python",
    "pyx": "python",
    "pyi": "python",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascript",
    "ts": "typescript",
    "tsx": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "java": "java",
    "kt": "kotlin",
    "kts": "kotlin",
    "scala": "scala",
    "groovy": "groovy",
    "go": "go",
    "rs": "rust",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "cs": "csharp",
    "rb": "ruby",
    "php": "php",
    "swift": "swift",
}
_EXT_ALT = "|".join(sorted(_CODE_EXT_LANG, key=len, reverse=True))
_FAMILY = {"typescript": "javascript", "kotlin": "java", "scala": "java", "groovy": "java"}
# Languages whose stack traces print the innermost frame first.
_INNERMOST_FIRST = frozenset({"javascript", "typescript", "java", "kotlin", "scala", "groovy", "go", "rust"})

_PY_BUILTINS = frozenset(
    """print len range list dict set tuple str int float bool bytes type isinstance issubclass
    super open repr hash id iter next zip map filter sorted reversed enumerate sum min max abs
    any all round getattr setattr hasattr delattr vars dir object callable format input exit
    quit globals locals staticmethod classmethod property frozenset bytearray memoryview
    divmod pow chr ord hex oct bin ascii compile eval exec self cls this none true false null
    undefined console require function return new var let const fn func main""".split()
)
_KEYWORDS = frozenset(k.lower() for k in keyword.kwlist) | frozenset(
    "none true false null nil self cls this eg ie etc vs".split()
)
# Mixed-case words that are brands, not code.
_CAMEL_STOP = frozenset(
    """github gitlab javascript typescript pypi macos ios numpy scipy ipython pycharm vscode
    latex youtube stackoverflow powershell linkedin iphone mcve jupyterlab readthedocs
    openssl mypy pytest""".split()
)
_TLDS = frozenset("com org net io dev edu gov html htm local uk de fr jp cn ru info me co app ai".split())


# ---------------------------------------------------------------------------
# Segmentation: prose vs. code blocks
# ---------------------------------------------------------------------------


class _Block:
    __slots__ = ("kind", "lines", "lang", "dropped")

    def __init__(self, kind: str, lines: list[str], lang: str = "") -> None:
        self.kind = kind  # prose | fence | indented | doctest | trace | loose
        self.lines = lines
        self.lang = lang
        self.dropped = False


_FENCE_OPEN = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+#.\-]*)")
_TB_HEADER = re.compile(r"^\s*Traceback \(most recent call last\):?\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")

# One regex per frame format; the first group layout is documented at use.
_PY_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>\S+))?')
_IPY8_FRAME = re.compile(r"^\s*File (?P<path>[^\s\",][^,\"]*?):(?P<line>\d+)(?:, in (?P<func>[\w<>.]+))?\s*(?:\(|$)")
_IPY_FRAME = re.compile(r"^(?P<path>\S+\.py|<ipython-input-[\w-]+>|<[\w -]+>) in (?P<func>[\w<>.]+)")
_IPY_ARROW = re.compile(r"^-+> ?(?P<line>\d+)\b")
_PY_WARN_FRAME = re.compile(r"^\s*(?P<path>[^\s:\"]+\.py):(?P<line>\d+): (?P<type>[A-Z]\w*Warning): (?P<msg>.+)$")
_PYTEST_FRAME = re.compile(
    r"^\s*(?P<path>[^\s:\"<>]+\.py):(?P<line>\d+):(?: in (?P<func>\S+)| (?P<exc>[A-Za-z_][\w.]*))?\s*$"
)
_JAVA_AT = re.compile(
    r"^\s*at (?:[\w.@\-]*/+)?(?P<qual>[\w$.<>]+)\.(?P<meth>[\w$<>\-]+)"
    r"\((?P<file>[\w$\-]+\.(?:java|kt|kts|scala|groovy)):(?P<line>\d+)\)"
)
_AT_FRAME = re.compile(
    r"^\s*at (?:(?P<func>[^()]+?) \()?(?P<path>(?:file://|node:)?(?:[A-Za-z]:)?[^():\s][^():]*?)"
    r":(?P<line>\d+)(?::(?P<col>\d+))?\)?\s*$"
)
_GO_FUNC = re.compile(r"^(?P<func>[\w./*()\-]+?)\((?:[^()]*)\)\s*$")
_GO_PATH = re.compile(r"^\s+(?P<path>\S+\.go):(?P<line>\d+)(?: \+0x[0-9a-fA-F]+)?\s*$")
_RUST_NUM = re.compile(r"^\s*\d+:\s+(?:0x[0-9a-f]+ - )?(?P<func>\S.*?)\s*$")
_RUST_PANIC_OLD = re.compile(r"panicked at '(?P<msg>.*)', (?P<path>\S+\.rs):(?P<line>\d+)(?::\d+)?")
_RUST_PANIC_NEW = re.compile(r"panicked at (?P<path>\S+\.rs):(?P<line>\d+)(?::\d+)?:\s*(?P<msg>.*)$")
_DIAG = re.compile(
    rf"^\s*(?:-->\s*)?(?P<path>[^\s:\"'()]+\.(?:{_EXT_ALT})):(?P<line>\d+)(?::(?P<col>\d+))?:?(?:\s+(?P<rest>.*))?$"
)
_LINT = re.compile(r"^\S[^:\n]*:\d+:\d+: (?P<code>[A-Z]+\d+):? (?P<msg>.+)$")
# `docs/usage.rst:4:Malformed option description ...`: a docs builder's or tool's diagnostic
# about the user's own file (any extension), the message right after `path:line:`.
_FILE_DIAG = re.compile(r"^\s*[^\s:\"'()]+\.[A-Za-z][\w.]*:\d+:(?:\d+:)?\s*(?P<msg>[A-Za-z][^\s:]*(?:\s+\S+){2,})$")

_EXC_TYPE = r"(?:[A-Za-z_]\w*\.)*(?:[A-Z_]\w*?)(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure|Iteration)"
_EXC_LINE = re.compile(rf"^(?:E\s+)?(?:Uncaught |Unhandled |Caused by: )?(?P<type>{_EXC_TYPE})(?:: ?(?P<msg>.*?))?\s*$")
_NODE_ERROR = re.compile(r"^(?:Uncaught |Unhandled )?(?P<type>Error): (?P<msg>.+)$")
# `requests.exceptions.MissingSchema: Invalid URL ...`: the last line of a traceback as a library's
# exception prints it, module-qualified, its class named without an Error suffix (pasted alone, with
# no traceback above it to say so)
_QUALIFIED_EXC_LINE = re.compile(r"^(?P<type>(?:[a-z_]\w*\.)+[A-Z][A-Za-z0-9_]*): (?P<msg>\S.*?)\s*$")
_JAVA_THREAD = re.compile(r'^Exception in thread "[^"]*" (?P<type>[\w$.]+)(?:: (?P<msg>.*))?$')
_GO_PANIC = re.compile(r"^(?:panic|fatal error): (?P<msg>.+?)(?: \[recovered\])?\s*$")
# `ERROR! msg` is ansible's error line; docker's `WARNING! ...` advice is no error of the report
_LOG_MSG = re.compile(r"^(?:\S.*?: )?(?:(?:WARNING|ERROR|CRITICAL|FATAL)[:\]]|(?:ERROR|FATAL)!(?=\s))\s*(?P<msg>.+)$")
_BARE_PY_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?:: (?P<msg>.*))?\s*$")
_STACK_HEADER = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|During handling of the above exception|"
    r"The above exception was the direct cause|goroutine \d+ |Exception in thread |Caused by: |"
    r"thread '[^']*' panicked at|_{3,} .* _{3,}$|-{5,}\s*$)"
)


# Log decorations in front of a trace line: quote markers, CI timestamps,
# pytest's INTERNALERROR>, a code comment marker around a pasted error.
_LOG_PREFIX = re.compile(
    r"^(?:\s*>(?=[\s>\[]|\w+>))?\s*(?:(?:INTERNALERROR>|\[?\d{4}-\d\d-\d\d[T ][\d:.,]+Z?\]?|\[\d\d:\d\d:\d\d(?:[.,]\d+)?\]|"
    r"##\[\w+\])(?: |$))+|^\s*(?:#|//)\s*(?=(?:[\w.]+(?:Error|Exception|Warning)\b))"
)


def _strip_log_prefix(line: str) -> str:
    m = _LOG_PREFIX.match(line)
    return line[m.end() :] if m and m.end() else line


_FRAME_HINT = re.compile(r"File |\.\w{1,6}\)?:\d|\bat |^E  | in ")


def _is_frame_line(line: str) -> bool:
    if not _FRAME_HINT.search(line):
        return False
    s = _strip_log_prefix(line)
    return bool(
        _PY_FRAME.match(s)
        or _PYTEST_FRAME.match(s)
        or _JAVA_AT.match(s)
        or _AT_FRAME.match(s)
        or _IPY_FRAME.match(s)
        or _IPY8_FRAME.match(s)
        or _GO_PATH.match(s)
        or _PY_WARN_FRAME.match(s)
        or s.startswith("E   ")
    )


_TRACE_CONTEXT = re.compile(
    r"^\s*(?:goroutine \d+ \[[^\]]*\]:|stack backtrace:|thread '[^']*' panicked at |"
    r"note: run with `RUST_BACKTRACE|\.\.\. \d+ (?:more|common frames omitted)|Caused by: )"
)


_LOOSE_CODE = re.compile(
    r"^\s*(?:[A-Za-z_][\w.]*\(.*\)\s*;?"  # a bare call statement
    r"|[A-Za-z_][\w.\[\]'\"]*\s*=\s*[^=\s].*"  # an assignment
    r"|(?:from\s+[\w.]+\s+)?import\s+[\w.]+.*"
    r"|(?:def|class)\s+\w+.*:)\s*$"
)


def _looks_like_code(line: str) -> bool:
    """An unfenced line of code in prose: a call, assignment, import or def, not a sentence."""
    s = line.strip()
    if not s or s.endswith((".", "?", "!")) or not _LOOSE_CODE.match(s):
        return False
    outside = re.sub(r"\([^()]*\)|\[[^\]]*\]|\{[^}]*\}|'[^']*'|\"[^\"]*\"", "", s)
    return len(re.findall(r"[A-Za-z]{2,}", outside)) <= 4


def _segment(lines: list[str]) -> list[_Block]:
    """Split lines into prose and code blocks (fences, indented code, doctest, tracebacks)."""
    blocks: list[_Block] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            blocks.append(_Block("prose", prose.copy()))
            prose.clear()

    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        m = _FENCE_OPEN.match(line)
        if m:
            fence = m.group(1)
            closing = re.compile(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
            j = i + 1
            while j < n and not closing.match(lines[j]):
                j += 1
            flush()
            blocks.append(_Block("fence", lines[i + 1 : j], m.group(2).lower()))
            i = j + 1
            continue
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            j = i
            while j < n and lines[j].strip() and not _FENCE_OPEN.match(lines[j]):
                j += 1
            flush()
            blocks.append(_Block("doctest", lines[i:j]))
            i = j
            continue
        if _TB_HEADER.match(line):
            j = i + 1
            while j < n and lines[j].strip() and lines[j][:1] in (" ", "\t"):
                j += 1
            if j < n and lines[j].strip() and not _FENCE_OPEN.match(lines[j]):
                j += 1  # the exception line closes an unfenced traceback
            flush()
            blocks.append(_Block("trace", lines[i:j]))
            i = j
            continue
        prev_blank = i == 0 or not lines[i - 1].strip()
        if (line.startswith("    ") or line.startswith("\t")) and stripped and prev_blank:
            last_prose = next((p for p in reversed(prose) if p.strip()), "")
            if not _LIST_ITEM.match(last_prose):
                j = i
                while j < n and (not lines[j].strip() or lines[j].startswith(("    ", "\t"))):
                    if _FENCE_OPEN.match(lines[j]):
                        break
                    j += 1
                while j > i and not lines[j - 1].strip():
                    j -= 1
                flush()
                blocks.append(_Block("indented", [ln[4:] if ln.startswith("    ") else ln[1:] for ln in lines[i:j]]))
                i = j
                continue
        nxt = lines[i + 1] if i + 1 < n else ""
        if (
            _is_frame_line(line)
            or _TRACE_CONTEXT.match(line)
            or ((_GO_FUNC.match(line) or _RUST_NUM.match(line)) and _is_frame_line(nxt))
            or _EXC_LINE.match(line)
            and blocks
            and blocks[-1].kind == "trace"
            and not prose
        ):
            if blocks and blocks[-1].kind == "trace" and not prose:
                blocks[-1].lines.append(line)
            else:
                flush()
                blocks.append(_Block("trace", [line]))
            i += 1
            continue
        if _looks_like_code(line):
            if blocks and blocks[-1].kind == "loose" and not prose:
                blocks[-1].lines.append(line)
            else:
                flush()
                blocks.append(_Block("loose", [line]))
            i += 1
            continue
        prose.append(line)
        i += 1
    flush()
    return blocks


# ---------------------------------------------------------------------------
# Noise: template boilerplate, version dumps
# ---------------------------------------------------------------------------

_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_HEADING = re.compile(
    r"^\s{0,3}(?:#{1,6}\s*(?P<a>.+?)\s*#*\s*$|\*\*(?P<b>[^*]+?)\*\*\s*:?\s*$|__(?P<c>[^_]+?)__\s*:?\s*$"
    r"|(?P<d>[A-Z][\w /'?()-]{2,60}):\s*$)"
)
_SUMMARY = re.compile(r"<summary>(?P<s>.*?)</summary>", re.I)
_BOILER_HEADINGS = frozenset(
    h.strip()
    for h in """describe the bug|bug description|bug report|to reproduce|steps to reproduce|steps to
    reproduce the issue|reproduction|how to reproduce|reproducer|minimal example|minimal
    reproducible example|minimal complete verifiable example|mcve code sample|code sample|code
    for reproduction|code to reproduce|example|expected behavior|expected behaviour|expected
    result|expected results|expected outcome|expected output|actual behavior|actual behaviour|actual
    result|actual results|actual outcome|current behavior|current behaviour|current output|what
    happened|what you expected to happen|what did you expect to happen|what did you
    expect|problem description|description|summary|issue description|the problem|problem|screenshots|
    screenshot|additional context|additional information|additional notes|anything else we need to
    know|anything else|other|notes|your project|feature or bugfix|purpose|detail|details|
    motivation|proposed solution|possible solution|possible fix|describe the solution you'd
    like|describe alternatives you've considered|is your feature request related to a
    problem please describe|feature request|related issues|related issue|checklist|workaround|
    command used|pylint output|configuration|output|result|error|error message|traceback|
    logs|log output|what are you trying to do|how would you solve it|current problem|desired
    solution|alternative solutions|additional context and comments|bug|issue""".replace("\n", "")
    .replace("    ", " ")
    .split("|")
) - {""}
_ENV_HEADINGS = frozenset(
    h.strip()
    for h in """environment|environment info|environment information|environment details|system
    details|system info|system information|versions|version|version info|version
    information|installed versions|package versions|python version|os / environment|os
    environment|os|platform|pylint version|sphinx version|matplotlib version|pytest version|
    astropy version|dependencies|additional dependencies|output of xr show_versions|output of
    show_versions|output of pip list|pip list|pip freeze|software versions|system|setup|
    operating system|versions of relevant libraries|package version|versions used""".replace("\n", "")
    .replace("    ", " ")
    .split("|")
) - {""}
_EMPTY_ANSWER = re.compile(r"^\s*(?:_?no response_?|n/?a|none|no|nothing|-|\.\.\.|tbd)\.?\s*$", re.I)
_CHECKLIST = re.compile(r"^\s*(?:[-*+]\s+)?\[[ xX]\]\s")

_VERSION = r"v?\d+(?:\.[\w+\-]+)+"
_STRONG_ENV = re.compile(
    r"^\s*(?:[-*]\s*)?(?:\*\*)?(?:os|operating system|os version|platform|python|python version|"
    r"[\w.\-]+(?: [\w.\-]+){0,3} version|version|kernel|distribution|architecture|python-bits|os-release|"
    r"byteorder|lc_all|lang|locale|machine|processor|commit)(?:\*\*)?\s*:\s*\S"
    r"|^\s*platform \w+ -- Python \d"
    r"|^\s*INSTALLED VERSIONS"
    r"|^\s*(?:Successfully installed|Installing collected packages|Requirement already satisfied) "
    r"|^\s*(?:Python|CPython|PyPy) \d+\.\d+[\w.+]*(?: \(.*\)| on \w+)?\s*(?:\[.*\])?\s*$"
    r"|^\s*\[(?:GCC|Clang|MSC)\b",
    re.I,
)
_VERSION_LINE = re.compile(
    rf"^\s*(?:[-*]\s*)?[\w.\-/()]+(?: [\w.\-/()]+){{0,4}}\s*[:=]\s*(?:{_VERSION}|None|N/A|unknown|installed|not installed)\b.*$"
    rf"|^\s*[\w.\-\[\]]+\s*(?:==|>=|<=|~=| @ )\s*\S+\s*$"
    rf"|^\s*[\w.\-]+\s+{_VERSION}\S*(?:\s+\S+)?\s*$"
    r"|^\s*Package\s+Version\b"
    r"|^\s*[-=]{3,}(?:\s+[-=]{3,})*\s*$",
    re.I,
)


def _heading_text(line: str) -> str | None:
    head = line.lstrip()[:1]
    if head not in ("#", "*", "_") and not line.rstrip().endswith(":") and "<summary" not in line.lower():
        return None
    m = _HEADING.match(line)
    text = None
    if m:
        text = m.group("a") or m.group("b") or m.group("c") or m.group("d")
    else:
        s = _SUMMARY.search(line)
        if s:
            text = s.group("s")
    if text is None:
        return None
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"[^\w/' ]+", " ", text.lower())
    return " ".join(text.split())


def _is_env_heading(norm: str) -> bool:
    if norm in _ENV_HEADINGS:
        return True
    return (
        bool(re.search(r"show_versions|pip (?:list|freeze)|installed versions|\bversions?\b$", norm)) and len(norm) < 50
    )


def _version_ratio(lines: Sequence[str]) -> tuple[int, int]:
    body = [ln for ln in lines if ln.strip()]
    hits = sum(1 for ln in body if _STRONG_ENV.match(ln) or _VERSION_LINE.match(ln))
    return hits, len(body)


class _Noise:
    """Counts what was dropped, for the `dropped` list."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.counts: dict[str, int] = {}

    def add(self, what: str) -> None:
        self.items.append(what)

    def count(self, what: str, k: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + k

    def result(self) -> list[str]:
        out = list(self.items)
        for what, k in self.counts.items():
            out.append(f"{what} ({k})" if k > 1 else what)
        return out


def _clean_prose_blocks(blocks: list[_Block], noise: _Noise) -> None:
    """Drop boilerplate headings, checklists, empty answers, environment sections, version runs."""
    in_env = False
    for block in blocks:
        if block.kind != "prose":
            if in_env:
                block.dropped = True
                noise.add(f"environment section ({len([ln for ln in block.lines if ln.strip()])} lines)")
                continue
            hits, total = _version_ratio(block.lines)
            if total and hits >= 3 and hits >= 0.6 * total:
                block.dropped = True
                noise.add(f"version dump ({total} lines)")
            continue
        kept: list[str] = []
        env_lines = 0
        for line in block.lines:
            norm = _heading_text(line)
            if "</details>" in line.lower() and in_env:
                in_env = False
                if env_lines:
                    noise.add(f"environment section ({env_lines} lines)")
                env_lines = 0
                continue
            heading = _HEADING.match(line)
            if norm is not None and (
                heading is None or heading.group("d") is None or norm in _BOILER_HEADINGS or _is_env_heading(norm)
            ):
                if in_env and env_lines:
                    noise.add(f"environment section ({env_lines} lines)")
                env_lines = 0
                in_env = _is_env_heading(norm)
                if in_env or norm in _BOILER_HEADINGS:
                    noise.count("template heading")
                    continue
                kept.append(line)
                continue
            if in_env:
                if line.strip():
                    env_lines += 1
                continue
            if _CHECKLIST.match(line):
                noise.count("checklist line")
                continue
            if _EMPTY_ANSWER.match(line) and line.strip():
                noise.count("empty template answer")
                continue
            kept.append(line)
        if in_env and env_lines:
            noise.add(f"environment section ({env_lines} lines)")
        block.lines = _drop_version_runs(kept, noise)


def _drop_version_runs(lines: list[str], noise: _Noise) -> list[str]:
    out: list[str] = []
    i, n = 0, len(lines)
    single = 0
    while i < n:
        ln = lines[i]
        if ln.strip() and (_VERSION_LINE.match(ln) or _STRONG_ENV.match(ln)):
            j = i
            hits = 0
            while j < n and (not lines[j].strip() or _VERSION_LINE.match(lines[j]) or _STRONG_ENV.match(lines[j])):
                hits += bool(lines[j].strip())
                j += 1
            if hits >= 3:
                noise.add(f"version dump ({hits} lines)")
                i = j
                continue
            for k in range(i, j):
                if lines[k].strip() and _STRONG_ENV.match(lines[k]):
                    single += 1
                else:
                    out.append(lines[k])
            i = j
            continue
        out.append(ln)
        i += 1
    if single:
        noise.count("environment line", single)
    return out


# ---------------------------------------------------------------------------
# Frames and error messages
# ---------------------------------------------------------------------------


def _lang_of(path: str) -> str:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path.rsplit("/", 1)[-1] else ""
    return _CODE_EXT_LANG.get(ext, "python" if path.startswith("<") else "")


def _go_func(raw: str) -> str:
    tail = raw.rsplit("/", 1)[-1]
    tail = tail.split(".", 1)[1] if "." in tail else tail
    return tail.replace("(*", "").replace(")", "").replace("(", "")


def _rust_func(raw: str) -> str:
    raw = re.sub(r"::h[0-9a-f]{16}$", "", raw.strip())
    raw = re.sub(r"<[^<>]* as ([^<>]*)>", r"\1", raw)
    parts = [p for p in raw.split("::") if p and not p.startswith("{{")]
    return parts[-1] if parts else raw


def _clean_msg(msg: str) -> str:
    msg = msg.strip().strip("`").strip()
    return msg[:500]


class _ParsedFrame(msgspec.Struct):
    """A frame as the parser reads it, before the stacks are put outermost-first."""

    stack: int  # which stack of the block (a new one starts when the language family or direction changes)
    descending: bool  # printed innermost-first (Java, Go, Rust, JS): reversed when ordering
    raw_path: str
    line: int | None
    function: str
    language: str


class _FrameParser:
    """Line-driven state machine over one block; collects frames, messages and types."""

    def __init__(self) -> None:
        self.frames: list[_ParsedFrame] = []
        self.messages: list[str] = []
        self.types: list[str] = []
        self.stack = 0
        self.go_func = ""
        self.rust_func = ""
        self.last_def = ""
        self.in_py_tb = False
        self.pending_rust_msg = False
        self.ipy_frame: int | None = None

    def _frame(self, desc: bool, path: str, line: int | None, func: str, lang: str = "") -> None:
        lang = lang or _lang_of(path)
        prev = self.frames[-1] if self.frames else None
        if prev is not None and (
            _FAMILY.get(prev.language, prev.language) != _FAMILY.get(lang, lang) or prev.descending != desc
        ):
            self.stack += 1
        self.frames.append(_ParsedFrame(self.stack, desc, path, line, func, lang))

    def _error(self, typ: str, msg: str | None) -> None:
        if typ:
            self.types.append(typ.rsplit(".", 1)[-1])
        if msg and _clean_msg(msg):
            self.messages.append(_clean_msg(msg))

    def new_block(self) -> None:
        self.stack += 1
        self.in_py_tb = False
        self.ipy_frame = None
        self.pending_rust_msg = False

    def feed(self, line: str) -> None:  # noqa: C901 - one branch per format, flat on purpose
        line = _strip_log_prefix(line)
        if not line.strip():
            self.pending_rust_msg = False
            return
        if self.pending_rust_msg:
            self.pending_rust_msg = False
            self._error("panic", line)
            return
        if _STACK_HEADER.match(line):
            self.stack += 1
            if "Traceback" in line:
                self.in_py_tb = True
        d = re.match(r"^\s*(?:async\s+)?def (\w+)\(", line)
        if d:
            self.last_def = d.group(1)
        m = _PY_FRAME.match(line)
        if m:
            self.in_py_tb = True
            self._frame(False, m["path"], int(m["line"]), m["func"] or "", "python")
            return
        m = _IPY_FRAME.match(line)
        if m:
            self.in_py_tb = True
            self._frame(False, m["path"], None, m["func"], "python")
            self.ipy_frame = len(self.frames) - 1
            return
        m = _IPY_ARROW.match(line)
        if m and self.ipy_frame is not None:
            frame = self.frames[self.ipy_frame]
            if frame.line is None:
                frame.line = int(m["line"])
            return
        m = _IPY8_FRAME.match(line)
        if m and _lang_of(m["path"]) == "python":
            self.in_py_tb = True
            self._frame(False, m["path"], int(m["line"]), m["func"] or "")
            return
        m = _PY_WARN_FRAME.match(line)
        if m:
            self._frame(False, m["path"], int(m["line"]), "")
            self._error(m["type"], m["msg"])
            return
        m = _PYTEST_FRAME.match(line)
        if m:
            func = m["func"] or ""
            if not func and m["exc"]:
                func = self.last_def
            self._frame(False, m["path"], int(m["line"]), func)
            if m["exc"]:
                self.types.append(m["exc"].rsplit(".", 1)[-1])
            return
        m = _JAVA_AT.match(line)
        if m:
            pkg = [p for p in m["qual"].split(".")[:-1] if p]
            path = "/".join(pkg + [m["file"]])
            self._frame(True, path, int(m["line"]), m["meth"])
            return
        m = _AT_FRAME.match(line)
        if m:
            path = m["path"]
            lang = _lang_of(path)
            if path.startswith("node:") or not lang:
                lang = lang or "javascript"
            func = (m["func"] or "").strip()
            if lang == "rust" and not func:
                func = self.rust_func
            self._frame(True, path, int(m["line"]), func, lang)
            return
        m = _GO_PATH.match(line)
        if m:
            self._frame(True, m["path"], int(m["line"]), _go_func(self.go_func) if self.go_func else "", "go")
            self.go_func = ""
            return
        m = _RUST_PANIC_OLD.search(line)
        if m:
            self.stack += 1
            self._frame(True, m["path"], int(m["line"]), "", "rust")
            self._error("panic", m["msg"])
            return
        m = _RUST_PANIC_NEW.search(line)
        if m:
            self.stack += 1
            self._frame(True, m["path"], int(m["line"]), "", "rust")
            if m["msg"]:
                self._error("panic", m["msg"])
            else:
                self.pending_rust_msg = True
            return
        m = _GO_FUNC.match(line)
        if m and ("." in m["func"]) and not line.startswith(" "):
            self.go_func = m["func"]
        m = _RUST_NUM.match(line)
        if m:
            self.rust_func = _rust_func(m["func"])
        m = _JAVA_THREAD.match(line)
        if m:
            self._error(m["type"], m["msg"])
            return
        m = _EXC_LINE.match(line) or _QUALIFIED_EXC_LINE.match(line)
        if m:
            self.stack += 1
            self.in_py_tb = False
            self._error(m["type"], m["msg"])
            return
        m = _NODE_ERROR.match(line)
        if m:
            self.stack += 1
            self._error("Error", m["msg"])
            return
        m = _GO_PANIC.match(line)
        if m:
            self.stack += 1
            self._error("panic" if line.startswith("panic") else "", m["msg"])
            return
        m = _LINT.match(line)
        if m:
            self._error("", m["msg"])
            return
        m = _DIAG.match(line)
        if m:
            self._frame(False, m["path"], int(m["line"]), "")
            rest = m["rest"] or ""
            r = re.match(r"^(?:error|warning|fatal error|WARNING|ERROR)(?:\[\w+\])?:\s*(.+)$", rest)
            if r:
                self._error("", r.group(1))
            return
        m = _LOG_MSG.match(line)
        if m:
            inner = _EXC_LINE.match(m["msg"])
            if inner and inner["msg"]:
                self._error(inner["type"], inner["msg"])
            else:
                self._error("", m["msg"])
            return
        m = _FILE_DIAG.match(line)
        if m:
            self._error("", m["msg"])
            return
        if self.in_py_tb and not line[:1].isspace():
            b = _BARE_PY_EXC.match(line)
            self.in_py_tb = False
            if b and (b["msg"] is not None or "." in b["type"] or b["type"][:1].isupper()):
                self.stack += 1
                self._error(b["type"], b["msg"])

    def ordered_frames(self) -> list[StackFrame]:
        by_stack: dict[int, list[_ParsedFrame]] = {}
        for f in self.frames:
            by_stack.setdefault(f.stack, []).append(f)
        flat: list[_ParsedFrame] = []
        for key in sorted(by_stack):
            group = by_stack[key]
            flat.extend(reversed(group) if group[0].descending else group)
        # A frame repeated (same report pasted twice) keeps its deepest position.
        last: dict[tuple[str, int | None, str], int] = {}
        for i, f in enumerate(flat):
            last[(f.raw_path, f.line, f.function)] = i
        keep = sorted(last.values())
        return [
            StackFrame(
                raw_path=flat[i].raw_path,
                line=flat[i].line,
                function=flat[i].function,
                language=flat[i].language,
                order=k,
            )
            for k, i in enumerate(keep)
        ]


# ---------------------------------------------------------------------------
# Identifiers
# ---------------------------------------------------------------------------

_KIND_TIER = {"backtick": 0, "dotted": 1, "config_key": 1, "flag": 1, "camel": 1, "snake": 1, "path": 1, "code": 2}
_BACKTICK = re.compile(r"(`+)(.+?)\1")
_URL = re.compile(r"\b(?:https?|ftp|file)://\S+|\bwww\.\S+")
_FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*[A-Za-z0-9])")
_PATHLIKE = re.compile(rf"(?<![\w/.\-])((?:[\w.\-]+/)*[\w\-]+\.(?:{_EXT_ALT}|rst|md|cfg|toml|ini|yaml|yml|json|txt))\b")
_DOTTED = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w])")
_WORD = re.compile(r"(?<![\w.\-])([A-Za-z_][\w]*)(?![\w])")
_CONFIG_AFTER = re.compile(r"\s*(?:=[^=]|:\s*\S)")
_CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*\(")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(])")
_DEFINITION = re.compile(
    r"^\s*(?:(?:pub(?:\(\w+\))?|export|public|private|protected|static|async|abstract|final|default)\s+)*"
    r"(?:class|def|fn|func|function|interface|struct|enum|trait|type)\s+(?:\([^)]*\)\s*)?([A-Za-z_]\w*)"
    r"|^\s*\.\. ([\w:-]+)::"
)
_KWARG = re.compile(r"(?<=[(,])\s*([A-Za-z_]\w*)\s*=(?!=)")
_STRING_LIT = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'")
_LINE_COMMENT = re.compile(r"(?:^|\s)(?:#|//).*$")
_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+\(?\s*([\w\s,*]+)")
_IMPORT = re.compile(r"^\s*import\s+([\w.]+(?:\s*,\s*[\w.]+)*)")
_ASSIGN = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*[=:]\s*(?!=)(.*)$")
_INI_SECTION = re.compile(r"^\s*\[[\w:.\- ]+\]\s*$")
_SHELL_PROMPT = re.compile(r"^\s*(?:\$|>|#|PS [^>]*>|\(\S+\)\s*\S*\$)\s+\S")
_CONFIG_LANGS = frozenset("ini cfg toml yaml yml conf properties env dosini".split())
_SHELL_LANGS = frozenset("sh bash shell console shell-session zsh cmd powershell ps1 bat text".split())


def _is_camel(w: str) -> bool:
    if w[1:].islower() or w.isupper():
        return False
    return (
        any(c.islower() for c in w)
        and any(c.isupper() for c in w)
        and bool(re.search(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]", w))
        and w.lower() not in _CAMEL_STOP
    )


def _is_snake(w: str) -> bool:
    core = w.strip("_")
    return "_" in core and bool(re.search(r"[A-Za-z]", core)) or bool(re.fullmatch(r"__\w+__", w))


def _good_dotted(s: str) -> bool:
    parts = s.split(".")
    low = s.lower()
    if low in ("e.g", "i.e", "et.al", "a.k.a") or parts[-1].lower() in _TLDS:
        return False
    if parts[-1].lower() in _CODE_EXT_LANG or parts[-1].lower() in (
        "rst",
        "md",
        "txt",
        "cfg",
        "toml",
        "ini",
        "json",
        "yaml",
        "yml",
    ):
        return False
    return all(p and not p.isdigit() for p in parts)


class _IdentSink:
    def __init__(self) -> None:
        self.order: dict[str, int] = {}
        self.kind: dict[str, str] = {}

    def add(self, text: str, kind: str) -> None:
        text = text.strip().rstrip(".:,;")
        if text.endswith("()"):
            text = text[:-2]
        for prefix in ("self.", "cls.", "this."):
            if text.startswith(prefix):
                text = text[len(prefix) :]
        if len(text) < 2 or len(text) > 120 or text.lower() in _KEYWORDS:
            return
        if kind == "code" and text.lower() in _PY_BUILTINS:
            return
        if text not in self.order:
            self.order[text] = len(self.order)
            self.kind[text] = kind
        elif _KIND_TIER[kind] < _KIND_TIER[self.kind[text]]:
            self.kind[text] = kind

    def result(self, cap: int = 300) -> list[Identifier]:
        items = sorted(self.order, key=lambda t: (_KIND_TIER[self.kind[t]], self.order[t]))
        return [Identifier(text=t, kind=self.kind[t]) for t in items[:cap]]


def _prose_identifiers(text: str, sink: _IdentSink, parser: _FrameParser | None = None) -> None:
    text = _URL.sub(" ", text)

    def backtick(m: re.Match[str]) -> str:
        inner = m.group(2).strip()
        if parser is not None and _EXC_LINE.match(inner) and ":" in inner:
            em = _EXC_LINE.match(inner)
            assert em is not None
            parser._error(em["type"], em["msg"])
        if re.fullmatch(r"--[A-Za-z][\w-]*(?:=\S*)?", inner):
            sink.add(inner.split("=", 1)[0], "flag")
        elif re.fullmatch(r"[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)*(?:\(\))?", inner):
            if _PATHLIKE.fullmatch(inner) and not _good_dotted(inner.removesuffix("()")):
                sink.add(inner, "path")
            else:
                sink.add(inner, "backtick")
        elif "/" in inner and _PATHLIKE.fullmatch(inner):
            sink.add(inner, "path")
        else:
            for c in _CALL.finditer(_STRING_LIT.sub('""', inner)):
                sink.add(c.group(1), "backtick")
            _plain_identifiers(inner, sink)
        return " "

    rest = _BACKTICK.sub(backtick, text)
    _plain_identifiers(rest, sink)


def _plain_identifiers(text: str, sink: _IdentSink) -> None:
    found: list[tuple[int, str, str]] = []
    for m in _FLAG.finditer(text):
        found.append((m.start(), m.group(1), "flag"))
    for m in _PATHLIKE.finditer(text):
        if "/" in m.group(1) or not _good_dotted(m.group(1)):
            found.append((m.start(), m.group(1), "path"))
    for m in _DOTTED.finditer(text):
        s = m.group(1)
        if _good_dotted(s) and not (s.islower() and len(s) < 6 and "_" not in s and text[m.end() : m.end() + 1] != "("):
            found.append((m.start(), s, "dotted"))
    for m in _WORD.finditer(text):
        w = m.group(1)
        if _is_snake(w):
            kind = "config_key" if _CONFIG_AFTER.match(text, m.end()) else "snake"
            found.append((m.start(), w, kind))
        elif _is_camel(w):
            found.append((m.start(), w, "camel"))
    found.sort(key=lambda t: t[0])
    for _, s, kind in found:
        sink.add(s, kind)


def _code_identifiers(block: _Block, sink: _IdentSink) -> None:
    lines = block.lines
    if any(ln.lstrip().startswith(">>>") for ln in lines):
        # Doctest output is noise; prompts and traceback source lines are code.
        lines = [
            re.sub(r"^\s*(?:>>>|\.\.\.) ?", "", ln)
            for k, ln in enumerate(lines)
            if ln.lstrip().startswith((">>>", "... ")) or (k and _PY_FRAME.match(lines[k - 1]))
        ]
    config_mode = block.lang in _CONFIG_LANGS or any(_INI_SECTION.match(ln) for ln in lines)
    shell_mode = block.lang in _SHELL_LANGS  # its first line is usually the command
    for raw in lines:
        if (
            not raw.strip()
            or _is_frame_line(raw)
            or _EXC_LINE.match(raw)
            or _STACK_HEADER.match(raw)
            or "most recent call last" in raw
        ):
            continue
        if _STRONG_ENV.match(raw):
            continue
        if _SHELL_PROMPT.match(raw) or (shell_mode and raw is lines[0]):
            for fm in _FLAG.finditer(raw):
                sink.add(fm.group(1), "flag")
            continue
        if config_mode:
            m = _ASSIGN.match(raw)
            if m and not raw.lstrip().startswith(("#", ";")):
                sink.add(m.group(1), "config_key")
            continue
        line = _STRING_LIT.sub('""', raw)
        line = _LINE_COMMENT.sub("", line)
        d = _DEFINITION.match(line)
        if d:
            sink.add(d.group(1) or d.group(2), "code")
        m = _FROM_IMPORT.match(line)
        if m and m.group(1) == "__future__":
            continue
        if m:
            mod = m.group(1)
            sink.add(mod, "dotted" if "." in mod else "code")
            for name in re.split(r"[\s,]+", m.group(2)):
                if name and name not in ("as", "*"):
                    sink.add(f"{mod}.{name}", "dotted")
                    sink.add(name, "code")
            continue
        m = _IMPORT.match(line)
        if m:
            for mod in re.split(r"\s*,\s*", m.group(1)):
                sink.add(mod, "dotted" if "." in mod else "code")
            continue
        a = _ASSIGN.match(line)
        if a and "=" in line[a.start(1) : a.start(2)] and "." not in a.group(1):
            name, value = a.group(1), raw[raw.find("=") + 1 :].strip()
            if ("_" in name.strip("_") or name.isupper()) and re.match(
                r"""^(?:["'\d\[{(\-]|True|False|None|true|false|null)""", value
            ):
                sink.add(name, "config_key")
        found: list[tuple[int, str, str]] = []
        for c in _CALL.finditer(line):
            found.append((c.start(), c.group(1), "code"))
        for c in _CHAIN.finditer(line):
            s = c.group(1)
            if _good_dotted(s):
                found.append((c.start(), s, "code"))
            elif s.split(".")[-1] in _CODE_EXT_LANG:
                found.append((c.start(), s, "path"))
        for c in _FLAG.finditer(line):
            found.append((c.start(), c.group(1), "flag"))
        for c in _KWARG.finditer(line):
            found.append((c.start(), c.group(1), "code"))
        found.sort(key=lambda t: t[0])
        for _, s, kind in found:
            if kind == "path" or kind == "flag" or not s.split(".")[-1].isdigit():
                sink.add(s, kind)


# ---------------------------------------------------------------------------
# Intent text
# ---------------------------------------------------------------------------

_IMG_MD = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK_MD = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_EMPH = re.compile(r"\*\*|__(?=\w)|(?<=\w)__")


def _clean_intent_line(line: str) -> str:
    line = _IMG_MD.sub(r"\1", line)
    line = _LINK_MD.sub(r"\1", line)
    line = _HTML_TAG.sub(" ", line)
    line = _URL.sub(" ", line)
    line = _EMPH.sub("", line)
    line = re.sub(r"^\s{0,3}#{1,6}\s*", "", line)
    line = re.sub(r"^\s*>\s?", "", line)
    return re.sub(r"[ \t]+", " ", line).strip()


# ---------------------------------------------------------------------------
# analyze_query
# ---------------------------------------------------------------------------


def analyze_query(text: str) -> QueryAnalysis:
    """Split a pasted report into frames, errors, identifiers, intent and code evidence."""
    noise = _Noise()
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    n_comments = len(_HTML_COMMENT.findall(text))
    if n_comments:
        text = _HTML_COMMENT.sub("", text)
        noise.count("html comment", n_comments)
    links = code_links(text)
    links += code_pointers(text)[: _MAX_LINKS - len(links)]  # never equal to a URL's (`written`)
    blocks = _segment(text.split("\n"))
    _clean_prose_blocks(blocks, noise)

    parser = _FrameParser()
    sink = _IdentSink()
    intent: list[str] = []
    code: list[str] = []
    prev_kind = ""
    for block in blocks:
        if block.dropped:
            continue
        # Prose and unfenced trace lines are one stream (a pasted log); fences are not.
        if block.kind not in ("prose", "trace", "loose") or prev_kind not in ("prose", "trace", "loose"):
            parser.new_block()
        prev_kind = block.kind
        for line in block.lines:
            parser.feed(line)
        if block.kind == "prose":
            body = "\n".join(block.lines)
            _prose_identifiers(body, sink, parser)
            for line in block.lines:
                cleaned = _clean_intent_line(line)
                if cleaned or (intent and intent[-1]):
                    intent.append(cleaned)
        else:
            _code_identifiers(block, sink)
            body = "\n".join(block.lines).strip("\n")
            if body.strip():
                code.append(body)
    # Exception class names mentioned in prose ("raises a TypeError") are types too.
    types = list(dict.fromkeys(parser.types))
    for ident in sink.order:
        if re.fullmatch(r"[A-Z]\w*(?:Error|Exception|Warning)", ident) and ident not in types:
            types.append(ident)
    frames = parser.ordered_frames()
    identifiers = sink.result()
    links += path_mentions(identifiers, frames, links)[: _MAX_LINKS - len(links)]
    return QueryAnalysis(
        frames=frames,
        error_messages=list(dict.fromkeys(m for m in parser.messages if m)),
        exception_types=[t for t in types if t],
        identifiers=identifiers,
        intent_text=re.sub(r"\n{3,}", "\n\n", "\n".join(intent)).strip(),
        code_text="\n\n".join(code),
        dropped=noise.result(),
        links=links,
        changes=report_refs(text),
        markup=markup_directives(text),
    )


# `.. name::` or `.. domain:name::` opening a reST/MyST directive, at a line's start (a doctest or
# blockquote prefix allowed); not a target (`.. _label:`), a substitution (`.. |x| replace::`) or a
# footnote (`.. [1]`), whose names are the document's, not the tool's.
_MARKUP_DIRECTIVE = re.compile(r"^[ \t>]*(?:\.\.\.\s+)?\.\.\s+([A-Za-z][\w-]*(?::[A-Za-z][\w-]*)*)::(?=\s|$)", re.M)
_MAX_MARKUP = 10


def markup_directives(text: str) -> list[str]:
    """The directives a report shows, first use first (at most `_MAX_MARKUP`)."""
    return list(dict.fromkeys(m.group(1) for m in _MARKUP_DIRECTIVE.finditer(text)))[:_MAX_MARKUP]


# A permalink to source: `https://github.com/o/r/blob/<ref>/<path>#L10-L20`, GitLab's
# `/-/blob/<ref>/<path>#L10-20`, Gitea's `/src/branch|commit|tag/<ref>/<path>#L10-L20`, Bitbucket's
# `/src/<ref>/<path>#lines-10:20`. A ref with a slash (`release/3.0`) leaves its tail in the path;
# resolving against the workspace drops leading components (index.retrieval.paths.link_target).
# URLs are cut out by one linear scan and split, never matched by a backtracking pattern.
_URL_TOKEN = re.compile(r"https?://[^\s<>\"'`()\[\]{}|\\^]+")
_LINES_FRAGMENT = re.compile(r"L(\d+)(?:C\d+)?(?:-L?(\d+))?|lines-(\d+)(?::(\d+))?")
_GITEA_REF_KINDS = frozenset({"branch", "commit", "tag"})
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_MAX_LINKS = 20


def _unquote(s: str) -> str:
    """Percent-decoding (`my%20mod.py`), here rather than from urllib: the engine imports no
    network module at all (tests/test_layers.py)."""
    return _PERCENT_RUN.sub(lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"), s)


def _source_link(url: str) -> CodeLink | None:
    """The CodeLink of one URL, or None when it is not a link to a file of a repository tree."""
    where, _, fragment = url.partition("#")
    segments = where.split("?", 1)[0].split("/")[3:]  # after scheme and host
    for i, seg in enumerate(segments):
        if i < 2 or seg not in ("blob", "src"):  # owner and repository come first
            continue
        j = i + 1
        if seg == "src" and j < len(segments) and segments[j] in _GITEA_REF_KINDS:
            j += 1
        path = _unquote("/".join(segments[j + 1 :])).rstrip(".,;:!")
        if j >= len(segments) or not path or path.endswith("/"):
            return None
        m = _LINES_FRAGMENT.match(fragment)
        a = (m.group(1) or m.group(3)) if m else None
        b = (m.group(2) or m.group(4)) if m else None
        start = int(a) if a else None
        end = int(b) if b and start is not None and int(b) >= start else start
        return CodeLink(path=path, start_line=start, end_line=end)
    return None


def code_links(text: str) -> list[CodeLink]:
    """The source permalinks of a report, in order, once each (at most 20).

    A reporter who links a line of the project's code is pointing at where they think the
    problem is, as a stack frame does; index.retrieval.candidates keeps those that name a
    workspace file."""
    out: list[CodeLink] = []
    for m in _URL_TOKEN.finditer(text):
        link = _source_link(m.group(0))
        if link is not None and link not in out:
            out.append(link)
            if len(out) >= _MAX_LINKS:
                break
    return out


# CPython's call-signature TypeErrors name the callee by its qualified name: the call failed on the
# way into that function, so its frame is never printed, yet its signature is often what the fix
# changes (`RST.__init__() got an unexpected keyword argument 'header_rows'`).
_CALL_SIGNATURE = re.compile(
    r"(?<![\w.])(?P<name>[A-Za-z_]\w*(?:\.(?:<locals>|[A-Za-z_]\w*))*)\(\) "
    r"(?:got an unexpected keyword argument|got multiple values for argument|"
    r"missing \d+ required (?:positional|keyword-only) argument|"
    r"takes (?:\d+|from \d+ to \d+|no|exactly (?:\d+|one)) (?:positional |keyword )?arguments?|"
    r"got some positional-only arguments)"
)


def signature_callees(messages: Sequence[str]) -> list[str]:
    """Qualified names of the functions a report's call-signature TypeErrors name, in order
    (`Outer.<locals>.f` -> `f`: a local function is found by its own name)."""
    out: list[str] = []
    for msg in messages:
        for m in _CALL_SIGNATURE.finditer(msg):
            name = m.group("name").rsplit(".<locals>.", 1)[-1]
            if "<locals>" not in name and name not in out:
                out.append(name)
    return out


# A source line the reporter points at in backticks, the way a permalink does: `sessions.py:313`,
# `requests/utils.py#L118`, `src/app.py, line 12`, a quoted line `pkg/io.py:7: if x:`. Only in backticks (marked as code on purpose);
# a bare `path:line` in prose or a log is a tool's diagnostic about the user's own file.
_POINTER = re.compile(
    rf"^\s*(?P<path>[^\s:`'\"()<>]+\.(?:{_EXT_ALT})):(?P<line>\d+)(?::(?P<col>\d+))?(?::.*)?$"
    rf"|^\s*(?P<path2>[^\s:`'\"()<>#]+\.(?:{_EXT_ALT}))#L(?P<line2>\d+)(?:-L?(?P<end2>\d+))?\s*$"
    rf"|^\s*(?P<path3>[^\s:`'\"()<>,]+\.(?:{_EXT_ALT})),? line (?P<line3>\d+)\s*$"
)


def code_pointers(text: str) -> list[CodeLink]:
    """The `path:line` pointers of a report's backticked spans, in order, once each (at most 20)."""
    out: list[CodeLink] = []
    for m in _BACKTICK.finditer(text):
        p = _POINTER.match(m.group(2))
        if p is None:  # a path never holds ":", so no URL matches
            continue
        raw = p.group("path") or p.group("path2") or p.group("path3")
        start = int(p.group("line") or p.group("line2") or p.group("line3"))
        end = int(p.group("end2")) if p.group("end2") and int(p.group("end2")) >= start else start
        path = raw.replace("\\", "/").removeprefix("./")
        last = next(g for g in ("col", "line", "end2", "line2", "line3") if p.group(g))
        written = m.group(2)[: p.end(last)].strip()  # without the quoted code after it
        link = CodeLink(path=path, start_line=start, end_line=end, written=written)
        if link not in out:
            out.append(link)
            if len(out) >= _MAX_LINKS:
                break
    return out


def path_mentions(
    identifiers: Sequence[Identifier], frames: Sequence[StackFrame], links: Sequence[CodeLink] = ()
) -> list[CodeLink]:
    """Source files the report names by a path with a directory ("In requests/sessions.py is a
    command"), as whole-file links the reporter wrote; not a frame's path (the frame points already)
    nor a file a link or pointer names. A bare file name is left out: `utils.py` or `setup.py` is
    as likely the reporter's own file."""
    seen = {link.path for link in links} | {f.raw_path.replace("\\", "/") for f in frames}
    out: list[CodeLink] = []
    for ident in identifiers:
        if ident.kind != "path":
            continue
        path = ident.text.removeprefix("./").lstrip("/")  # a path identifier holds no backslash
        if "/" not in path or not _lang_of(path):
            continue
        if path in seen or any(f.endswith("/" + path) or path.endswith("/" + f) for f in seen if "/" in f):
            continue
        seen.add(path)
        out.append(CodeLink(path=path, written=ident.text))
    return out
