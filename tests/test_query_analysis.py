"""The query analyser on realistic, hand-written bug reports."""

from __future__ import annotations

import time

import pytest

from index.query_analysis import (
    CodeLink,
    Identifier,
    QueryAnalysis,
    analyze_query,
    code_links,
    code_pointers,
    path_mentions,
)
from index.retrieval.literals import extract_string_literals, literal_matches, literal_pattern
from index.retrieval.paths import (
    PathSuffixIndex,
    installed_relative,
    is_third_party,
    link_target,
    map_frame_to_workspace,
)


def kinds(a: QueryAnalysis) -> dict[str, str]:
    return {i.text: i.kind for i in a.identifiers}


# ---------------------------------------------------------------------------
# Realistic reports
# ---------------------------------------------------------------------------

PY_REPORT = """\
Dataset.interp_like drops attrs when `method="nearest"`
<!-- Please include a self-contained copy-pastable example that generates the issue if possible.
Bug reports that follow these guidelines are easier to diagnose. -->

**What happened**:
Calling `Dataset.interp_like` with `keep_attrs=True` loses the attributes and then fails.

**Minimal Complete Verifiable Example**:

```python
import numpy as np
import xarray as xr
from xarray.core.missing import interp_func

ds = xr.Dataset({"a": ("x", np.arange(3))})
ds.interp_like(other, method="nearest", keep_attrs=True)
```

```
Traceback (most recent call last):
  File "repro.py", line 6, in <module>
    ds.interp_like(other, method="nearest", keep_attrs=True)
  File "/home/ana/.venv/lib/python3.10/site-packages/xarray/core/dataset.py", line 3312, in interp_like
    return self.interp(indexers, method=method)
  File "/home/ana/.venv/lib/python3.10/site-packages/xarray/core/missing.py", line 615, in interp_func
    raise ValueError(f"Resulting object does not have monotonic global indexes along dimension {dim}")
ValueError: Resulting object does not have monotonic global indexes along dimension x
```

**Environment**:

<details><summary>Output of <tt>xr.show_versions()</tt></summary>

INSTALLED VERSIONS
------------------
commit: None
python: 3.10.4 (main, Mar 31 2022, 08:41:55) [GCC 7.5.0]
python-bits: 64
OS: Linux
xarray: 2022.3.0
pandas: 1.4.2
numpy: 1.22.3

</details>
"""


def test_python_traceback_report():
    a = analyze_query(PY_REPORT)
    assert [f.function for f in a.frames] == ["<module>", "interp_like", "interp_func"]
    assert [f.order for f in a.frames] == [0, 1, 2]
    assert a.frames[-1].raw_path.endswith("xarray/core/missing.py")
    assert a.frames[-1].line == 615 and a.frames[-1].language == "python"
    assert a.error_messages == ["Resulting object does not have monotonic global indexes along dimension x"]
    assert a.exception_types == ["ValueError"]
    k = kinds(a)
    assert k["Dataset.interp_like"] == "backtick"
    assert k["keep_attrs"] == "config_key"  # `keep_attrs=True` in prose
    assert k["xarray.core.missing.interp_func"] == "dotted"
    assert k["ds.interp_like"] == "code"
    # intent: title and prose, no code, no traceback, no version dump, no template heading
    assert a.intent_text.startswith("Dataset.interp_like drops attrs")
    assert "loses the attributes" in a.intent_text
    for noise in ("INSTALLED VERSIONS", "pandas", "Traceback", "import numpy", "What happened", "guidelines"):
        assert noise not in a.intent_text
    assert "Traceback (most recent call last)" in a.code_text
    assert "ds.interp_like(other" in a.code_text
    assert "pandas: 1.4.2" not in a.code_text
    assert any(d.startswith("html comment") for d in a.dropped)
    assert any(d.startswith("environment section") for d in a.dropped)
    assert any(d.startswith("template heading") for d in a.dropped)


PYTEST_REPORT = """\
caplog.clear() breaks caplog.get_records()

Running the test below with `pytest -p no:cacheprovider --log-level=DEBUG`:

```
============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-7.2.1, pluggy-1.0.0
rootdir: /work/proj
collected 1 item

test_log.py F                                                            [100%]

=================================== FAILURES ===================================
_________________________________ test_clear __________________________________

caplog = <_pytest.logging.LogCaptureFixture object at 0x7f0d3a8>

    def test_clear(caplog):
        verify_consistency(caplog)
>       caplog.clear()

test_log.py:9:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
src/_pytest/logging.py:442: in clear
    self.handler.reset()
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

    def reset(self):
>       assert self.records == []
E       AssertionError: assert [<LogRecord: test, 10>] == []

src/_pytest/logging.py:351: AssertionError
```
"""


def test_pytest_output():
    a = analyze_query(PYTEST_REPORT)
    assert [(f.raw_path, f.line, f.function) for f in a.frames] == [
        ("test_log.py", 9, ""),
        ("src/_pytest/logging.py", 442, "clear"),
        ("src/_pytest/logging.py", 351, "reset"),  # function taken from the `def` above the E line
    ]
    assert a.frames[-1].order == 2
    assert a.exception_types == ["AssertionError"]
    assert a.error_messages == ["assert [<LogRecord: test, 10>] == []"]
    k = kinds(a)
    assert k["caplog.clear"] == "dotted" and k["caplog.get_records"] == "dotted"
    assert k["--log-level"] == "flag"
    assert "platform linux" not in a.intent_text


NODE_REPORT = """\
Crash when the config file is empty

    TypeError: Cannot read properties of undefined (reading 'plugins')
        at loadPlugins (/Users/kim/app/node_modules/@acme/cli/lib/plugins.js:41:23)
        at Config.resolve (/Users/kim/app/src/config/resolve.ts:88:12)
        at async main (file:///Users/kim/app/src/index.mjs:12:3)
        at node:internal/process/task_queues:95:5
"""


def test_node_stack_is_reversed_to_outermost_first():
    a = analyze_query(NODE_REPORT)
    assert a.exception_types == ["TypeError"]
    assert a.error_messages == ["Cannot read properties of undefined (reading 'plugins')"]
    by_order = sorted(a.frames, key=lambda f: f.order)
    assert [f.function for f in by_order] == ["", "async main", "Config.resolve", "loadPlugins"]
    assert by_order[-1].raw_path == "/Users/kim/app/node_modules/@acme/cli/lib/plugins.js"
    assert by_order[-2].language == "typescript" and by_order[-2].line == 88
    assert by_order[1].raw_path == "file:///Users/kim/app/src/index.mjs"


JAVA_REPORT = """\
Exception in thread "main" java.lang.IllegalStateException: Queue is closed
\tat org.acme.queue.BoundedQueue.offer(BoundedQueue.java:57)
\tat org.acme.queue.Worker$Loop.run(Worker.java:120)
\tat java.base/java.lang.Thread.run(Thread.java:833)
Caused by: java.io.IOException: Broken pipe
\tat org.acme.net.Channel.write(Channel.kt:31)
\t... 3 more
"""


def test_java_frames_map_package_to_path():
    a = analyze_query(JAVA_REPORT)
    paths = [f.raw_path for f in sorted(a.frames, key=lambda f: f.order)]
    assert paths == [
        "java/lang/Thread.java",
        "org/acme/queue/Worker.java",
        "org/acme/queue/BoundedQueue.java",
        "org/acme/net/Channel.kt",  # the cause is reported last: deepest
    ]
    assert a.frames[0].function == "run" and a.frames[0].language == "java"
    assert a.exception_types == ["IllegalStateException", "IOException"]
    assert a.error_messages == ["Queue is closed", "Broken pipe"]


GO_REPORT = """\
panic: runtime error: index out of range [3] with length 3

goroutine 1 [running]:
github.com/acme/store/index.(*Tree).Insert(0xc000012345, {0x4b2f00, 0x3})
\t/home/ci/go/src/github.com/acme/store/index/tree.go:142 +0x1d
main.main()
\t/home/ci/go/src/github.com/acme/store/cmd/store/main.go:27 +0x65
exit status 2
"""


def test_go_panic():
    a = analyze_query(GO_REPORT)
    frames = sorted(a.frames, key=lambda f: f.order)
    assert [(f.function, f.line) for f in frames] == [("main", 27), ("Tree.Insert", 142)]
    assert frames[-1].raw_path.endswith("store/index/tree.go") and frames[-1].language == "go"
    assert a.error_messages == ["runtime error: index out of range [3] with length 3"]


RUST_REPORT = """\
thread 'main' panicked at src/parser.rs:77:14:
called `Option::unwrap()` on a `None` value
stack backtrace:
   0: rust_begin_unwind
             at /rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/panicking.rs:645:5
   1: mycrate::parser::Parser::expect_ident
             at ./src/parser.rs:77:14
   2: mycrate::main
             at ./src/main.rs:9:5
"""


def test_rust_panic_site_is_deepest():
    a = analyze_query(RUST_REPORT)
    frames = sorted(a.frames, key=lambda f: f.order)
    assert frames[0].raw_path == "./src/main.rs" and frames[0].function == "main"
    assert frames[-1].raw_path == "src/parser.rs" and frames[-1].line == 77
    assert any(f.function == "expect_ident" for f in frames)
    assert a.error_messages == ["called `Option::unwrap()` on a `None` value"]
    assert is_third_party(frames[-2].raw_path)  # the std frame


def test_rust_old_panic_format():
    a = analyze_query("thread 'main' panicked at 'attempt to divide by zero', src/calc.rs:12:9")
    assert a.error_messages == ["attempt to divide by zero"]
    assert a.frames[0].raw_path == "src/calc.rs" and a.frames[0].line == 12


SPHINX_REPORT = """\
autodoc_typehints = "description" ignores `autodoc_type_aliases`
**Describe the bug**
With `autodoc_typehints = "description"` the aliases configured in conf.py are not applied by
`sphinx.ext.autodoc` and the ``FunctionDocumenter.format_args`` output still shows the full type.

**To Reproduce**
```
# conf.py
extensions = ['sphinx.ext.autodoc']
autodoc_typehints = 'description'
autodoc_type_aliases = {'JSONObject': 'types.JSONObject'}
```
Run `sphinx-build -b html --keep-going docs out` and look at the output.

**Expected behavior**
N/A

**Environment info**
- OS: Mac
- Python version: 3.9.1
- Sphinx version: 3.4.0
- Sphinx extensions: sphinx.ext.autodoc, sphinx.ext.napoleon
- Extra tools: none

**Additional context**
- [ ] I searched existing issues
"""


def test_config_keys_backticks_and_template_noise():
    a = analyze_query(SPHINX_REPORT)
    k = kinds(a)
    assert k["autodoc_type_aliases"] == "backtick"
    assert k["FunctionDocumenter.format_args"] == "backtick"
    assert k["sphinx.ext.autodoc"] == "backtick"
    assert k["autodoc_typehints"] == "config_key"
    assert k["--keep-going"] == "flag"
    assert "conf.py" in k and k["conf.py"] == "path"
    # the strongest kinds come first
    tiers = [{"backtick": 0, "code": 2}.get(i.kind, 1) for i in a.identifiers]
    assert tiers == sorted(tiers)
    for noise in ("Describe the bug", "Python version", "Sphinx version", "Mac", "N/A", "searched existing"):
        assert noise not in a.intent_text
    assert "aliases configured in conf.py are not applied" in a.intent_text
    assert a.frames == [] and a.error_messages == []


IPYTHON_REPORT = """\
Plotting fails with a categorical hue

```
---------------------------------------------------------------------------
KeyError                                  Traceback (most recent call last)
<ipython-input-3-46dd21e9c95a> in <module>
      2 penguins = load()
----> 3 grid.map(plot, hue=penguins["species"])

~/miniconda3/lib/python3.9/site-packages/plotlib/grid.py in map(self, func, **kwargs)
   1263         idx = zip(rows, cols)
-> 1264         self._map_pairs(func, idx, **kwargs)

KeyError: 'Adelie'
```
"""


def test_ipython_traceback_takes_line_from_arrow():
    a = analyze_query(IPYTHON_REPORT)
    assert [(f.raw_path, f.line, f.function) for f in a.frames] == [
        ("<ipython-input-3-46dd21e9c95a>", 3, "<module>"),
        ("~/miniconda3/lib/python3.9/site-packages/plotlib/grid.py", 1264, "map"),
    ]
    assert a.exception_types == ["KeyError"] and a.error_messages == ["'Adelie'"]
    assert "Traceback" not in kinds(a)


def test_unfenced_traceback_in_ci_log_with_timestamps():
    text = (
        "Worker crashes on startup in CI\n"
        "> [2022-06-09T13:38:24.824Z] Traceback (most recent call last):\n"
        '> [2022-06-09T13:38:24.824Z]   File "/builds/app/app/pool.py", line 30, in start\n'
        '> [2022-06-09T13:38:24.824Z]     raise ValueError("Number of workers must be at least 1")\n'
        "> [2022-06-09T13:38:24.824Z] ValueError: Number of workers must be at least 1\n"
        "It happens only in containers.\n"
    )
    a = analyze_query(text)
    assert [(f.raw_path, f.line) for f in a.frames] == [("/builds/app/app/pool.py", 30)]
    assert a.error_messages == ["Number of workers must be at least 1"]
    assert "It happens only in containers." in a.intent_text


def test_prose_only_report():
    text = (
        "Display fixture scope with `pytest --fixtures`\n"
        "It would be useful to show fixture scopes; currently the only way to learn the scope of a\n"
        "fixture is to read the docs or the source code of FixtureDef."
    )
    a = analyze_query(text)
    assert a.frames == [] and a.error_messages == [] and a.exception_types == []
    assert a.code_text == ""
    assert a.intent_text == text
    k = kinds(a)
    assert k == {"--fixtures": "flag", "FixtureDef": "camel"}
    # ordinary English words are not identifiers
    assert not {"useful", "scope", "currently", "docs"} & set(k)


def test_nested_fences_and_tilde_fence():
    text = (
        "Docs example renders wrong\n"
        "````markdown\n"
        "```python\n"
        "render_table(rows)\n"
        "```\n"
        "````\n"
        "The inner fence must stay code.\n"
        "~~~\n"
        "parse_header(line)\n"
        "~~~\n"
    )
    a = analyze_query(text)
    assert "render_table(rows)" in a.code_text and "```python" in a.code_text
    assert "parse_header(line)" in a.code_text
    assert "render_table" not in a.intent_text and "parse_header" not in a.intent_text
    assert a.intent_text == "Docs example renders wrong\nThe inner fence must stay code."
    k = kinds(a)
    assert k["render_table"] == "code" and k["parse_header"] == "code"


def test_indented_code_and_doctest_are_evidence():
    text = (
        "Quantity.to_value ignores equivalencies\n"
        "\n"
        "    q = Quantity(3, unit_registry.km)\n"
        "    q.to_value(unit_registry.m, equivalencies=spectral())\n"
        "\n"
        "and in a session:\n"
        "\n"
        ">>> from units.core import Quantity\n"
        ">>> Quantity(1).to_value()\n"
        "1.0\n"
    )
    a = analyze_query(text)
    assert "q.to_value" in a.code_text and "q.to_value" not in a.intent_text
    k = kinds(a)
    assert k["Quantity.to_value"] == "dotted"
    assert k["units.core.Quantity"] == "dotted"
    assert k["equivalencies"] == "code"
    assert "1.0" not in k


def test_pip_list_and_freeze_dumps_dropped():
    text = (
        "Collection hangs with plugin X\n"
        "pip list:\n"
        "```\n"
        "Package        Version\n"
        "-------------- -------\n"
        "attrs          19.1.0\n"
        "pluggy         0.9.0\n"
        "pytest         4.4.0\n"
        "```\n"
        "and freeze:\n"
        "attrs==19.1.0\n"
        "pluggy==0.9.0\n"
        "six==1.12.0\n"
        "The hang starts in collection.\n"
    )
    a = analyze_query(text)
    assert "pluggy" not in a.code_text and "pluggy" not in a.intent_text
    assert sum(d.startswith("version dump") for d in a.dropped) == 2
    assert "The hang starts in collection." in a.intent_text


def test_warning_lines():
    text = (
        "Deprecation warning from read_table\n"
        "```\n"
        "/home/u/proj/pkg/io/table.py:210: FutureWarning: read_table is deprecated, use read_csv\n"
        "  warnings.warn(msg, FutureWarning)\n"
        "```\n"
    )
    a = analyze_query(text)
    assert a.frames[0].raw_path == "/home/u/proj/pkg/io/table.py" and a.frames[0].line == 210
    assert a.exception_types == ["FutureWarning"]
    assert a.error_messages == ["read_table is deprecated, use read_csv"]


def test_docs_builder_diagnostics_about_the_users_files():
    # `path:line:message` about the reporter's own file (any extension): the message is what the
    # project printed, so it is looked up as a literal like any error message.
    text = (
        "Sphinx 3.2 complains about option:: syntax\n"
        "```\n"
        "Warning, treated as error:\n"
        "../../docs/qemu-option-trace.rst.inc:4:Malformed option description '[enable=]PATTERN', should look like \"opt\"\n"
        "doc/glossary.rst:243:duplicate term description of mysql, other instance in glossary\n"
        "```\n"
        "See setup.py:3:x and notes.txt:2:two words for context.\n"
    )
    a = analyze_query(text)
    assert a.error_messages == [
        "Malformed option description '[enable=]PATTERN', should look like \"opt\"",
        "duplicate term description of mysql, other instance in glossary",
    ]
    assert a.frames == []  # the user's docs are not workspace frames


def test_windows_traceback():
    text = (
        "Traceback (most recent call last):\n"
        '  File "C:\\Users\\dev\\proj\\src\\pkg\\mod.py", line 12, in load\n'
        "    return parse(x)\n"
        "OSError: [WinError 3] The system cannot find the path specified\n"
    )
    a = analyze_query(text)
    assert a.frames[0].raw_path == "C:\\Users\\dev\\proj\\src\\pkg\\mod.py"
    assert map_frame_to_workspace(a.frames[0].raw_path, ["src/pkg/mod.py", "tests/mod.py"]) == "src/pkg/mod.py"
    assert a.error_messages == ["[WinError 3] The system cannot find the path specified"]


def test_empty_and_garbage_input():
    for text in ("", "   \n\n", "```", "<!-- only a comment", "\x00\x01 binary ```` ~~~"):
        a = analyze_query(text)
        assert isinstance(a, QueryAnalysis)
        assert a.frames == []


def test_a_report_eight_times_longer_takes_at_most_about_eight_times_longer():
    """No super-linear regular expression: the cost of a paste grows with its length. A ratio of
    two sizes on the same machine, not a wall-clock claim (a busy box slows both alike)."""
    one = PY_REPORT + PYTEST_REPORT + SPHINX_REPORT + NODE_REPORT
    assert len(one * 8) > 20_000

    def best_of(text: str, runs: int = 5) -> float:
        analyze_query(text)  # warm regex caches
        best = float("inf")
        for _ in range(runs):
            t0 = time.perf_counter()
            analyze_query(text)
            best = min(best, time.perf_counter() - t0)
        return best

    ratio = best_of(one * 8) / best_of(one)
    assert ratio < 16, ratio  # linear: ~8; a quadratic pattern: ~64


def test_deterministic():
    assert analyze_query(PY_REPORT) == analyze_query(PY_REPORT)
    assert all(isinstance(i, Identifier) for i in analyze_query(PY_REPORT).identifiers)


# ---------------------------------------------------------------------------
# Path mapping
# ---------------------------------------------------------------------------

WS = [
    "astropy/io/ascii/ui.py",
    "astropy/io/ascii/core.py",
    "astropy/io/registry/core.py",
    "astropy/table/connect.py",
    "astropy/io/ascii/connect.py",
    "astropy/units/decorators.py",
    "astropy/utils/decorators.py",
    "setup.py",
    "docs/conf.py",
    "src/main/java/org/acme/queue/BoundedQueue.java",
    "web/src/config/resolve.ts",
]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/usr/lib/python3/dist-packages/astropy/io/ascii/ui.py", "astropy/io/ascii/ui.py"),
        ("/home/u/.venv/lib/python3.10/site-packages/astropy/io/ascii/core.py", "astropy/io/ascii/core.py"),
        ("C:\\src\\astropy\\table\\connect.py", "astropy/table/connect.py"),
        ("c:\\SRC\\Astropy\\Units\\Decorators.py", "astropy/units/decorators.py"),  # Windows: case-insensitive
        ("./astropy/io/registry/core.py", "astropy/io/registry/core.py"),
        ("astropy/utils/decorators.py", "astropy/utils/decorators.py"),
        ("ui.py", "astropy/io/ascii/ui.py"),  # unique file name alone is enough
        ("core.py", None),  # ambiguous file name alone
        ("/elsewhere/io/core.py", None),  # ambiguous: io/core.py does not single one out... (ascii vs registry)
        ("/x/other/decorators.py", None),  # ambiguous name, only the name matches
        ("/tmp/build/setup.py", "setup.py"),
        ("/var/task/ui.py", "astropy/io/ascii/ui.py"),  # a deployed copy: an absolute path's folders are the machine's
        ("proj/ui.py", None),  # relative to the reporter's project: its folder is not ascii/
        ("org/acme/queue/BoundedQueue.java", "src/main/java/org/acme/queue/BoundedQueue.java"),
        ("/Users/kim/app/src/config/resolve.ts", "web/src/config/resolve.ts"),
        ("file:///C:/work/astropy/io/ascii/connect.py", "astropy/io/ascii/connect.py"),
        ("<stdin>", None),
        ("nothing_like_it.py", None),
        ("", None),
    ],
)
def test_map_frame_to_workspace(raw, expected):
    assert map_frame_to_workspace(raw, WS) == expected
    assert PathSuffixIndex(WS).lookup(raw) == expected


def test_a_file_name_alone_under_other_folders_is_another_file():
    """A Rust panic's `./src/main.rs:12` (the reporter's own binary) matched the one `main.rs` of
    the workspace, `walkdir-list/main.rs`, on its name alone: frame bonuses went to the wrong file."""
    ws = ["walkdir-list/main.rs", "src/lib.rs", "main.py"]
    assert map_frame_to_workspace("./src/main.rs", ws) is None
    assert map_frame_to_workspace("main.rs", ws) == "walkdir-list/main.rs"  # a bare name still finds it
    assert map_frame_to_workspace("/home/u/proj/main.py", ws) == "main.py"  # ours at the root
    assert map_frame_to_workspace("/var/task/main.rs", ws) == "walkdir-list/main.rs"  # deployed (Lambda, /app)
    assert map_frame_to_workspace("/build/walkdir-list/main.rs", ws) == "walkdir-list/main.rs"


def test_suffix_ties_are_refused():
    ws = ["a/pkg/mod.py", "b/pkg/mod.py", "c/other/mod.py"]
    assert map_frame_to_workspace("/site-packages/pkg/mod.py", ws) is None
    assert map_frame_to_workspace("/x/a/pkg/mod.py", ws) == "a/pkg/mod.py"
    assert map_frame_to_workspace("other/mod.py", ws) == "c/other/mod.py"


def test_installed_frames_of_this_project_resolve_to_the_workspace():
    ws = [
        "xarray/core/common.py",
        "xarray/__init__.py",
        "src/_pytest/python.py",
        "six.py",
        "requests/__init__.py",
        "requests/packages/__init__.py",
        "requests/packages/urllib3/poolmanager.py",
    ]
    idx = PathSuffixIndex(ws)
    env = "/home/u/miniconda3/envs/dev/lib/python3.9/site-packages"
    assert installed_relative(f"{env}/xarray/core/common.py") == "xarray/core/common.py"
    assert installed_relative("/usr/lib/python3.11/json/decoder.py") is None
    assert idx.resolve_frame(f"{env}/xarray/core/common.py") == "xarray/core/common.py"
    assert idx.resolve_frame(r"C:\Py\Lib\site-packages\_pytest\python.py") == "src/_pytest/python.py"
    assert idx.resolve_frame("/usr/lib/python3/dist-packages/six.py") == "six.py"
    assert idx.resolve_frame(f"{env}/zarr/core.py") is None  # not ours
    # the installed urllib3 is not the copy vendored inside the requests package
    assert idx.resolve_frame(f"{env}/urllib3/poolmanager.py") is None
    assert (
        idx.resolve_frame(f"{env}/requests/packages/urllib3/poolmanager.py")
        == "requests/packages/urllib3/poolmanager.py"
    )
    assert idx.resolve_frame("/usr/lib/python3.11/json/decoder.py") is None
    assert idx.resolve_frame(f"{env}/xarray/core/common.py", installed=False) is None
    assert idx.resolve_frame("/srv/app/xarray/core/common.py", installed=False) == "xarray/core/common.py"
    # an egg (easy_install, `setup.py install`) keeps the package one folder deeper
    egg = "/home/u/.pyenv/versions/2.7.6/lib/python2.7/site-packages/xarray-0.9.1-py2.7.egg"
    assert installed_relative(f"{egg}/xarray/core/common.py") == "xarray/core/common.py"
    assert idx.resolve_frame(f"{egg}/xarray/core/common.py") == "xarray/core/common.py"
    assert idx.resolve_frame(r"C:\Python27\Lib\site-packages\six-1.9.0-py2.7.egg\six.py") == "six.py"
    assert idx.resolve_frame(f"{env}/urllib3-1.22-py3.6.egg/urllib3/poolmanager.py") is None  # still not vendored


def test_a_tie_goes_to_the_workspace_path_the_frame_ends_with_whole():
    ws = ["pylint/__init__.py", "tests/regrtest_data/ns_import_self/pylint/__init__.py", "pylint/lint/run.py"]
    idx = PathSuffixIndex(ws)
    # a checkout run in place: the frame path is <checkout>/pylint/__init__.py
    assert idx.lookup("/Users/mb/programming/pylint/pylint/__init__.py") == "pylint/__init__.py"
    # the fixture when the frame names its folders
    assert idx.lookup("/src/pylint/tests/regrtest_data/ns_import_self/pylint/__init__.py") == ws[1]
    # no candidate the frame ends with whole: still ambiguous
    two = PathSuffixIndex(["a/util.py", "b/a/util.py", "c/a/util.py"])
    assert two.lookup("/x/b/a/util.py") == "b/a/util.py"
    assert two.lookup("/x/y/a/util.py") == "a/util.py"
    assert PathSuffixIndex(["d/a/util.py", "c/a/util.py"]).lookup("/x/y/a/util.py") is None


def test_path_index_is_fast_for_10k_paths():
    ws = [f"pkg{i % 50}/sub{i % 7}/module_{i}.py" for i in range(10_000)] + [f"pkg{i}/__init__.py" for i in range(50)]
    idx = PathSuffixIndex(ws)
    t0 = time.perf_counter()
    for i in range(1000):
        assert idx.lookup(f"/home/u/site-packages/pkg{i % 50}/sub{i % 7}/module_{i}.py") == ws[i]
    assert idx.lookup("/venv/pkg7/__init__.py") == "pkg7/__init__.py"
    assert idx.lookup("__init__.py") is None
    assert time.perf_counter() - t0 < 0.5


@pytest.mark.parametrize(
    ("raw", "third"),
    [
        ("/home/u/.venv/lib/python3.10/site-packages/pkg/mod.py", True),
        ("/usr/lib/python3/dist-packages/astropy/io/ascii/ui.py", True),
        ("/usr/lib/python3.9/multiprocessing/pool.py", True),
        ("/usr/local/lib/python3.8/logging/__init__.py", True),
        ("C:\\Python39\\Lib\\site-packages\\numpy\\core\\fromnumeric.py", True),
        ("C:\\Python39\\Lib\\json\\decoder.py", True),
        ("<frozen importlib._bootstrap>", True),
        ("/Users/kim/app/node_modules/@acme/cli/lib/plugins.js", True),
        ("node:internal/process/task_queues", True),
        ("/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/std/src/panicking.rs", True),
        ("/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.1/src/de.rs", True),
        ("/usr/local/go/src/runtime/panic.go", True),
        ("/home/u/go/pkg/mod/github.com/pkg/errors@v0.9.1/errors.go", True),
        ("java/lang/Thread.java", True),
        ("/home/u/proj/pkg/mod.py", False),
        ("src/_pytest/logging.py", False),
        ("C:\\src\\pkg\\mod.py", False),
        ("./src/main.rs", False),
        ("<stdin>", False),
        ("org/acme/queue/BoundedQueue.java", False),
    ],
)
def test_is_third_party(raw, third):
    assert is_third_party(raw) is third


# ---------------------------------------------------------------------------
# Error message <-> literal
# ---------------------------------------------------------------------------

MSG = "Resulting object does not have monotonic global indexes along dimension x"


@pytest.mark.parametrize(
    "literal",
    [
        "Resulting object does not have monotonic global indexes along dimension {}",
        "Resulting object does not have monotonic global indexes along dimension {dim}",
        "Resulting object does not have monotonic global indexes along dimension {0!r:>10}",
        "Resulting object does not have monotonic global indexes along dimension %s",
        "Resulting object does not have monotonic global indexes along dimension %(dim)s",
        "Resulting object does not have monotonic\nglobal indexes along dimension ${dim}",
    ],
)
def test_literal_matches_placeholders(literal):
    assert literal_matches(MSG, literal) > 0.9


def test_literal_matches_scoring():
    good = literal_matches(
        "RST.__init__() got an unexpected keyword argument 'header_rows'", "%s() got an unexpected keyword argument %r"
    )
    assert good > 0.7
    # parts out of order -> no match
    assert literal_matches(MSG, "along dimension {} does not have monotonic global indexes") < 0.5
    # short / generic literals score low
    assert literal_matches(MSG, "{}") == 0.0
    assert literal_matches(MSG, "dimension") < 0.3
    assert literal_matches(MSG, "does not have %s") < 0.4
    # a literal that is only a prefix of a longer (concatenated) message still scores, lower
    part = literal_matches(
        MSG + " for variable 'temperature' in dataset 'ocean'",
        "Resulting object does not have monotonic global indexes",
    )
    assert 0.5 < part < literal_matches(MSG, MSG.replace(" x", " {}"))
    # case differences cost a little
    assert 0.5 < literal_matches(MSG.upper(), MSG.replace(" x", " {}")) < literal_matches(MSG, MSG.replace(" x", " {}"))
    # escaped percent and braces are literal text
    assert literal_matches("progress 100% done for {job}", "progress 100%% done for {{job}}") > 0.8
    # a message quoted whole from a longer literal (its first line): it came from there
    long_literal = "Working outside of application context.\n\nAttempted to use functionality that expected ..."
    assert literal_matches("Working outside of application context.", long_literal) == 0.9
    assert literal_matches("application context", long_literal) == 0.0  # too short to say
    # unrelated
    assert literal_matches(MSG, "Invalid fill method. Expecting pad (ffill), backfill (bfill) or nearest.") == 0.0
    assert literal_matches("", "anything at all here") == 0.0


def test_literal_pattern_prefilter():
    pat = literal_pattern("RST.__init__() got an unexpected keyword argument 'header_rows'")
    src = 'raise TypeError(f"{name}() got an unexpected keyword argument {key!r}")'
    assert pat.search(src)
    assert not pat.search("def unexpected(): pass  # keyword")
    pat2 = literal_pattern(MSG)
    assert pat2.search('"Resulting object does not have monotonic global indexes along dimension {}"')
    assert pat2.search("raise ValueError('...does not have monotonic' ' global indexes ...')")
    assert not literal_pattern("").search("anything")
    assert not literal_pattern("'x' 12 <obj>").search("anything")


# ---------------------------------------------------------------------------
# String literal extraction
# ---------------------------------------------------------------------------

PY_SRC = '''\
def combine(datasets, dim):
    """Combine datasets.

    Don't "quote" me.
    """
    # "not a literal"
    if not indexes.is_monotonic:
        raise ValueError(
            "Resulting object does not have monotonic"
            " global indexes along dimension {}".format(dim)
        )
    log.warning(f"skipping {name!r}: {reason}")
    raw = r"C:\\tmp\\n"
    msg = "tab\\there"
    b = b'bytes'
'''


def test_extract_python_literals():
    lits = extract_string_literals(PY_SRC, "python")
    texts = [t for _, t in lits]
    assert "Resulting object does not have monotonic global indexes along dimension {}" in texts
    assert "not a literal" not in texts
    assert "skipping {name!r}: {reason}" in texts
    assert "C:\\tmp\\n" in texts  # raw strings are not unescaped
    assert "tab\there" in texts
    assert "bytes" in texts
    assert (9, "Resulting object does not have monotonic global indexes along dimension {}") in lits
    assert lits[0][0] == 2 and lits[0][1].startswith("Combine datasets.")
    assert (
        literal_matches(
            MSG,
            dict((t, t) for _, t in lits)["Resulting object does not have monotonic global indexes along dimension {}"],
        )
        > 0.9
    )


def test_extract_js_go_rust_java_literals():
    js = 'const x = `Cannot read ${prop} of ${obj}`; // "comment"\nthrow new Error("bad " + name + " value");\n'
    assert [t for _, t in extract_string_literals(js, "typescript")] == [
        "Cannot read ${prop} of ${obj}",
        "bad {} value",
    ]
    go = 'r := \'"\'\nreturn fmt.Errorf("open %s: %w", path, err) /* "c" */\nq := `raw\n"x"`\n'
    assert extract_string_literals(go, "go") == [(2, "open %s: %w"), (3, 'raw\n"x"')]
    rs = 'fn f<\'a>(x: &\'a str) { panic!("bad input: {}", x); let r = r#"a "quoted" b"#; }'
    assert [t for _, t in extract_string_literals(rs, "rust")] == ["bad input: {}", 'a "quoted" b']
    java = 'throw new IllegalStateException("Queue is " + "closed"); char c = \'"\';'
    assert [t for _, t in extract_string_literals(java, "java")] == ["Queue is closed"]
    c = 'fprintf(stderr, "usage: %s "\n  "[options]\\n", argv[0]);'
    assert extract_string_literals(c, "c") == [(1, "usage: %s [options]\n")]
    assert extract_string_literals("", "python") == []
    assert extract_string_literals('"unterminated', "python") == []


def test_literal_pattern_is_linear_on_pathological_messages() -> None:
    import time

    from index.retrieval.literals import literal_pattern

    msg = "word " * 40 + "x" * 30 + "!" + " and more words here" * 20
    t0 = time.perf_counter()
    pat = literal_pattern(msg)
    assert time.perf_counter() - t0 < 0.5  # the nested-quantifier form never returned here
    assert isinstance(pat.pattern, str)


def test_option_literal_pattern_finds_where_a_flag_is_defined() -> None:
    from index.retrieval.literals import option_literal_pattern

    pat = option_literal_pattern("--collect-only")
    assert pat is not None
    assert pat.search('group.addoption("--collectonly", "--collect-only", action="store_true")')
    assert pat.search("dest='collect_only'")
    assert not pat.search("collect only the first")  # prose, not a literal
    assert not pat.search('"--collect-only-x"')
    key = option_literal_pattern("ignore-paths")
    assert key is not None and key.search("('ignore-paths', {'type': 'regexp_paths_csv'})")
    assert option_literal_pattern("-v") is None and option_literal_pattern("--a b") is None


def test_registration_pattern_finds_the_class_a_directive_name_is_bound_to() -> None:
    from index.retrieval.literals import registration_pattern

    pat = registration_pattern("include")
    assert pat is not None
    for text in ("directives.register_directive('include', Include)", '"include": nodes.Include,', "'include':Include"):
        m = pat.search(text)
        assert m is not None and m["cls"] == "Include", text
    for text in ("options['include']", "'include': directives.unchanged", "'include_x': Foo", "include, Include"):
        assert pat.search(text) is None, text
    dom = registration_pattern("py:function")  # a domain's directive: its registry spells the bare name
    assert dom is not None and dom.search("'function': PyFunction,")
    assert registration_pattern("py:obj") is None and registration_pattern("a b") is None


def test_markup_directives_are_the_directives_a_report_shows() -> None:
    report = (
        "Included files are not processed\n\n"
        "```rst\n"
        ".. include:: part.rst\n"
        "   .. toctree::\n"
        "      :maxdepth: 1\n"
        ".. _my-label:\n"
        ".. |name| replace:: text\n"
        ".. [1] a footnote\n"
        ".. py:function:: f(x)\n"
        "```\n\n"
        "> .. note:: quoted\n"
        "It fails inline .. like:: this, and again with\n\n"
        "    .. include:: other.rst\n"
    )
    a = analyze_query(report)
    assert a.markup == ["include", "toctree", "py:function", "note"]
    assert analyze_query("refund a captured payment").markup == []


def test_signature_callees_are_the_functions_call_signature_typeerrors_name() -> None:
    from index.query_analysis import signature_callees

    messages = [
        "RST.__init__() got an unexpected keyword argument 'header_rows'",
        "Flask.url_for() got multiple values for argument 'self'",
        "JSONDecodeError.__init__() missing 2 required positional arguments: 'doc' and 'pos'",
        "parse() takes 2 positional arguments but 3 were given",
        "make.<locals>.inner() takes from 1 to 2 positional arguments but 3 were given",
        "pkg.mod.run() missing 1 required keyword-only argument: 'cfg'",
        "RST.__init__() got an unexpected keyword argument 'other'",  # once
        "unsupported operand type(s) for +: 'int' and 'str'",
        "'NoneType' object is not callable",
        "list.append() takes exactly one argument (2 given)",
    ]
    assert signature_callees(messages) == [
        "RST.__init__",
        "Flask.url_for",
        "JSONDecodeError.__init__",
        "parse",
        "inner",
        "pkg.mod.run",
        "list.append",
    ]
    assert signature_callees([]) == []


def test_source_permalinks_of_every_forge_with_their_lines():
    text = (
        "The scale is computed here (https://github.com/o/r/blob/ba786bc1/pkg/_core/scales.py#L377-L382).\n"
        "GitLab: https://gitlab.com/group/sub/r/-/blob/main/src/x.py#L10-20, Gitea:\n"
        "https://codeberg.org/o/r/src/branch/main/pkg/m.py#L5-L9 and Bitbucket\n"
        "https://bitbucket.org/o/r/src/abc123/pkg/b.py#lines-12:14 and the whole file\n"
        "[mod](https://github.com/o/r/blob/main/pkg/my%20mod.py). Again: https://github.com/o/r/blob/ba786bc1/pkg/_core/scales.py#L377-L382\n"
        "Not files: https://github.com/o/r/tree/main/pkg https://github.com/o/r/issues/12 https://example.com/a.py\n"
    )
    assert code_links(text) == [
        CodeLink(path="pkg/_core/scales.py", start_line=377, end_line=382),
        CodeLink(path="src/x.py", start_line=10, end_line=20),
        CodeLink(path="pkg/m.py", start_line=5, end_line=9),
        CodeLink(path="pkg/b.py", start_line=12, end_line=14),
        CodeLink(path="pkg/my mod.py"),
    ]


def test_a_link_in_the_templates_html_comment_is_not_the_reporters():
    report = (
        "Plot legend is wrong\n\n"
        "<!-- Please read https://github.com/o/r/blob/main/CONTRIBUTING.md first -->\n"
        "It is set in https://github.com/o/r/blob/main/pkg/plot.py#L12\n"
    )
    assert analyze_query(report).links == [CodeLink(path="pkg/plot.py", start_line=12, end_line=12)]


def test_a_permalink_names_a_workspace_file_by_its_path_from_the_root():
    paths = frozenset({"requests/adapters.py", "setup.py", "pkg/a.py"})
    assert link_target("requests/adapters.py", paths) == "requests/adapters.py"
    # a ref with a slash (`proposed/3.0.0`) leaves its tail in front of the path
    assert link_target("3.0.0/requests/adapters.py", paths) == "requests/adapters.py"
    # the workspace is a folder of the linked repository
    assert link_target("sub/pkg/a.py", paths) == "pkg/a.py"
    assert link_target("setup.py", paths) == "setup.py"
    # another project's file of the same name is not ours
    assert link_target("other/setup.py", paths) is None
    assert link_target("django/contrib/sessions/middleware.py", paths) is None


def test_a_path_and_line_in_backticks_is_a_pointer():
    text = (
        "My guess: `sessions.py:313` is simply `method = method.upper()`; see also\n"
        "`requests/utils.py#L118-L120`, `src\\pkg\\app.py, line 12` and `./pkg/io.py:7:3: if name[0]:`.\n"
        "Not pointers: sessions.py:9 in prose, `a.py` without a line, `x.rst:4`, `https://h/a.py:3`,\n"
        "`sessions.py:313` again.\n"
    )
    assert code_pointers(text) == [
        CodeLink(path="sessions.py", start_line=313, end_line=313, written="sessions.py:313"),
        CodeLink(path="requests/utils.py", start_line=118, end_line=120, written="requests/utils.py#L118-L120"),
        CodeLink(path="src/pkg/app.py", start_line=12, end_line=12, written="src\\pkg\\app.py, line 12"),
        CodeLink(path="pkg/io.py", start_line=7, end_line=7, written="./pkg/io.py:7:3"),
    ]
    links = analyze_query("Wrong: https://github.com/o/r/blob/main/pkg/a.py#L3 and `sessions.py:313`").links
    assert [link.label() for link in links] == ["pkg/a.py#L3", "`sessions.py:313`"]


def test_a_source_path_with_a_directory_in_the_report_is_a_whole_file_mention():
    text = (
        "In requests/sessions.py is a command: method = builtin_str(method); `src/pkg/app.py` too.\n"
        "Not mentions: utils.py alone, docs/conf.rst, the frame's file and a linked file:\n"
        "https://github.com/o/r/blob/main/pkg/linked.py#L3\n\n"
        "```\nTraceback (most recent call last):\n"
        '  File "/venv/lib/site-packages/requests/models.py", line 3, in send\n'
        "ValueError: boom\n```\n"
        "and requests/models.py or pkg/linked.py once more, requests/sessions.py again.\n"
    )
    a = analyze_query(text)
    mentions = [link for link in a.links if link.written and link.start_line is None]
    assert sorted(mentions, key=lambda link: link.path) == [  # in the identifiers' order: backticks first
        CodeLink(path="requests/sessions.py", written="requests/sessions.py"),
        CodeLink(path="src/pkg/app.py", written="src/pkg/app.py"),
    ]
    assert sorted(link.label() for link in mentions) == ["`requests/sessions.py`", "`src/pkg/app.py`"]
    assert path_mentions([Identifier(text="a/b.py", kind="snake")], []) == []  # only what reads as a path


def test_a_pointers_bare_file_name_names_the_one_workspace_file_of_that_name():
    paths = frozenset({"requests/sessions.py", "pkg/utils.py", "other/utils.py", "setup.py"})
    assert link_target("sessions.py", paths, bare=True) == "requests/sessions.py"
    assert link_target("sessions.py", paths) is None  # a URL's bare name is another repository's
    assert link_target("utils.py", paths, bare=True) is None  # two files of that name: neither
    assert link_target("missing.py", paths, bare=True) is None
    assert link_target("/site-packages/requests/sessions.py", paths, bare=True) == "requests/sessions.py"


def test_a_huge_url_like_token_is_read_in_linear_time():
    # A backtracking pattern took 7.8 s on 80 KB of this and would take minutes on 800 KB.
    t0 = time.perf_counter()
    assert code_links("https://a/" * 80_000) == []
    assert code_links("https://github.com/o/r/blob/main/" + "a/" * 200_000) == []
    assert time.perf_counter() - t0 < 5.0


def test_a_module_qualified_exception_line_is_an_error_whatever_its_class_is_called() -> None:
    """A library's exception prints as `requests.exceptions.MissingSchema: ...`: no Error suffix and
    no traceback above it, so the message went unrecognised and its raise site unsearched."""
    a = analyze_query(
        "requests.exceptions.MissingSchema: Invalid URL 'x': No scheme supplied. Perhaps you meant https://x?"
    )
    assert a.exception_types == ["MissingSchema"]
    assert a.error_messages == ["Invalid URL 'x': No scheme supplied. Perhaps you meant https://x?"]
    for prose in ("Session.request: merge the settings", "Dataset: copy fails", "see e.g.Foo: bar"):
        b = analyze_query(prose)
        assert b.exception_types == [] and b.error_messages == [], prose


def test_a_message_quoted_up_to_a_cut_still_names_its_literal():
    """Users paste a message without its tail (a path, a list of places): the literal's text they
    kept is all they said, so it matches as a whole one, by the length kept."""
    literal = "the role '%s' was not found in %s"
    cut = literal_matches("the role 'foo' was not found", literal)
    assert cut >= 0.75 and cut < literal_matches("the role 'foo' was not found in /etc/roles", literal)
    # stopped right after a value: the text before it came from here
    assert literal_matches("Cannot open the cache database 'x.db'", "Cannot open the cache database '%s' in %s") > 0.75
    # cut inside a word, a cut piece too short to say, or words the literal does not have: as before
    assert literal_matches("the role 'foo' was n", literal) == 0.0
    assert literal_matches("the role 'foo' was not found anywhere", literal) < 0.5
    assert literal_matches("not found", "%s not found in %s") == 0.0


def test_an_error_bang_log_line_is_a_message():
    """`ERROR! the role 'foo' was not found` (ansible's form) is a message like `ERROR: ...`."""
    assert analyze_query("ERROR! the role 'foo' was not found").error_messages == ["the role 'foo' was not found"]
    # docker's advice (review: three such lines pushed a traceback's message past the analyser's three)
    assert (
        analyze_query("WARNING! Using --password via the CLI is insecure. Use --password-stdin.").error_messages == []
    )
    assert analyze_query("ERROR!!! nothing works").error_messages == []


def test_a_whole_match_beats_a_longer_literal_the_message_is_cut_from():
    """Review: "Configuration file app.toml does not exist" scored the same against the literal it
    came from and against a longer one it is a prefix of; and any text, spaces too, passed for the
    value between the matched text and the cut."""
    msg = "Configuration file app.toml does not exist"
    whole = literal_matches(msg, "Configuration file {} does not exist")
    assert whole > literal_matches(msg, "Configuration file {} does not exist in {}") >= 0.75
    assert (
        literal_matches(
            "activation_type=QuantType.QInt8, weight_type=QuantType.QUInt8!=QuantType.QInt8",
            "activation_type={} !=QuantType.QInt8, weight_type=QuantType.QInt8.",
        )
        < 0.75
    )
