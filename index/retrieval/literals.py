"""Error message <-> string literal: find the raise site of a reported message.

A reported message is a format string with its placeholders filled in; the span that raised
it holds the literal. `literal_pattern` is a cheap pre-filter (a run of the message's plain
words), `extract_string_literals` reads a span's literals, `literal_matches` scores one.
`option_literal_pattern` finds where a flag or config key is spelled as a quoted literal,
`registration_pattern` where a markup directive's name is bound to the class implementing it.
"""

from __future__ import annotations

import re

__all__ = [
    "extract_string_literals",
    "literal_matches",
    "literal_pattern",
    "option_literal_pattern",
    "registration_pattern",
]

_PLACEHOLDER = re.compile(
    r"%%|%(?:\([^)]*\))?[#0\-+]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlLqjzt]*[diouxXeEfFgGcrsaqvTtpbw]"
    r"|\{\{|\}\}|\$\{[^{}]*\}|\{[^{}]*\}"
)


def _fixed_parts(literal: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(literal):
        cur.append(literal[pos : m.start()])
        tok = m.group(0)
        if tok in ("%%", "{{", "}}"):
            cur.append(tok[0])
        else:
            parts.append("".join(cur))
            cur = []
        pos = m.end()
    cur.append(literal[pos:])
    parts.append("".join(cur))
    out = [" ".join(p.split()) for p in parts]
    return [p for p in out if p]


def _found_and_end(parts: list[str], message: str) -> tuple[int, int]:
    """(how many leading parts occur in order in message, greedy leftmost; where the last of them ends)."""
    pos = 0
    for i, part in enumerate(parts):
        k = message.find(part, pos)
        if k < 0:
            return i, pos
        pos = k + len(part)
    return len(parts), pos


CUT_SCALE = 0.98  # a message matched up to a cut, against one matched whole
TRUNCATED_MIN_CHARS = 6  # of the cut part: "' was not found" of "' was not found in %s"


def _cut_short(part: str, message: str, pos: int) -> int | None:
    """How many leading characters of `part` end the message after `pos`, cut at a word's end: a
    message quoted up to there (its tail, a path or a list, left out); 0 when the message stops at
    the placeholder before `part` (one value after the text matched so far); None otherwise."""
    for n in range(len(part) - 1, TRUNCATED_MIN_CHARS - 1, -1):
        if not part[n].isalnum() or not part[n - 1].isalnum():  # the cut falls between words
            head = part[:n].rstrip()
            if len(head) >= TRUNCATED_MIN_CHARS and message.endswith(head) and len(message) - len(head) >= pos:
                value = message[pos : len(message) - len(head)].strip()  # what the placeholder held
                return len(head) if not any(ch.isspace() for ch in value) else None
    value = message[pos:].strip()
    return 0 if value and not any(ch.isspace() for ch in value) else None


QUOTED_MIN_CHARS = 24  # a message this long, found whole inside a longer literal, was quoted from it
QUOTED_MIN_WORDS = 3


def literal_matches(message: str, literal: str) -> float:
    """0..1: how likely `literal` (with its placeholders) produced `message`.

    Also a message quoted whole from a longer literal: the first line of a multi-line message
    (flask's "Working outside of application context." opens a four-line string) scores 0.9
    times its specificity; short or few-word messages (`"name"`, `"not found"`) never count so."""
    msg = " ".join(message.split())
    parts = _fixed_parts(literal)
    if not msg or not parts:
        return 0.0
    if len(msg) >= QUOTED_MIN_CHARS and len(msg.split()) >= QUOTED_MIN_WORDS and len(parts) == 1:
        whole = parts[0]
        if len(whole) > len(msg) and msg in whole:
            return round(0.9 * min(1.0, (len(msg) - 4) / 26), 4)
    total = sum(len(p) for p in parts)
    scale = 1.0
    found, end = _found_and_end(parts, msg)
    if found < len(parts):
        found_ci = _found_and_end([p.casefold() for p in parts], msg.casefold())[0]
        if found_ci == len(parts):
            found, scale = found_ci, 0.9
    if 0 < found < len(parts) and (cut := _cut_short(parts[found], msg, end)) is not None:
        # the message stops inside the literal's text: all it says came from here (a literal it
        # matches whole still comes first: "... does not exist" before "... does not exist in {}")
        total, scale = sum(len(p) for p in parts[:found]) + cut, CUT_SCALE
        found = len(parts)
    if found < len(parts):
        matched = sum(len(p) for p in parts[:found])
        if matched < 12 or matched < 0.6 * total:
            return 0.0
        scale *= 0.6 * matched / total
        total = matched
    specificity = min(1.0, max(0.0, (total - 4) / 26))
    coverage = min(1.0, total / len(msg))
    return round(scale * specificity * (0.6 + 0.4 * coverage), 4)


_VARIABLE_SPAN = re.compile(r"'[^']*'|\"[^\"]*\"|<[^<>]*>|\[[^\]]*\]|\S*[\d_./\\()=:]\S*")


_PLAIN_RUN = re.compile(r"\W*[A-Za-z'\s,;-]*")


def literal_pattern(message: str) -> re.Pattern[str]:
    """Cheap prefilter: finds runs of the message's stable words in source text.

    Quoted values, reprs, numbers and identifier-like tokens vary between
    runs, so the pattern looks for any three (else two) consecutive plain
    words of the message; `literal_matches` then scores the candidates.
    """
    runs: list[list[str]] = []
    for piece in _VARIABLE_SPAN.split(message):
        words = re.findall(r"[A-Za-z]+(?:'[a-z]+)?", piece)
        # Only plain words and light punctuation between them. One character class, no nested
        # quantifiers: the nested form backtracked exponentially on long non-matching pieces.
        gaps_ok = _PLAIN_RUN.fullmatch(piece) is not None
        if words and gaps_ok:
            runs.append(words)
        elif words:
            runs.extend([w] for w in words)
    alts: list[str] = []
    for k in (3, 2):
        for words in runs:
            for i in range(len(words) - k + 1):
                alts.append(r"\s+".join(re.escape(w) for w in words[i : i + k]))
        if alts:
            break
    if not alts:
        singles = sorted({w for r in runs for w in r if len(w) >= 6}, key=len, reverse=True)
        alts = [re.escape(singles[0])] if singles else []
    if not alts:
        return re.compile(r"(?!)")
    alts = list(dict.fromkeys(alts))[:40]
    return re.compile(r"(?<!\w)(?:" + "|".join(alts) + r")(?!\w)", re.I)


_ESCAPE = re.compile(r"\\(?P<c>[nrt0'\"\\`])")
_ESC_MAP = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "'": "'", '"': '"', "\\": "\\", "`": "`"}

_DQ = r'"(?:[^"\\\n]|\\.)*"'
_SQ = r"'(?:[^'\\\n]|\\.)*'"
_BLOCK_C = r"/\*.*?\*/"
_LINE_C = r"//[^\n]*"
_LEX = {
    "python": re.compile(
        r"(?P<c>\#[^\n]*)|(?P<s>(?<![\w])(?P<p>[rRbBuUfF]{0,3})(?:"
        r'"""(?:[^"\\]|\\.|"(?!""))*"""'
        r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
        rf"|{_DQ}|{_SQ}))",
        re.S,
    ),
    "js": re.compile(rf"(?P<c>{_LINE_C}|{_BLOCK_C})|(?P<s>(?P<p>)(?:{_DQ}|{_SQ}|`(?:[^`\\]|\\.)*`))", re.S),
    "go": re.compile(
        rf"(?P<c>{_LINE_C}|{_BLOCK_C})|(?P<ch>'(?:\\[^']{{1,10}}|[^'\\])')|(?P<s>(?P<p>)(?:{_DQ}|`[^`]*`))", re.S
    ),
    "rust": re.compile(
        rf"(?P<c>{_LINE_C}|{_BLOCK_C})|(?P<ch>b?'(?:\\[^']{{1,10}}|[^'\\])')"
        r'|(?P<s>(?P<p>b?r(?P<h>#*))"(?:.|\n)*?"(?P=h)|(?P<p2>b?)"(?:[^"\\]|\\.)*")',
        re.S,
    ),
    "c": re.compile(
        rf"(?P<c>{_LINE_C}|{_BLOCK_C})|(?P<ch>'(?:\\[^']{{1,10}}|[^'\\])')|(?P<s>(?P<p>)(?:\"\"\"(?:.|\n)*?\"\"\"|{_DQ}))",
        re.S,
    ),
    "generic": re.compile(rf"(?P<s>(?P<p>)(?:{_DQ}|{_SQ}))", re.S),
}
_LANG_LEXER = {
    "python": "python",
    "py": "python",
    "javascript": "js",
    "js": "js",
    "typescript": "js",
    "ts": "js",
    "tsx": "js",
    "jsx": "js",
    "go": "go",
    "rust": "rust",
    "rs": "rust",
    "java": "c",
    "kotlin": "c",
    "kt": "c",
    "scala": "c",
    "c": "c",
    "cpp": "c",
    "c++": "c",
    "csharp": "c",
    "cs": "c",
    "swift": "c",
    "groovy": "c",
}
_CONCAT_GAP = re.compile(r"\s*\+?\s*|\s*\\\n\s*")
_CONCAT_EXPR_GAP = re.compile(r"\s*\+\s*[^;\"'`{}\n]{1,60}?\s*\+\s*")


def _literal_body(tok: str, lexer: str) -> tuple[str, bool]:
    """Text inside the quotes and whether it is raw (no escape decoding)."""
    m = re.match(r"^[rRbBuUfF]*", tok)
    prefix = m.group(0) if m else ""
    raw = "r" in prefix.lower()
    body = tok[len(prefix) :]
    if lexer == "rust" and raw:
        hashes = len(body) - len(body.lstrip("#"))
        body = body[hashes : len(body) - hashes] if hashes else body
    for q in ('"""', "'''", '"', "'", "`"):
        if body.startswith(q) and body.endswith(q) and len(body) >= 2 * len(q):
            body = body[len(q) : -len(q)]
            break
    return body, raw


def extract_string_literals(source: str, language: str) -> list[tuple[int, str]]:
    """(1-based line, text) of each string literal; adjacent/`+`-joined pieces are merged.

    A piece joined through `+ expr +` is merged with a `{}` placeholder so the
    literal still matches the message the expression produced.
    """
    lexer = _LANG_LEXER.get(language.lower(), "generic")
    rx = _LEX[lexer]
    out: list[tuple[int, str]] = []
    line = 1
    pos = 0
    prev_end = -1
    for m in rx.finditer(source):
        line += source.count("\n", pos, m.start())
        pos = m.start()
        if m.group("s") is None:
            prev_end = -1
            continue
        body, raw = _literal_body(m.group("s"), lexer)
        if not raw:
            body = _ESCAPE.sub(lambda e: _ESC_MAP[e.group("c")], body)
        if out and prev_end >= 0:
            gap = source[prev_end : m.start()]
            if _CONCAT_GAP.fullmatch(gap) and (lexer in ("python", "c") or "+" in gap):
                out[-1] = (out[-1][0], out[-1][1] + body)
                prev_end = m.end()
                continue
            if _CONCAT_EXPR_GAP.fullmatch(gap):
                out[-1] = (out[-1][0], out[-1][1] + "{}" + body)
                prev_end = m.end()
                continue
        out.append((line, body))
        prev_end = m.end()
    return out


def option_literal_pattern(name: str) -> re.Pattern[str] | None:
    """Where a CLI flag or config key is defined: a quoted literal spelling it, dashes optional.

    `--collect-only` matches `"--collect-only"` and `'collect_only'` (argparse's dest);
    `ignore-paths` matches `"ignore-paths"`. None for names too short to be distinctive.
    """
    core = name.lstrip("-").strip()
    if len(core) < 4 or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", core):
        return None
    body = "[-_]".join(re.escape(p) for p in _option_parts(name))
    return re.compile(r"""(["'])(?:--?)?""" + body + r"\1")


def _option_parts(name: str) -> list[str]:
    """A flag's or key's words between its dashes and underscores (`--collect-only`: collect, only)."""
    return [p for p in re.split(r"[-_]", name.lstrip("-").strip()) if p]


def option_needles(name: str) -> list[str]:
    """The quoted spellings `option_literal_pattern` accepts with one separator throughout, as
    substrings a store can look for (`'--collect-only'`, `"collect_only"`, ...)."""
    parts = _option_parts(name)
    cores = dict.fromkeys(sep.join(parts) for sep in ("-", "_"))
    return [q + dash + core + q for q in ("'", '"') for dash in ("", "-", "--") for core in cores]


def registration_pattern(name: str) -> re.Pattern[str] | None:
    """Where a markup directive is registered: its name as a quoted literal bound to a class.

    `include` matches `register_directive('include', Include)` and a registry's
    `'include': Include`, not `options['include']` or `'include': directives.unchanged` (an
    option of another directive). A domain's directive (`py:function`) is registered by its own
    name (`'function': PyFunction`). None for names too short to be distinctive.
    """
    core = name.rsplit(":", 1)[-1]
    if len(core) < 4 or not re.fullmatch(r"[A-Za-z][\w-]*", core):
        return None
    return re.compile(r"""(["'])""" + re.escape(core) + r"""\1\s*[,:]\s*(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Z]\w*)\b""")
