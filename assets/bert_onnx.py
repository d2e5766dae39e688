"""Build a BERT sentence encoder as an ONNX graph from safetensors weights.

Torch-free on purpose: the pinned weights are plain little-endian tensors and
the encoder is a dozen op kinds, so numpy + the `onnx` helper API is enough.
Everything that ends up in the file is fixed (node and tensor names, opset,
producer, initializer order), so the same weights always give the same bytes.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {
    "F32": np.float32,
    "F16": np.float16,
    "F64": np.float64,
    "I64": np.int64,
    "I32": np.int32,
}

OPSET = 17
PRODUCER = "lamina-assets"
PRODUCER_VERSION = "2"


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Parse a safetensors file: u64 header length, JSON header, raw tensors."""
    data = path.read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise ValueError(f"{path}: header length {header_len} beyond file end")
    header: dict[str, Any] = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    out: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {spec['dtype']}")
        start, end = spec["data_offsets"]
        arr = np.frombuffer(
            data,
            dtype=np.dtype(dtype).newbyteorder("<"),
            count=(end - start) // np.dtype(dtype).itemsize,
            offset=base + start,
        )
        out[name] = arr.reshape(spec["shape"]).astype(dtype, copy=True)
    return out


class _Graph:
    """Tiny builder: deterministic names, initializers in creation order."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.inits: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name=name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attrs: Any) -> str:
        from onnx import helper

        out = f"{name}_out"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=name, **attrs))
        return out


def build_bert_encoder(weights: dict[str, np.ndarray], config: dict[str, Any]) -> Any:
    """Return an onnx ModelProto: token ids -> masked-mean-pooled, L2-normalised embedding."""
    import onnx
    from onnx import TensorProto, helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    if config.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"unsupported activation {config.get('hidden_act')}")
    head_dim = hidden // heads
    f32 = np.float32
    g = _Graph()

    def w(name: str) -> np.ndarray:
        return weights[name].astype(f32)

    def linear(x: str, prefix: str, tag: str) -> str:
        # torch Linear stores [out, in]; MatMul wants [in, out].
        wt = g.const(f"{tag}.weight", w(f"{prefix}.weight").T.copy())
        b = g.const(f"{tag}.bias", w(f"{prefix}.bias"))
        y = g.op("MatMul", [x, wt], f"{tag}.matmul")
        return g.op("Add", [y, b], f"{tag}.add")

    def layer_norm(x: str, prefix: str, tag: str) -> str:
        scale = g.const(f"{tag}.gamma", w(f"{prefix}.weight"))
        bias = g.const(f"{tag}.beta", w(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], f"{tag}.ln", axis=-1, epsilon=eps)

    # Shared constants.
    c_zero = g.const("const.zero_1d", np.array([0], dtype=np.int64))
    c_one_f = g.const("const.one_f", np.array(1.0, dtype=f32))
    c_neg = g.const("const.mask_neg", np.array(-10000.0, dtype=f32))
    c_scale = g.const("const.attn_scale", np.array(1.0 / math.sqrt(head_dim), dtype=f32))
    c_half = g.const("const.half", np.array(0.5, dtype=f32))
    c_sqrt2 = g.const("const.sqrt2", np.array(math.sqrt(2.0), dtype=f32))
    c_split = g.const("const.heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    c_merge = g.const("const.merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    c_ax1 = g.const("const.axis1", np.array([1], dtype=np.int64))
    c_ax12 = g.const("const.axes12", np.array([1, 2], dtype=np.int64))
    c_axlast = g.const("const.axis_last", np.array([-1], dtype=np.int64))
    c_tiny = g.const("const.tiny", np.array(1e-9, dtype=f32))
    c_norm_eps = g.const("const.norm_eps", np.array(1e-12, dtype=f32))

    # Embeddings.
    word = g.const("emb.word", w("embeddings.word_embeddings.weight"))
    pos = g.const("emb.position", w("embeddings.position_embeddings.weight"))
    typ = g.const("emb.token_type", w("embeddings.token_type_embeddings.weight"))
    e_word = g.op("Gather", [word, "input_ids"], "emb.word_gather")
    # Positions 0..S-1 are the first S rows of the table: a Slice, no Range.
    seq_len = g.op("Shape", ["input_ids"], "emb.seq_len", start=1, end=2)
    e_pos = g.op("Slice", [pos, c_zero, seq_len, c_zero], "emb.pos_slice")
    e_typ = g.op("Gather", [typ, "token_type_ids"], "emb.type_gather")
    s1 = g.op("Add", [e_word, e_pos], "emb.add_pos")
    s2 = g.op("Add", [s1, e_typ], "emb.add_type")
    x = layer_norm(s2, "embeddings.LayerNorm", "emb")

    # Additive attention mask [B, 1, 1, S]: 0 where attended, -1e4 on padding.
    mask_f = g.op("Cast", ["attention_mask"], "mask.cast", to=TensorProto.FLOAT)
    inv = g.op("Sub", [c_one_f, mask_f], "mask.invert")
    bias = g.op("Mul", [inv, c_neg], "mask.scale")
    mask_bias = g.op("Unsqueeze", [bias, c_ax12], "mask.unsqueeze")

    for i in range(layers):
        p = f"encoder.layer.{i}"
        t = f"l{i}"
        q = linear(x, f"{p}.attention.self.query", f"{t}.q")
        k = linear(x, f"{p}.attention.self.key", f"{t}.k")
        v = linear(x, f"{p}.attention.self.value", f"{t}.v")
        qh = g.op("Transpose", [g.op("Reshape", [q, c_split], f"{t}.q_split")], f"{t}.q_t", perm=[0, 2, 1, 3])
        kh = g.op("Transpose", [g.op("Reshape", [k, c_split], f"{t}.k_split")], f"{t}.k_t", perm=[0, 2, 3, 1])
        vh = g.op("Transpose", [g.op("Reshape", [v, c_split], f"{t}.v_split")], f"{t}.v_t", perm=[0, 2, 1, 3])
        scores = g.op("MatMul", [qh, kh], f"{t}.scores")
        scaled = g.op("Mul", [scores, c_scale], f"{t}.scores_scale")
        masked = g.op("Add", [scaled, mask_bias], f"{t}.scores_mask")
        probs = g.op("Softmax", [masked], f"{t}.softmax", axis=-1)
        ctx = g.op("MatMul", [probs, vh], f"{t}.context")
        ctx_t = g.op("Transpose", [ctx], f"{t}.context_t", perm=[0, 2, 1, 3])
        ctx_m = g.op("Reshape", [ctx_t, c_merge], f"{t}.context_merge")
        attn = linear(ctx_m, f"{p}.attention.output.dense", f"{t}.attn_out")
        x = layer_norm(g.op("Add", [attn, x], f"{t}.attn_residual"), f"{p}.attention.output.LayerNorm", f"{t}.attn")
        h = linear(x, f"{p}.intermediate.dense", f"{t}.ffn_in")
        # Exact (erf) GELU, as BERT was trained with, spelled x / sqrt(2): the form onnxruntime's
        # GeluFusion recognises (x * (1 / sqrt(2)) is not), so the five nodes run as one kernel.
        erf = g.op("Erf", [g.op("Div", [h, c_sqrt2], f"{t}.gelu_div")], f"{t}.gelu_erf")
        gate = g.op("Add", [erf, c_one_f], f"{t}.gelu_add")
        hx = g.op("Mul", [h, gate], f"{t}.gelu_mul")
        act = g.op("Mul", [hx, c_half], f"{t}.gelu_half")
        out = linear(act, f"{p}.output.dense", f"{t}.ffn_out")
        x = layer_norm(g.op("Add", [out, x], f"{t}.ffn_residual"), f"{p}.output.LayerNorm", f"{t}.ffn")

    # Masked mean pooling, then L2 normalisation.
    m3 = g.op("Unsqueeze", [mask_f, g.const("const.axis2", np.array([2], dtype=np.int64))], "pool.mask")
    masked_x = g.op("Mul", [x, m3], "pool.masked")
    summed = g.op("ReduceSum", [masked_x, c_ax1], "pool.sum", keepdims=0)
    count = g.op("ReduceSum", [m3, c_ax1], "pool.count", keepdims=0)
    mean = g.op("Div", [summed, g.op("Max", [count, c_tiny], "pool.count_clamp")], "pool.mean")
    sq = g.op("ReduceSum", [g.op("Mul", [mean, mean], "norm.square"), c_axlast], "norm.sumsq", keepdims=1)
    norm = g.op("Max", [g.op("Sqrt", [sq], "norm.sqrt"), c_norm_eps], "norm.clamp")
    g.nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"], name="norm.div"))

    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", hidden])]
    graph = helper.make_graph(g.nodes, "bert_sentence_encoder", inputs, outputs, initializer=g.inits)
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name=PRODUCER,
        producer_version=PRODUCER_VERSION,
    )
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model
