"""Issue 13 #1 and #4: names that are not UTF-8, and files skipped for their content."""

from __future__ import annotations

import json
import os
from pathlib import Path

from index.engine import Engine
from tests.conftest import run_cli, write


def test_a_file_name_that_is_not_utf8_is_skipped_not_fatal(repo: Path, tmp_path: Path) -> None:
    write(repo, "shop/cart.py", "def add_item(cart, sku):\n    cart.append(sku)\n")
    bad = os.path.join(os.fsencode(repo), b"bad\xffname.py")
    with open(bad, "wb") as fh:
        fh.write(b"x = 1\n")
    idx = str(tmp_path / "idx")
    rb = run_cli("context", "rebuild", "--workspace", str(repo), "--index-dir", idx)
    assert rb.returncode == 0, rb.stderr
    assert "Traceback" not in rb.stderr
    st = run_cli("context", "status", "--workspace", str(repo), "--index-dir", idx, "--json")
    assert st.returncode == 0, st.stderr
    status = json.loads(st.stdout)
    assert status["generation"] is not None
    examples = [p for ex in status["skipped_examples"].values() for p in ex]
    assert "bad\\xffname.py" in examples  # shown escaped, never as a lone surrogate
    se = run_cli("search", "add_item", "--legs", "lexical", "--workspace", str(repo), "--index-dir", idx, "--json")
    assert se.returncode == 0, se.stderr
    assert json.loads(se.stdout)[0]["file"] == "shop/cart.py"


def test_files_skipped_for_their_content_do_not_leave_the_index_stale(repo: Path, tmp_path: Path) -> None:
    write(repo, "shop/cart.py", "def add_item(cart, sku):\n    cart.append(sku)\n")
    (repo / "shop" / "blob.py").write_bytes(b"\x00\x01\x02 binary")
    (repo / "shop" / "latin.py").write_bytes("caf\xe9 = 1\n".encode("latin-1") * 50)
    write(repo, "web/app.min.js", "var a=1;" * 20000)
    write(repo, "deploy/id_rsa", "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----\n")
    with Engine(repo, index_dir=tmp_path / "idx") as eng:
        rep = eng.sync()
        assert rep.skipped.get("binary") == 1 and rep.skipped.get("invalid_utf8") == 1
        assert rep.skipped.get("minified") == 1 and rep.skipped.get("secret") == 1
        fr = eng.freshness()
        assert fr.state == "fresh", fr
        # a second sync reads none of them again and still counts them
        again = eng.sync()
        assert not again.changed and again.skipped == rep.skipped
        # changed, still binary: still fresh; changed into text: added
        (repo / "shop" / "blob.py").write_bytes(b"\x00\x01\x02 other binary")
        assert eng.freshness().state == "fresh"
        (repo / "shop" / "blob.py").write_text("def now_text():\n    return 1\n")
        fr = eng.freshness()
        assert fr.state == "stale" and fr.added == 1
        eng.sync()
        assert eng.freshness().state == "fresh"
