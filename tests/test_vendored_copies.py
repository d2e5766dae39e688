"""A copy of another project inside ours (`requests/packages/urllib3`) ranks as vendored code: its
own version string inside a versioned package says so where its path does not."""

from __future__ import annotations

from pathlib import Path

from index.engine import Engine
from index.ranking import RankingConfig, vendored_roots, workspace_class

INITS = {
    "requests/__init__.py": "from .__version__ import __version__\n",
    "requests/packages/__init__.py": "from . import urllib3\n",
    "requests/packages/urllib3/__init__.py": "__author__ = 'x'\n__version__ = 'dev'\n",
    "requests/packages/urllib3/packages/ssl_match_hostname/__init__.py": "__version__ = '3.4.0.2'\n",
    # ours: a subpackage re-exporting the host's version is no release of its own
    "requests/adapters/__init__.py": "from .. import __version__\n__version__ = __version__\n",
    # a namespace chain with no outer version: every package here is first-party
    "google/__init__.py": "",
    "google/cloud/__init__.py": "",
    "google/cloud/storage/__init__.py": '__version__: str = "2.1"\n',
    # a src layout's top package has no package above it
    "src/flask/__init__.py": '__version__ = "2.3.0"\n',
    # a release inside a plain folder (no package chain) is a project of the workspace
    "tools/helper/__init__.py": '__version__ = "0.1"\n',
}


def test_a_versioned_package_inside_a_versioned_package_is_a_copy_and_only_the_outermost_counts() -> None:
    texts = {p: t for p, t in INITS.items() if "__version__" in t}
    roots = vendored_roots(INITS, texts)
    assert roots == {"requests/packages/urllib3"}
    assert workspace_class("requests/packages/urllib3/connectionpool.py", roots) == "vendored"
    assert workspace_class("requests/packages/urllib3/packages/six.py", roots) == "vendored"
    assert workspace_class("requests/packages/urllib3_extra.py", roots) == "source"  # a prefix of a name is no folder
    assert workspace_class("requests/sessions.py", roots) == "source"
    assert workspace_class("requests/sessions.py") == "source" and workspace_class("tests/test_x.py", roots) == "test"
    assert vendored_roots(INITS, {}) == frozenset()


FILES = {
    "shop/__init__.py": '__version__ = "1.4.0"\n',
    "shop/session.py": (
        "from shop.packages.tinypool.pool import ConnectionPool\n\n\n"
        "class Session:\n"
        '    """Sends requests through a connection pool and retries on a timeout."""\n\n'
        "    def send(self, request, timeout=None):\n"
        "        pool = ConnectionPool(retries=3)\n"
        "        return pool.urlopen(request, timeout=timeout)\n"
    ),
    "shop/packages/__init__.py": "",
    "shop/packages/tinypool/__init__.py": '__version__ = "1.26.4"\n',
    "shop/packages/tinypool/pool.py": (
        "class ConnectionPool:\n"
        '    """A pool of connections; a request that hits a timeout retries."""\n\n'
        "    def urlopen(self, request, timeout=None, retries=3):\n"
        "        for _ in range(retries):\n"
        "            try:\n"
        "                return self._make_request(request, timeout)\n"
        "            except TimeoutError:\n"
        "                continue\n"
    ),
}
QUERY = "connection pool request timeout retries"


def _write(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _reasons(eng: Engine, cfg: RankingConfig) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for h in eng.query(QUERY, top_k=10, legs="lexical", ranking=cfg).hits:
        out.setdefault(h.file, []).extend(h.reasons)
    return out


def test_the_copy_loses_the_vendored_prior_in_a_real_index_and_the_rule_can_be_turned_off(tmp_path: Path) -> None:
    ws = _write(tmp_path / "ws")
    with Engine(ws, tmp_path / "idx") as eng:
        eng.sync()
        on = _reasons(eng, RankingConfig())
        off = _reasons(eng, RankingConfig().override({"priors.nested_releases": False}))
        # a new version line makes the package ours again: the roots follow the index generation
        (ws / "shop/packages/tinypool/__init__.py").write_text("from shop import __version__\n")
        eng.sync()
        edited = _reasons(eng, RankingConfig())
    vendored = f"prior: vendored {-RankingConfig().priors.vendored:+.2f}"
    assert vendored in on["shop/packages/tinypool/pool.py"]
    assert not any(r.startswith("prior: vendored") for r in on["shop/session.py"])
    assert not any(r.startswith("prior: vendored") for rs in off.values() for r in rs)
    assert not any(r.startswith("prior: vendored") for rs in edited.values() for r in rs)
