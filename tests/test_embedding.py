"""The pinned embedder: fails closed on bad assets, embeds deterministically, never downloads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from index.embedding import (
    INSTALLED_FILE,
    MODEL_FILE,
    TOKENIZER_FILE,
    Embedder,
    default_model_dir,
    disabled_optimizers,
    load_manifest,
    model_digest,
    open_session,
    probe_assets,
)
from index.errors import RetrievalIntegrity

ROOT = Path(__file__).resolve().parents[1]
SKIP = os.environ.get("LAMINA_SKIP_MODEL_TESTS") == "1"


def model(fn):  # type: ignore[no-untyped-def]
    """Needs the installed model; skipped on the fast path."""
    return pytest.mark.model(pytest.mark.skipif(SKIP, reason="LAMINA_SKIP_MODEL_TESTS=1")(fn))


def installed_dir() -> Path:
    d = default_model_dir()
    if not (d / MODEL_FILE).exists():
        pytest.fail(
            f"embedding model not installed at {d}: run `python -m assets.install` (or set LAMINA_SKIP_MODEL_TESTS=1)"
        )
    return d


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    if SKIP:
        pytest.skip("LAMINA_SKIP_MODEL_TESTS=1")
    return Embedder.load(installed_dir(), threads=2)


@pytest.fixture(scope="session")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pristine copy of the installed assets; tamper tests copy it again."""
    if SKIP:
        pytest.skip("LAMINA_SKIP_MODEL_TESTS=1")
    dst = tmp_path_factory.mktemp("model") / "pristine"
    shutil.copytree(installed_dir(), dst)
    return dst


@pytest.fixture()
def tamper_dir(model_copy: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "m"
    shutil.copytree(model_copy, dst)
    return dst


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_default_dir_is_versioned_and_overridable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    m = load_manifest()
    monkeypatch.delenv("LAMINA_MODEL_DIR", raising=False)
    d = default_model_dir()
    assert d.name == f"all-MiniLM-L6-v2-{m['model_digest'][:12]}" and d.parent.name == "models"
    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path))
    assert default_model_dir() == tmp_path


def test_manifest_digest_covers_model_tokenizer_and_session_recipe() -> None:
    m = load_manifest()
    recipe = disabled_optimizers(m)
    assert recipe == ["SkipLayerNormFusion"]
    assert m["model_digest"] == model_digest(m["model_sha256"], m["tokenizer_sha256"], recipe)
    assert model_digest(m["model_sha256"], "0" * 64, recipe) != m["model_digest"]
    # Another recipe is another text -> vector function: its vectors must not share a cache key.
    assert model_digest(m["model_sha256"], m["tokenizer_sha256"]) != m["model_digest"]


@model
def test_session_runs_the_pinned_recipe(embedder: Embedder) -> None:
    """The engine's vectors are the recipe's bytes; onnxruntime's default rewrites give other bytes."""
    import onnxruntime as ort

    m = load_manifest()
    data = (installed_dir() / MODEL_FILE).read_bytes()
    texts = [
        "def merge(a, b):\n    return sorted(set(a) | set(b))  # union, ordered",
        "Raise ValueError when the timeout is negative instead of waiting forever.",
        "class Cache:\n    def get(self, key, default=None):\n        return self._data.get(key, default)",
    ]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sessions = {
        "pinned": open_session(data, m),
        "default": ort.InferenceSession(data, sess_options=opts, providers=["CPUExecutionProvider"]),
    }
    ours = embedder.embed_documents(texts)
    got = {name: [] for name in sessions}
    for text in texts:
        enc = embedder._tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        for name, sess in sessions.items():
            got[name].append(sess.run(["sentence_embedding"], feed)[0][0])
    assert np.array_equal(ours, np.array(got["pinned"]))
    assert not np.array_equal(ours, np.array(got["default"]))
    assert min(cos(a, b) for a, b in zip(ours, got["default"], strict=True)) > 0.98


# -- fail closed ------------------------------------------------------------


def _assert_integrity(d: Path, fragment: str) -> None:
    with pytest.raises(RetrievalIntegrity) as err:
        Embedder.load(d)
    text = str(err.value)
    assert text.startswith("LAMINA_RETRIEVAL_INTEGRITY")
    assert "python -m assets.install --force" in text
    assert fragment in text


@model
def test_pristine_copy_loads(model_copy: Path) -> None:
    e = Embedder.load(model_copy)
    assert e.model_digest == load_manifest()["model_digest"] and e.dims == 384 and e.max_tokens == 256


@model
def test_missing_tokenizer_fails_closed(tamper_dir: Path) -> None:
    (tamper_dir / TOKENIZER_FILE).unlink()
    _assert_integrity(tamper_dir, "missing")


@model
def test_missing_dir_fails_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAMINA_MODEL_DIR", str(tmp_path / "nowhere"))
    _assert_integrity(default_model_dir(), "missing")


@model
def test_flipped_model_byte_fails_closed(tamper_dir: Path) -> None:
    path = tamper_dir / MODEL_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    _assert_integrity(tamper_dir, "corrupt")


@model
def test_probe_trusts_stats_only_from_a_hash_check_and_rehashes_a_changed_file(tamper_dir: Path) -> None:
    """`context status` asks probe_assets instead of loading the model: no session, no onnxruntime."""
    probe_assets(tamper_dir)  # hashed, then its stats recorded
    path = tamper_dir / MODEL_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))  # same size, new mtime: the recorded stats no longer vouch for it
    with pytest.raises(RetrievalIntegrity, match="corrupt"):
        probe_assets(tamper_dir)
    (tamper_dir / TOKENIZER_FILE).unlink()
    with pytest.raises(RetrievalIntegrity, match="missing"):
        probe_assets(tamper_dir)


def test_probe_of_assets_never_checked_fails_closed(tmp_path: Path) -> None:
    (tmp_path / MODEL_FILE).write_bytes(b"not a model")
    (tmp_path / TOKENIZER_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(RetrievalIntegrity, match="corrupt"):
        probe_assets(tmp_path)


@model
def test_edited_tokenizer_fails_closed(tamper_dir: Path) -> None:
    path = tamper_dir / TOKENIZER_FILE
    tok = json.loads(path.read_text())
    tok["truncation"]["max_length"] = 512  # valid tokenizer, different embedding function
    path.write_text(json.dumps(tok))
    _assert_integrity(tamper_dir, "not the pinned")


@model
def test_different_model_fails_closed(tamper_dir: Path) -> None:
    """A well-formed ONNX model that is not the pinned one, installed 'properly'."""
    from tests.test_assets import tiny_bert

    other, _, _ = tiny_bert(seed=3)
    data = other.SerializeToString()
    (tamper_dir / MODEL_FILE).write_bytes(data)
    import hashlib

    rec = json.loads((tamper_dir / INSTALLED_FILE).read_text())
    rec["files"][MODEL_FILE] = hashlib.sha256(data).hexdigest()
    (tamper_dir / INSTALLED_FILE).write_text(json.dumps(rec))
    _assert_integrity(tamper_dir, "different model")


# -- embeddings -------------------------------------------------------------


@model
def test_probe_embeddings_match_manifest(embedder: Embedder) -> None:
    probes = load_manifest()["probes"]
    got = embedder.embed_documents([p["text"] for p in probes])
    for row, probe in zip(got, probes, strict=True):
        assert cos(row, np.array(probe["embedding"], dtype=np.float32)) >= 0.99
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    assert got.dtype == np.float32 and got.shape == (len(probes), 384)


@model
def test_similar_closer_than_unrelated(embedder: Embedder) -> None:
    v = embedder.embed_documents(
        [
            "A man is eating food.",
            "A man is eating a piece of bread.",
            "The new movie is awesome.",
            "def add_item(self, item):\n    self.items.append(item)",
            "def remove_item(self, item):\n    self.items.remove(item)",
            "SELECT name FROM users WHERE age > 30",
        ]
    )
    assert float(v[0] @ v[1]) > 0.6 > float(v[0] @ v[2])
    assert float(v[3] @ v[4]) > float(v[3] @ v[5]) + 0.2
    q = embedder.embed_query("add an item to the shopping cart")
    assert float(q @ v[3]) > float(q @ v[5])


@model
def test_batches_equal_single_runs_in_input_order(embedder: Embedder) -> None:
    texts = ["short", "a much longer text " * 40, "def f(x):\n    return x + 1", "", "medium length sentence here"]
    batched = embedder.embed_documents(texts, batch_size=3)
    for text, row in zip(texts, batched, strict=True):
        single = embedder.embed_documents([text])[0]
        assert np.max(np.abs(single - row)) < 1e-6
        assert np.max(np.abs(np.asarray(embedder.embed_query(text)) - row)) < 1e-6


@model
def test_vectors_are_byte_identical_whatever_the_batch_and_threads(embedder: Embedder) -> None:
    """A text's vector is a pure function of the text: alone, among short or long (padding-sized)
    neighbours, at any position, in any group size, as a query, on one core or spread over several
    (concurrent one-thread runs, or one run's operators split over threads)."""
    target = "def apply_discount(cart, code):\n    return cart.total * (1 - rate(code))"
    short = ["x", "ok", "a b"]
    long = ["the cart total is recomputed after each discount is applied " * 12, "token " * 300]
    assert embedder.workers == 2
    alone = embedder.embed_documents([target])[0].tobytes()
    one_core = Embedder.load(installed_dir(), threads=1)
    operators = Embedder.load(installed_dir(), threads=2, parallel="operators")
    assert one_core.workers == 1 and operators.workers == 1
    groups = [
        [target, *short],
        [*short, target],
        [short[0], target, *long],
        [*long, target],
        [*long, *short, target, *long],
        [target] * 3 + short,
    ]
    for emb in (embedder, one_core, operators):
        for texts in groups:
            for batch_size in (1, 2, 32):
                out = emb.embed_documents(texts, batch_size=batch_size)
                for i, text in enumerate(texts):
                    if text == target:
                        assert out[i].tobytes() == alone, (texts.index(target), batch_size, emb.workers)
        assert np.asarray(emb.embed_query(target)).tobytes() == alone
    for max_tokens in (16, 128):  # the build's truncation: same rule under a shorter limit
        ref = embedder.embed_documents([long[1]], max_tokens=max_tokens)[0].tobytes()
        mixed = one_core.embed_documents([*short, long[1], long[0]], max_tokens=max_tokens, batch_size=2)
        assert mixed[3].tobytes() == ref


@model
def test_padded_batches_are_masked(embedder: Embedder) -> None:
    """Opt-in padded batching: padding is masked out (only int8 activation scale noise remains)."""
    texts = ["tiny", "the cart total is recomputed after each discount is applied " * 8]
    alone = embedder.embed_documents(texts)
    embedder.batch_invariant = False
    try:
        padded = embedder.embed_documents(texts, batch_size=2)
    finally:
        embedder.batch_invariant = True
    # int8 activation scales are per batch, so the long neighbour shifts the tiny text's vector a
    # little (0.973 on this CPU, 0.98+ on others); unmasked padding would swamp a 3-token text
    # and pull it toward its neighbour, which it must stay far from
    assert cos(alone[0], padded[0]) >= 0.95
    assert cos(padded[0], alone[1]) < cos(alone[0], padded[0]) - 0.5
    assert cos(alone[1], padded[1]) >= 0.99


@model
def test_query_cache_hit_does_not_encode(embedder: Embedder) -> None:
    first = embedder.embed_query("where is the password reset handled?")
    n = embedder.encode_count
    again = embedder.embed_query("where is the password reset handled?")
    assert embedder.encode_count == n
    assert again is first and not again.flags.writeable
    embedder.embed_query("a different query")
    assert embedder.encode_count == n + 1


@model
def test_encode_count_and_progress(embedder: Embedder) -> None:
    seen: list[tuple[int, int]] = []
    n = embedder.encode_count
    out = embedder.embed_documents(
        [f"text number {i}" for i in range(7)], batch_size=3, progress=lambda d, t: seen.append((d, t))
    )
    assert out.shape == (7, 384)
    assert embedder.encode_count == n + 7
    assert seen == [(3, 7), (6, 7), (7, 7)]
    assert embedder.embed_documents([]).shape == (0, 384)
    assert embedder.encode_count == n + 7


@model
def test_count_tokens_and_truncation(embedder: Embedder) -> None:
    assert embedder.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    long = "token " * 600
    assert embedder.count_tokens(long) == 602
    head = embedder.embed_documents([long])[0]
    same_head = embedder.embed_documents(["token " * 254])[0]  # 254 + 2 = max_tokens
    assert np.max(np.abs(head - same_head)) < 1e-6
    # What the dense leg saw of a long text, in characters (offsets are str indices).
    assert embedder.embedded_chars("short text") == len("short text")
    text = "café naïve résumé " * 200
    n = embedder.embedded_chars(text)
    assert 0 < n < len(text) and embedder.count_tokens(text[:n]) == embedder.max_tokens
    assert np.max(np.abs(embedder.embed_documents([text])[0] - embedder.embed_documents([text[:n]])[0])) < 1e-6


# -- nothing downloads --------------------------------------------------------


@model
def test_load_imports_no_network_client() -> None:
    code = (
        "import sys\n"
        "from index.embedding import Embedder\n"
        f"e = Embedder.load({str(installed_dir())!r})\n"
        "e.embed_query('hello')\n"
        "bad = [m for m in ('requests', 'httpx', 'huggingface_hub', 'urllib3', 'http.client', 'transformers', 'torch') if m in sys.modules]\n"
        "print(bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE", "TRANSFORMERS"))}
    env["HF_HUB_OFFLINE"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_index_package_has_no_network_code() -> None:
    pattern = re.compile(
        r"^\s*(import|from)\s+(urllib|http\.client|requests|httpx|urllib3|socket|huggingface_hub|transformers)\b", re.M
    )
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "index").rglob("*.py")
        if pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    # index/ reads assets/manifest.json as data but never imports assets code.
    imports_assets = re.compile(r"^\s*(import|from)\s+assets\b", re.M)
    assert [
        p.name for p in (ROOT / "index").rglob("*.py") if imports_assets.search(p.read_text(encoding="utf-8"))
    ] == []
