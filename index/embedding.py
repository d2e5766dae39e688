"""Local dense embeddings: the pinned ONNX encoder, verified before every use.

The model and tokenizer are built once by `python -m assets.install` into a
private versioned directory; nothing here downloads anything. At load the
bytes are hashed and compared with `assets/manifest.json` (read as data), and
the session is created from exactly the bytes that were hashed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import platformdirs

from index.atomic_file import replace_file
from index.config import cache_root
from index.errors import RetrievalIntegrity
from index.windows import WindowScheme, window_ranges

if TYPE_CHECKING:  # numpy is imported where used: reading the manifest must not load it
    import numpy as np

MANIFEST_PATH = Path(__file__).resolve().parents[1] / "assets" / "manifest.json"
REINSTALL = "run: python -m assets.install --force"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
INSTALLED_FILE = "installed.json"
QUERY_CACHE_SIZE = 512
Parallel = Literal["sequences", "operators"]


def available_cores() -> int:
    """Cores this process may run on (the affinity mask where there is one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def load_manifest(path: Path | None = None) -> dict[str, Any]:
    """The pinned model's manifest; a missing or unreadable one fails closed."""
    p = path or MANIFEST_PATH
    try:
        data: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RetrievalIntegrity(f"model manifest {p} unreadable: {exc}", remedy="reinstall lamina") from exc
    for key in ("model", "model_sha256", "tokenizer_sha256", "model_digest", "dims", "max_tokens"):
        if not data.get(key):
            raise RetrievalIntegrity(f"model manifest {p} lacks {key!r}", remedy="reinstall lamina")
    return data


def model_digest(model_sha256: str, tokenizer_sha256: str, disabled_optimizers: Sequence[str] = ()) -> str:
    """Identity of the whole text -> vector function (weights, tokenization, and how the graph is run).

    The session's graph rewrites are part of the function: an int8 graph with activations
    quantized at run time turns a fused kernel's last-bit rounding into other vectors (cosine
    ~0.995), so a changed recipe must not reuse vectors stored under the old one.
    """
    recipe = "".join(f"disable {name}\n" for name in sorted(disabled_optimizers))
    return hashlib.sha256(f"{model_sha256}\n{tokenizer_sha256}\n{recipe}".encode()).hexdigest()


def disabled_optimizers(manifest: dict[str, Any]) -> list[str]:
    """The onnxruntime graph rewrites the pinned recipe turns off (manifest `runtime.disabled_optimizers`).

    SkipLayerNormFusion: on one thread its fused kernel took 190 us where Add + LayerNormalization
    take ~30 (111 tokens x 384), a fifth of a text's encoding; the unfused pair is as close to
    the fp32 graph (bench/README.md, session 20).
    """
    names = manifest.get("runtime", {}).get("disabled_optimizers", [])
    return [str(n) for n in names]


def open_session(model: bytes | str, manifest: dict[str, Any], threads: int = 1) -> Any:
    """An onnxruntime CPU session over the model, run the pinned recipe's way on `threads` operator threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = max(1, int(threads))
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.log_severity_level = 3
    return ort.InferenceSession(
        model,
        sess_options=opts,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=disabled_optimizers(manifest),
    )


def default_model_dir(manifest: dict[str, Any] | None = None) -> Path:
    """`$LAMINA_MODEL_DIR`, else a per-user data dir named by model and digest."""
    env = os.environ.get("LAMINA_MODEL_DIR")
    if env:
        return Path(env)
    m = manifest or load_manifest()
    return Path(platformdirs.user_data_dir("lamina")) / "models" / f"{m['model']}-{m['model_digest'][:12]}"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def verify_model_dir(model_dir: Path, manifest: dict[str, Any]) -> tuple[bytes, bytes]:
    """Return (model bytes, tokenizer bytes) if both are the pinned ones, else raise."""
    files: dict[str, bytes] = {}
    for name in (MODEL_FILE, TOKENIZER_FILE):
        path = model_dir / name
        try:
            files[name] = path.read_bytes()
        except FileNotFoundError:
            raise RetrievalIntegrity(f"embedding asset missing: {path}", remedy=REINSTALL) from None
        except OSError as exc:
            raise RetrievalIntegrity(f"embedding asset unreadable: {path}: {exc}", remedy=REINSTALL) from exc
    recorded: dict[str, Any] = {}
    try:
        recorded = json.loads((model_dir / INSTALLED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    expected = {MODEL_FILE: manifest["model_sha256"], TOKENIZER_FILE: manifest["tokenizer_sha256"]}
    for name, data in files.items():
        got = sha256_bytes(data)
        if got == expected[name]:
            continue
        installed = recorded.get("files", {}).get(name)
        if installed and installed == got:
            why = f"{model_dir / name} is a different model than the pinned {manifest['model']} (sha256 {got[:12]}, expected {expected[name][:12]})"
        else:
            why = f"{model_dir / name} is corrupt or not the pinned {manifest['model']} (sha256 {got[:12]}, expected {expected[name][:12]})"
        raise RetrievalIntegrity(why, remedy=REINSTALL)
    return files[MODEL_FILE], files[TOKENIZER_FILE]


VERIFIED_FILE = "verified-assets.json"  # under the cache root: stats of assets whose hashes were checked


def _asset_stats(model_dir: Path) -> list[list[object]]:
    """[name, size, mtime_ns] of the model and tokenizer files; OSError when one is missing."""
    out: list[list[object]] = []
    for name in (MODEL_FILE, TOKENIZER_FILE):
        st = (model_dir / name).stat()
        out.append([name, st.st_size, st.st_mtime_ns])
    return out


def _verified_path() -> Path:
    return cache_root() / VERIFIED_FILE


def remember_verified(model_dir: Path, manifest: dict[str, Any], stats: list[list[object]]) -> None:
    """Record the stats (taken before hashing) of assets that passed `verify_model_dir`."""
    try:
        path = _verified_path()
        try:
            known = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        entry = {"model_digest": manifest["model_digest"], "files": stats}
        if known.get(str(model_dir)) == entry:
            return
        known[str(model_dir)] = entry
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, json.dumps(known, sort_keys=True).encode("utf-8"))
    except OSError:  # a read-only cache: the next probe hashes the assets instead
        pass


def probe_assets(model_dir: Path | None = None) -> None:
    """Raise RetrievalIntegrity unless `Embedder.load` would pass its checks, without loading anything.

    For `lamina context status`, which reports whether retrieval is hybrid without paying for
    onnxruntime and a session: assets whose size and mtime match the last ones that passed the
    hash check are taken as verified (as git's index trusts stats); otherwise they are hashed
    against the manifest as `load` does. `load` itself still hashes before every use.
    """
    manifest = load_manifest()
    directory = Path(model_dir) if model_dir is not None else default_model_dir(manifest)
    for module in ("onnxruntime", "tokenizers"):
        if importlib.util.find_spec(module) is None:
            raise RetrievalIntegrity(f"{module} is not installed", remedy="reinstall lamina")
    stats: list[list[object]] | None = None
    try:
        stats = _asset_stats(directory)
        known = json.loads(_verified_path().read_text(encoding="utf-8"))
        if known.get(str(directory)) == {"model_digest": manifest["model_digest"], "files": stats}:
            return
    except (OSError, ValueError, AttributeError):
        pass
    verify_model_dir(directory, manifest)
    if stats is not None:
        remember_verified(directory, manifest, stats)


class PendingVectors:
    """Rows being encoded on the embedder's threads: the caller prepares or stores another batch
    meanwhile, so the cores never wait on its SQLite reads, window tokenizing or writes."""

    def __init__(self, out: np.ndarray, futures: Sequence[Future[None]] = ()) -> None:
        self._out = out
        self._futures = list(futures)

    def result(self) -> np.ndarray:
        """The rows in input order, once every one is encoded (an encoding error is raised here)."""
        for fut in self._futures:
            fut.result()
        return self._out

    def cancel(self) -> None:
        """Drop the texts no thread has started (a stopped build); running ones finish unread."""
        for fut in self._futures:
            fut.cancel()


class Embedder:
    """Text -> L2-normalised float32 vectors with the pinned local model."""

    def __init__(
        self,
        session: Any,
        tokenizer: Any,
        counter: Any,
        manifest: dict[str, Any],
        model_dir: Path,
        workers: int = 1,
    ) -> None:
        self._session = session
        self._tok = tokenizer  # truncating at max_tokens, no padding: we pad per batch
        self._short_toks: dict[int, Any] = {}
        self._counter = counter  # no truncation: for count_tokens
        self._input_names = {i.name for i in session.get_inputs()}
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()  # cache and counter; session.run itself is thread-safe
        self.model_dir = model_dir
        self.model_name: str = manifest["model"]
        self.model_digest: str = manifest["model_digest"]
        self.dims: int = int(manifest["dims"])
        self.max_tokens: int = int(manifest["max_tokens"])
        self.encode_count = 0
        # Dynamic int8 quantizes activations per tensor, i.e. across the whole
        # batch: a padded batch makes a text's vector depend on its neighbours
        # (cosine ~0.993 to itself alone). One sequence per run keeps vectors a
        # pure function of the text; batching did not make a sequence cheaper
        # in CPU time either (bench/encoder_throughput.py).
        self.batch_invariant = True
        # Sequences run concurrently, each on one core, from this many threads:
        # `session.run` releases the GIL, and a one-thread run is the same
        # computation as a multi-threaded one (vectors byte-identical), without
        # the per-operator fork/join that small matrices pay on every layer.
        self.workers = max(1, int(workers))
        self._pool: ThreadPoolExecutor | None = None

    @classmethod
    def load(
        cls,
        model_dir: Path | None = None,
        threads: int = 0,
        parallel: Parallel = "sequences",
        manifest: dict[str, Any] | None = None,
    ) -> Embedder:
        """Verify the installed assets against the manifest, then open a session.

        `threads` (0: every available core) is how many cores encode. With
        `parallel="sequences"` that many texts run at once, one thread each;
        `"operators"` runs one text at a time split across `threads` operator
        threads (the earlier behaviour, kept as the benchmark's baseline).
        `manifest` (default: the pinned one) lets a benchmark load an earlier pin beside today's.
        """
        manifest = manifest if manifest is not None else load_manifest()
        directory = Path(model_dir) if model_dir is not None else default_model_dir(manifest)
        try:
            stats: list[list[object]] | None = _asset_stats(directory)  # before hashing: a later change shows
        except OSError:
            stats = None
        model_bytes, tok_bytes = verify_model_dir(directory, manifest)
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_str(tok_bytes.decode("utf-8"))
            counter = Tokenizer.from_str(tok_bytes.decode("utf-8"))
        except Exception as exc:  # tokenizers raises its own exception types
            raise RetrievalIntegrity(f"tokenizer in {directory} does not load: {exc}", remedy=REINSTALL) from exc
        tok.no_padding()
        tok.enable_truncation(int(manifest["max_tokens"]))
        counter.no_padding()
        counter.no_truncation()
        cores = int(threads) if int(threads) > 0 else available_cores()
        try:
            session = open_session(model_bytes, manifest, threads=1 if parallel == "sequences" else cores)
        except Exception as exc:  # onnxruntime raises its own exception types
            raise RetrievalIntegrity(f"model in {directory} does not load: {exc}", remedy=REINSTALL) from exc
        out = session.get_outputs()
        if not out or out[0].name != "sentence_embedding":
            raise RetrievalIntegrity(f"model in {directory} has no sentence_embedding output", remedy=REINSTALL)
        if stats is not None:
            remember_verified(directory, manifest, stats)
        return cls(session, tok, counter, manifest, directory, workers=cores if parallel == "sequences" else 1)

    def _run(self, encodings: list[Any]) -> np.ndarray:
        """One forward pass over encodings padded to the longest of them."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
            types[row, :n] = enc.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        feed = {k: v for k, v in feed.items() if k in self._input_names}
        (vecs,) = self._session.run(["sentence_embedding"], feed)
        with self._lock:
            self.encode_count += len(encodings)
        return np.asarray(vecs, dtype=np.float32)

    def embed_documents(
        self,
        texts: list[str],
        batch_size: int = 32,
        progress: Callable[[int, int], None] | None = None,
        max_tokens: int | None = None,
    ) -> np.ndarray:
        """Embed texts (length-sorted, in groups of batch_size); rows in input order.

        With `batch_invariant` (default) each text runs alone, so its vector never
        depends on what it was batched with, and the texts are spread over
        `workers` threads; otherwise groups run padded to their longest text.
        """
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer_for(max_tokens).encode_batch(list(texts), add_special_tokens=True)
        step = max(1, int(batch_size))
        if self.batch_invariant:  # one run per text: groups only pace the progress reports
            for done in self._run_each(encodings, out):
                if progress is not None and (done % step == 0 or done == len(texts)):
                    progress(done, len(texts))
            return out
        order = sorted(range(len(texts)), key=lambda i: (len(encodings[i].ids), i))
        for start in range(0, len(order), step):
            idx = order[start : start + step]
            out[idx] = self._run([encodings[i] for i in idx])
            if progress is not None:
                progress(start + len(idx), len(texts))
        return out

    def submit_documents(self, texts: list[str], max_tokens: int | None = None) -> PendingVectors:
        """`embed_documents` without waiting: the texts queue on the encoding threads behind any
        batch submitted before (so the threads never idle between batches) and the caller collects
        the rows with `result()`. Each text still runs alone: its vector is the same bytes."""
        import numpy as np

        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return PendingVectors(out)
        if not self.batch_invariant or self.workers == 1:  # one core: no spare one to overlap with
            return PendingVectors(self.embed_documents(texts, max_tokens=max_tokens))
        encodings = self._tokenizer_for(max_tokens).encode_batch(list(texts), add_special_tokens=True)
        pool = self._encode_pool()
        return PendingVectors(out, [pool.submit(self._run_into, out, i, e) for i, e in self._longest_first(encodings)])

    def _run_into(self, out: np.ndarray, row: int, encoding: Any) -> None:
        out[row] = self._run([encoding])[0]

    @staticmethod
    def _longest_first(encodings: list[Any]) -> list[tuple[int, Any]]:
        """Longest first, so the threads finish a batch together."""
        order = sorted(range(len(encodings)), key=lambda i: (-len(encodings[i].ids), i))
        return [(i, encodings[i]) for i in order]

    def _encode_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="lamina-encode")
            return self._pool

    def _run_each(self, encodings: list[Any], out: np.ndarray) -> Iterator[int]:
        """Run each encoding alone into its row of `out`, over `workers` threads; yield how many are done."""
        order = self._longest_first(encodings)
        if self.workers == 1 or len(encodings) == 1:
            for done, (i, enc) in enumerate(order, 1):
                self._run_into(out, i, enc)
                yield done
            return
        pool = self._encode_pool()
        for done, _ in enumerate(pool.map(lambda item: self._run_into(out, *item), order), 1):
            yield done

    def _tokenizer_for(self, max_tokens: int | None) -> Any:
        """The tokenizer truncating at `max_tokens` (at most the manifest's), cached per length."""
        if max_tokens is None or max_tokens >= self.max_tokens:
            return self._tok
        tok = self._short_toks.get(max_tokens)
        if tok is None:
            from tokenizers import Tokenizer

            tok = Tokenizer.from_str(self._tok.to_str())
            tok.no_padding()
            tok.enable_truncation(int(max_tokens))
            self._short_toks[max_tokens] = tok
        return tok

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; repeated queries come from an LRU cache (read-only rows)."""
        with self._lock:
            hit = self._queries.get(text)
            if hit is not None:
                self._queries.move_to_end(text)
                return hit
        vec: np.ndarray = self._run([self._tok.encode(text)])[0]
        vec.flags.writeable = False
        with self._lock:
            self._queries[text] = vec
            if len(self._queries) > QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)
        return vec

    def count_tokens(self, text: str) -> int:
        """Model tokens of `text` including [CLS]/[SEP], before truncation."""
        return len(self._counter.encode(text).ids)

    def window_texts(self, prefix: str, body: str, max_tokens: int, scheme: WindowScheme) -> list[str]:
        """The texts of a long span's extra windows (index.windows): `prefix` + one slice of `body` each.

        `prefix + body` is what the span's own vector embeds (its first `max_tokens` tokens);
        nothing when it fits.
        """
        if not scheme.enabled or not body:
            return []
        room = max_tokens - 2 - len(self._counter.encode(prefix, add_special_tokens=False).ids)  # [CLS], [SEP]
        offsets = self._counter.encode(body, add_special_tokens=False).offsets
        return [prefix + body[a:b] for a, b in window_ranges(offsets, room, scheme.overlap, scheme.max_extra)]

    def embedded_chars(self, text: str) -> int:
        """How many leading characters of `text` the model sees (the rest is truncated)."""
        enc = self._tok.encode(text)
        ends = [end for (start, end), special in zip(enc.offsets, enc.special_tokens_mask, strict=True) if not special]
        if len(enc.ids) < self.max_tokens:
            return len(text)
        return max(ends, default=0)
