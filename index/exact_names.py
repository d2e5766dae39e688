"""Exact-name lookup: a query that names a symbol defined in exactly one place finds it first.

The most basic promise of a code search tool. Names are read from the query text itself
(not from the analyser, so `--no-analyzer` keeps the promise): `snake_case`, `camelCase`
and `PascalCase` words, `backticked` names, dotted `Class.method` / `pkg.mod.func`, and
`path.py:func` / `path.py::func` (pytest node ids). A short query (three words or fewer)
is a name lookup, so its plain words count too. A bare name that is part of a dotted or
path-qualified name of the same query is subsumed by it (`Cart.add_item` does not also ask
for the class `Cart`).

A search box query spells names in words: "validate email" for `validateEmail`, "deep
function" for `deep_function`. In a query of at most five words, a run of two or more
consecutive plain words that holds all of it but function words and a kind ("validate email
function") also asks for the name it joins into, in any of the usual spellings (snake_case,
camelCase, PascalCase, run together); a run that finds its one definition subsumes its words'
bare names, and so does one defined in several places ("get stack method" asks for `get_stack`,
never for `stack`). BM25 cannot see this: it scores the words apart, and a word every file of a
language spells (`function` in TypeScript) outvotes the rare one.

A name is "defined in exactly one place" when the active membership holds exactly one
(path, qualified symbol) whose last dotted part is the name (qualified names filter on the
qualifier). Long reports and stack traces are left to the analyser: a pasted report names
dozens of functions, and lifting all of them would drown the subject.
"""

from __future__ import annotations

import re

import msgspec

from index.ranking import path_class
from index.store import Store
from index.tokens import STOPWORDS, tokenize, whole_form

# Identifier shapes that are code, not prose.
_SNAKE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$")
_CAMEL = re.compile(r"^[a-z]+[a-z0-9]*(?:[A-Z][a-z0-9]*)+$|^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$")
_WORD = re.compile(r"[^\W\d]\w*")  # identifiers of any script (`Größe`, `日本`), as Python and Go allow
_BACKTICK = re.compile(r"`([^`\n]{2,120})`")
_PATH_FUNC = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,5})::?([A-Za-z_][\w.]*)")
_SCOPED = re.compile(r"(?<![\w:])((?:[^\W\d]\w*::)+~?[^\W\d]\w*)(?![\w:])")
_JS_FILES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx")
# Leading parts of a Rust path that name where it is looked up from, not a module of the workspace.
_PATH_ROOTS = frozenset({"crate", "super", "self", "Self", "std", "core"})
_DOTTED = re.compile(r"(?<![\w./])([^\W\d]\w*(?:\.#?[^\W\d]\w*)+)(?![\w/])")  # `Ky.#retry` too
_PRIVATE = re.compile(r"(?<![\w#.])(#[^\W\d]\w*)")  # `#retry`: only the private member of that name
# A dotted word whose last part is one of these is a file name, not Class.method.
_FILE_EXTS = frozenset(
    {
        "py",
        "pyi",
        "ts",
        "tsx",
        "js",
        "jsx",
        "mjs",
        "cjs",
        "md",
        "rst",
        "txt",
        "json",
        "yaml",
        "yml",
        "toml",
        "cfg",
        "ini",
        "go",
        "rs",
        "java",
        "kt",
        "c",
        "h",
        "cc",
        "cpp",
        "hpp",
        "rb",
        "php",
        "cs",
        "sh",
        "html",
        "css",
        "sql",
        "lock",
        "log",
    }
)
MIN_NAME = 3
# A plain word that more than this share of the spans contain is a word of the code's prose, not
# the name of its one definition: "host" in requests (6 % of spans), against "minversion" in
# astropy (0.1 %). Only for lower-case words beside other content words; a one-word query, or a
# word written as a class is ("Session object"), is a lookup.
COMMON_WORD_SHARE = 0.01
COMMON_WORD_MIN_SPANS = 20  # and a word in at most this many spans is never common (a small repository)
_FILE_QUERY = re.compile(r"(?:\./)?((?:[\w.-]+/)*[\w-][\w.-]*\.([A-Za-z0-9]{1,5}))")
SHORT_QUERY_WORDS = 3
JOIN_QUERY_WORDS = 5  # a query this short may spell a name in words (name_runs)
_PLAIN = re.compile(r"[A-Za-z][a-z0-9]*|[A-Z0-9]+")  # one word of prose: no inner capital, no underscore
_BEFORE_DIGIT = re.compile(r"_(?=[0-9])")
# what a query adds to a name to say what it is ("validate email function"), and the chunk kinds
# each word means: among definitions of the same name in several places, the one of that kind
_FUNCTIONS, _TYPES = ("function", "method"), ("class", "type")
KIND_CHUNKS: dict[str, tuple[str, ...]] = {
    "function": _FUNCTIONS,
    "func": _FUNCTIONS,
    "fn": _FUNCTIONS,
    "def": _FUNCTIONS,
    "method": ("method",),
    "class": _TYPES,
    "type": _TYPES,
    "interface": _TYPES,
    "struct": _TYPES,
    "enum": _TYPES,
}
KIND_WORDS = frozenset(KIND_CHUNKS)
ACRONYM_LETTERS = 4  # "id", "mime", "url": a word this short may be written in capitals inside a name


class NameSpec(msgspec.Struct, frozen=True):
    """One name the query asks for: `name` is the last part, `qualifier` the rest (symbol or path)."""

    text: str  # as written in the query
    name: str
    qualifier: str = ""  # "Cart" for Cart.add_item, "pkg.mod" for pkg.mod.func
    path: str = ""  # "backend/x.py" for backend/x.py:func
    # a run of words ("validate email"): the spellings of the one name they join into; `name` is
    # the first of them, `text` the words as written
    spellings: tuple[str, ...] = ()
    # the chunk kinds the query's other words name ("sales report class"): the one definition of
    # those kinds when the name has several
    kinds: tuple[str, ...] = ()
    # a plain word beside other content words of a short query ("no host supplied"): a name only
    # when the code rarely uses the word (COMMON_WORD_SHARE)
    common: bool = False
    # the query is a file's name or path ("adapters.py", "checkout/service.py"): the one file
    # so named, at its first span
    file: bool = False
    # written with `::` (Rust, C++): its qualifier is modules, namespaces and types in any mix
    # (`crate::parser::Parser::new`, `fmt::format_to` for `fmt::v10::format_to`)
    scoped: bool = False

    @property
    def words(self) -> tuple[str, ...]:
        """The bare words a run subsumes once the code defines the name it spells."""
        return tuple(self.text.split()) if self.spellings else ()


class Definition(msgspec.Struct, frozen=True):
    spec: NameSpec
    path: str
    symbol: str
    posting_ids: list[int]
    shared: int = 1  # definitions of the name (more than one only when asked for: `shared_max`)


class Occurrence(msgspec.Struct, frozen=True):
    """A name a lookup spells that nothing defines, found verbatim in only a few files: the span of
    each file that holds it best (a log line's token, an error code, a rare word of a doc)."""

    spec: NameSpec
    path: str
    posting_id: int
    files: int  # how many files hold it


OCCURRENCE_MAX_CHUNKS = 50  # spans holding the token, at most: more is a word the code uses, not a find


def rare_occurrences(
    store: Store, specs: list[NameSpec], defined: set[str], *, max_files: int, max_chunks: int = OCCURRENCE_MAX_CHUNKS
) -> list[Occurrence]:
    """For each plain name of `specs` that no definition answered (`defined`: spec texts that were),
    the spans of the at most `max_files` files whose text holds it as a whole token. What grep
    finds first: BM25 fuses it with the token's parts (`growlogtoken40` is also `40`, a number every
    file has), and a file-level leg and the docs prior outvoted the one log or doc that holds it."""
    out: list[Occurrence] = []
    for spec in specs:
        if spec.text in defined or spec.common or spec.file or spec.path or spec.qualifier or spec.spellings:
            continue
        if spec.scoped or len(spec.name) < MIN_NAME:
            continue
        term = whole_form(spec.name)
        if not term:
            continue
        df = store.doc_freqs([term])[term]
        if not 0 < df <= max_chunks:
            continue
        hits = store.bm25(f'"{term}"', (1.0, 1.0, 1.0), max_chunks)
        rows = store.postings([pid for pid, _ in hits])
        best: dict[str, int] = {}
        for pid, _ in hits:  # best first: each file's first is its best span
            if pid in rows:
                best.setdefault(rows[pid][0], pid)
        if not best or len(best) > max_files:
            continue
        out += [Occurrence(spec=spec, path=path, posting_id=pid, files=len(best)) for path, pid in best.items()]
    return out


def _codeish(word: str) -> bool:
    return bool(_SNAKE.match(word) or _CAMEL.match(word))


def join_spellings(words: list[str]) -> tuple[str, ...]:
    """The identifiers a run of words may spell: snake_case, camelCase, PascalCase, run together;
    a digit glued to the word before it (`read_string1`); words of up to four letters as acronyms
    (`getMessageID`, `MIMEApplication`)."""
    low = [w.lower() for w in words]
    caps = [w[:1].upper() + w[1:] for w in low]
    acro = [w.upper() if len(w) <= ACRONYM_LETTERS and w.isalpha() else c for w, c in zip(low, caps, strict=True)]
    snake = "_".join(low)
    forms = (
        snake,
        low[0] + "".join(caps[1:]),
        "".join(caps),
        "".join(low),
        _BEFORE_DIGIT.sub("", snake),
        low[0] + "".join(acro[1:]),
        "".join(acro),
    )
    return tuple(dict.fromkeys(forms))


def _query_words(query: str) -> list[str]:
    """The query's words as a name may use them: split on spaces, stripped of punctuation."""
    return [w.strip(".,;:!?\"'()[]") for w in query.split()]


def name_runs(query: str, covered: set[str]) -> list[NameSpec]:
    """The runs of two or more consecutive plain words of a short query that hold every word of it
    but function words and a kind ("validate email function"), longest first: the name the query
    spells. A title such as "Generate man page section directories" is about more than `manpage`:
    it asks only for the name all five words spell. A word already part of a qualified name breaks
    a run."""
    plain = _query_words(query)
    if len(plain) > JOIN_QUERY_WORDS or len(plain) < 2:
        return []
    ok = [bool(_PLAIN.fullmatch(w)) and w not in covered for w in plain]
    content = [i for i, w in enumerate(plain) if w.lower() not in STOPWORDS and w.lower() not in KIND_WORDS]
    if not content:
        return []
    out: list[NameSpec] = []
    for size in range(len(plain), 1, -1):
        for i in range(len(plain) - size + 1):
            run = plain[i : i + size]
            if i <= content[0] and content[-1] < i + size and all(ok[i : i + size]) and sum(map(len, run)) >= MIN_NAME:
                spellings = join_spellings(run)
                kinds = kinds_named(plain[:i] + plain[i + size :])
                out.append(NameSpec(text=" ".join(run), name=spellings[0], spellings=spellings, kinds=kinds))
    return out


def _kinds_around(name: str, words: list[str]) -> tuple[str, ...]:
    """The kinds a query names around a bare name when nothing but kinds is in it ("format
    method"); "call at method" asks for `call_at` (a run), not for the one method named `call`."""
    others = [w for w in words if w != name]
    if not others or any(w.lower() not in KIND_WORDS for w in others):
        return ()
    return kinds_named(others)


def kinds_named(words: list[str]) -> tuple[str, ...]:
    """The chunk kinds these words ask for ("class" -> class, type)."""
    return tuple(sorted({k for w in words for k in KIND_CHUNKS.get(w.lower(), ())}))


def file_query(query: str) -> str | None:
    """The file name or path a query is, alone or beside the word "file" ("adapters.py",
    "checkout/service.py file"); None for anything else."""
    words = [w for w in query.split() if w.lower() != "file"]
    if len(words) != 1:
        return None
    m = _FILE_QUERY.fullmatch(words[0].strip("`'\""))
    return m.group(1) if m and m.group(2).lower() in _FILE_EXTS else None


def is_file_name(name: str) -> bool:
    """A name `exact_definitions` reports is a file's (the reason says "file:")."""
    return file_query(name) is not None


def _is_path_token(word: str) -> bool:
    """`checkout/service.py`, `adapters.py`: its parts name a file, not definitions."""
    tail = word.rsplit(".", 1)
    return "/" in word or (len(tail) == 2 and tail[1].lower() in _FILE_EXTS and bool(tail[0]))


def query_names(query: str) -> list[NameSpec]:
    """The names a query asks for, most specific first, subsumed bare names dropped."""
    path = file_query(query)
    if path is not None:
        return [NameSpec(text=path, name=path.rsplit("/", 1)[-1], path=path, file=True)]
    specs: list[NameSpec] = []
    covered: set[str] = set()
    for token in query.split():
        if _is_path_token(token.strip("`'\"(),;")):
            covered.update(_WORD.findall(token))
    for m in _PATH_FUNC.finditer(query):
        path, func = m.group(1), m.group(2)
        parts = func.split(".")
        specs.append(NameSpec(text=m.group(0), name=parts[-1], qualifier=".".join(parts[:-1]), path=path))
        covered.update(parts)
        covered.update(_WORD.findall(path))
    rest = _PATH_FUNC.sub(" ", query)
    for m in _SCOPED.finditer(rest):  # `DirEntry::path`, `crate::parser::parse_expr` (Rust, C++)
        parts = m.group(1).split("::")
        name = parts[-1].lstrip("~")
        if len(name) >= MIN_NAME:
            specs.append(NameSpec(text=m.group(1), name=name, qualifier=".".join(parts[:-1]), scoped=True))
            covered.update(parts)
    rest = _SCOPED.sub(" ", rest)
    for m in _PRIVATE.finditer(rest):
        if len(m.group(1)) > MIN_NAME:
            specs.append(NameSpec(text=m.group(1), name=m.group(1)))
            covered.add(m.group(1)[1:])
    for m in _DOTTED.finditer(rest):
        word = m.group(1)
        parts = word.split(".")
        if parts[-1].lower() in _FILE_EXTS or len(parts[-1]) < MIN_NAME:
            continue
        specs.append(NameSpec(text=word, name=parts[-1], qualifier=".".join(parts[:-1])))
        covered.update(p.lstrip("#") for p in parts)
    specs += name_runs(rest, covered)
    bare: list[str] = []
    for m in _BACKTICK.finditer(rest):
        inner = m.group(1).strip().rstrip("()")
        if _WORD.fullmatch(inner):
            bare.append(inner)
    words = _WORD.findall(rest)
    query_words = _query_words(query)
    short = len(query_words) <= SHORT_QUERY_WORDS
    # beside a name, a kind word says what the name is ("format method"); it is not a name itself
    bare.extend(w for w in words if (short and (len(words) == 1 or w.lower() not in KIND_WORDS)) or _codeish(w))
    content = [w for w in words if w.lower() not in STOPWORDS and w.lower() not in KIND_WORDS and len(w) >= MIN_NAME]
    quoted = {m.group(1).strip().rstrip("()") for m in _BACKTICK.finditer(rest)}
    seen = {s.text for s in specs}
    for w in bare:
        if len(w) >= MIN_NAME and w not in covered and w not in seen:
            seen.add(w)
            # a capitalised word is written as a class is ("Flask app", "Session object")
            common = len(content) > 1 and not _codeish(w) and w not in quoted and not w[:1].isupper()
            specs.append(NameSpec(text=w, name=w, kinds=_kinds_around(w, query_words), common=common))
    return specs


def _qualifier_ok(spec: NameSpec, path: str, symbol: str) -> bool:
    if spec.path:
        tail = spec.path.replace("\\", "/").lstrip("./")
        if not (path == tail or path.endswith("/" + tail)):
            return False
    if not spec.qualifier:
        return True
    if spec.scoped:
        # every part names the symbol's enclosing type or namespace, or a folder or file of its path
        where = set(symbol.split(".")[:-1]) | {re.sub(r"\.[^.]*$", "", c) for c in path.split("/")}
        return all(q in where for q in spec.qualifier.split(".") if q not in _PATH_ROOTS)
    want = f"{spec.qualifier}.{spec.name}"
    if symbol == want or symbol.endswith("." + want):
        return True
    # pkg.mod.func: the qualifier is the module path
    module = re.sub(r"\.[^./]+$", "", path)
    qual_path = spec.qualifier.replace(".", "/")
    return "." not in symbol and (module == qual_path or module.endswith("/" + qual_path))


def _without_constructors(groups: dict[tuple[str, str], list[int]]) -> dict[tuple[str, str], list[int]]:
    """A method named like its class (a Java or C++ constructor, `JsonReader.JsonReader`) is the
    class's, not a second definition of the name: it made a search for the class name find none."""
    classes = {symbol for _, symbol in groups}
    kept = {
        (path, symbol): pids
        for (path, symbol), pids in groups.items()
        if not (
            (parts := symbol.split("."))
            and len(parts) > 1
            and parts[-1] == parts[-2]
            and ".".join(parts[:-1]) in classes
        )
    }
    return kept or groups


# A line that sets `{name}` at a file's top level: `export const name =`, `var name = ` (Go, also
# inside `var ( ... )`), `name: int = ` (Python), `static final int NAME =` (Java), `const NAME: u8 =`.
_VALUE_LINE = (
    r"^[ \t]*(?:export[ \t]+)?(?:declare[ \t]+)?"
    r"(?:(?:const|let|var|static|final|pub|public|private|protected|readonly)[ \t]+)*"
    r"(?:[\w.<>\[\]]+[ \t]+)?{name}[ \t]*(?::[^=\n]+|[ \t]+[\w.*\[\]<>]+)?[ \t]*:?=(?!=)"
)
MAX_VALUE_SPANS = 200  # top-level spans quoting the name that are read for its definition


def value_definitions(store: Store, spec: NameSpec) -> list[tuple[int, str]]:
    """(posting id, path) of the top-level code span that sets `spec.name` (a constant, a variable,
    an exported object), one per file (in `spec.path` when it names one), for a name no function,
    class or type has: `kyOptionKeys`, Go's `MIMEJSON` in a `const ( ... )` block were found only
    where they are used."""
    name = spec.name
    tokens = tokenize(name)
    # only a name written as code (`kyOptionKeys`, `MAX_RETRIES`, `MIMEJSON`): a plain word ("cart")
    # is set at the top of some test file or script anywhere, and is no lookup of it
    if not tokens or len(name) < MIN_NAME or not (_codeish(name) or (name.isupper() and name.isalnum())):
        return []
    line = re.compile(_VALUE_LINE.format(name=re.escape(name)), re.M)
    setting = [
        (pid, where)
        for pid, where, text in store.spans_quoting([tokens[-1]], [name], MAX_VALUE_SPANS)
        if _qualifier_ok(spec, where, "") and path_class(where) != "test" and line.search(text)
    ]
    rows = store.postings([pid for pid, _ in setting])  # one read for every span's kind
    out: dict[str, int] = {}
    for pid, where in setting:
        if where not in out and rows[pid][1].kind == "module":
            out[where] = pid
    return [(pid, where) for where, pid in out.items()]


def _definition_span(store: Store, pids: list[int]) -> int:
    """The span to land on among one symbol's spans (in line order): the one holding the definition's
    first line, not the later pieces of a long body (they share its block; a lookup of `Session.send`
    lands on `def send`, the same span for every query); of overloads (separate blocks: TypeScript's
    signatures, `@overload` stubs), the implementation, the largest."""
    if len(pids) == 1:
        return pids[0]
    rows = store.postings(pids)
    blocks = {pid: rows[pid][1].block_end_line - rows[pid][1].block_start_line for pid in pids if pid in rows}
    return max(pids, key=lambda pid: (blocks.get(pid, -1), -pids.index(pid)))


def unique_definitions(
    store: Store, specs: list[NameSpec], *, max_names: int = 16, shared_max: int = 0
) -> list[Definition]:
    """Each spec defined in exactly one (path, symbol) of the active membership, with its spans;
    with `shared_max`, also every definition of a name defined in 2 to `shared_max` places (`shared`).
    A run that spells a defined name (in one place or several) subsumes the bare names of its
    words (later specs); one defined once outside tests and again in tests finds the one outside,
    and a name defined in several places the one of the kind the query names, if there is one."""
    out: list[Definition] = []
    taken: set[tuple[str, str]] = set()
    subsumed: set[str] = set()
    spans = 0
    for spec in specs[:max_names]:
        if spec.file:
            heads = store.file_heads(spec.path)
            if len(heads) == 1:
                out.append(Definition(spec=spec, path=heads[0][0], symbol="", posting_ids=[heads[0][1]]))
            continue
        if not spec.spellings and not spec.qualifier and not spec.path and spec.text in subsumed:
            continue
        if spec.common:
            spans = spans or max(store.chunk_count(), 1)
            if store.doc_freqs([spec.name.lower()])[spec.name.lower()] > max(
                COMMON_WORD_SHARE * spans, COMMON_WORD_MIN_SPANS
            ):
                continue
        groups: dict[tuple[str, str], list[int]] = {}
        kind_of: dict[tuple[str, str], str] = {}
        names = spec.spellings or (spec.name,)
        names += tuple("#" + n for n in names)  # a JavaScript private member is named `#retry`
        for pid, path, symbol, kind in store.definitions_named(*names):
            if _qualifier_ok(spec, path, symbol):
                groups.setdefault((path, symbol), []).append(pid)
                kind_of.setdefault((path, symbol), kind)
        if spec.name == "default":  # the chunker's name for an anonymous `export default function`
            groups = {k: v for k, v in groups.items() if not k[0].endswith(_JS_FILES)}
        if not groups and not spec.spellings and not spec.qualifier and not spec.kinds:
            # no function, class or type: a constant or variable set at the top of a file
            for pid, path in value_definitions(store, spec):
                groups.setdefault((path, ""), []).append(pid)
        if groups:  # the words spell a name the code has: none of them is a name alone
            subsumed.update(spec.words)
        if len(groups) > 1:
            groups = _without_constructors(groups)
        if len(groups) > 1 and spec.spellings:
            # words name no spelling: a test's fixture `placed_order` does not hide the type `PlacedOrder`
            groups = {k: v for k, v in groups.items() if path_class(k[0]) != "test"}
        if len(groups) > 1 and spec.kinds:
            # "sales report class": the kind the query names picks among the name's definitions
            groups = {k: v for k, v in groups.items() if kind_of[k] in spec.kinds}
        if 1 < len(groups) <= shared_max and not spec.spellings:
            for key, pids in groups.items():
                if key not in taken:
                    taken.add(key)
                    out.append(
                        Definition(
                            spec=spec,
                            path=key[0],
                            symbol=key[1],
                            posting_ids=[_definition_span(store, pids)],
                            shared=len(groups),
                        )
                    )
            continue
        if len(groups) != 1:
            continue
        ((key, pids),) = groups.items()
        if key in taken:
            continue
        taken.add(key)
        out.append(Definition(spec=spec, path=key[0], symbol=key[1], posting_ids=[_definition_span(store, pids)]))
    return out


__all__ = [
    "Definition",
    "NameSpec",
    "Occurrence",
    "file_query",
    "is_file_name",
    "join_spellings",
    "kinds_named",
    "name_runs",
    "query_names",
    "rare_occurrences",
    "unique_definitions",
]
