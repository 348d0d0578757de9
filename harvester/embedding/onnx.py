"""An optional ONNX Runtime backend for the embedding model, on CPUs, in fp32 or dynamic int8.

The transformer under a sentence-transformers folder is exported once, offline, from the local
weights (``torch.onnx.export``), and, for the int8 variant, quantized with ONNX Runtime's dynamic
quantization (int8 weights, per output channel). The files are cached as
``CACHE_DIR/<model-name>-fp32.onnx`` and ``CACHE_DIR/<model-name>-int8.onnx`` and reused when present;
delete them to re-export (for example after replacing the weights under the same name). Sessions open
a copy with the weights in a file of their own (``<model-name>-fp32.apart.onnx`` and its ``.data``,
``weights_apart``), which loads faster.

:class:`OnnxEmbedder` has the surface of :class:`harvester.embedding.models.Embedder` (``name``,
``dimension``, ``max_tokens``, ``tokenizer``, ``vector_name``, ``encode``) and computes what the
sentence-transformers pipeline computes: the model's own tokenizer, truncation at
``max_seq_length``, mean pooling over the attention mask, L2 normalisation.

Needs ``onnxruntime`` to run (``pip install onnxruntime``); exporting also needs ``torch``,
``transformers`` and ``onnx`` (and ``onnxscript`` for torch's dynamo exporter).
"""

from __future__ import annotations

import functools
import json
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from harvester.embedding.folder import (
    ModelUnavailable,
    max_seq_length,
    pooling_modes,
    resolve_model,
    transformer_dir,
    vector_name,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

logger = logging.getLogger(__name__)


OPSET = 17
VARIANTS = ("fp32", "int8")


def require_onnxruntime() -> Any:
    """The ``onnxruntime`` module, or an ImportError that says what to install."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise ImportError(
            "the ONNX embedding backend needs ONNX Runtime: pip install onnxruntime "
            f"(or choose the torch backend) [{exc}]"
        ) from exc
    return onnxruntime


def pooling_mode(model_dir: str | Path) -> str:
    """The pooling the model was trained with; only ``"mean"`` is supported here."""
    model_dir = Path(model_dir)
    modes = pooling_modes(model_dir)
    if modes is None:
        if (model_dir / "modules.json").is_file():
            raise ValueError(f"{model_dir}: no Pooling module; the ONNX backend supports mean pooling only")
        return "mean"
    if modes != {"mean"}:
        raise ValueError(
            f"{model_dir}: pooling {sorted(modes) or 'none'} is not supported by the ONNX backend "
            "(mean pooling only); use the torch backend for this model"
        )
    return "mean"


# -- export -------------------------------------------------------------------------------------


def onnx_path(out_dir: str | Path, model_name: str, *, quantize: bool) -> Path:
    return Path(out_dir) / f"{vector_name(model_name)}-{'int8' if quantize else 'fp32'}.onnx"


def _atomic_target(target: Path) -> Path:
    """A temporary file next to ``target``, renamed onto it once complete (no half-written cache)."""
    fd, tmp = tempfile.mkstemp(prefix=target.stem + ".", suffix=".tmp.onnx", dir=target.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would keep the cache from other users
    return Path(tmp)


def _export_fp32(model_dir: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = transformer_dir(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    # Eager attention traces to plain MatMul/Softmax, which ONNX Runtime fuses and quantizes well.
    model = AutoModel.from_pretrained(str(folder), local_files_only=True, attn_implementation="eager")
    model.eval()
    names = ["input_ids", "attention_mask"]
    if "token_type_ids" in tokenizer.model_input_names:
        names.append("token_type_ids")

    class LastHidden(torch.nn.Module):
        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor | None = None) -> torch.Tensor:
            extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, return_dict=True,
                              **extra).last_hidden_state

    sample = tokenizer(["a short sentence", "a somewhat longer sentence for the sample"],
                       padding=True, return_tensors="pt")
    args = tuple(sample[name] for name in names)
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    axes["last_hidden_state"] = {0: "batch", 1: "sequence"}
    module = LastHidden(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer and deprecation chatter, harmless here
        try:
            # The TorchScript exporter: a compact graph that ONNX Runtime quantizes well (tested).
            torch.onnx.export(
                module, args, str(target), input_names=names, output_names=["last_hidden_state"],
                dynamic_axes=axes, opset_version=OPSET, do_constant_folding=True, dynamo=False,
            )
        except Exception as exc:  # deprecated since torch 2.9: the torch.export-based one then
            logger.info("TorchScript ONNX export failed (%s); using the dynamo exporter", exc)
            batch, sequence = torch.export.Dim("batch"), torch.export.Dim("sequence", max=512)
            torch.onnx.export(
                module, args, str(target), input_names=names, output_names=["last_hidden_state"],
                dynamic_shapes=tuple({0: batch, 1: sequence} for _ in names), opset_version=18,
                dynamo=True, external_data=False, verbose=False,
            )


def _quantize(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = _atomic_target(target)
    try:
        try:  # shape inference + graph cleanup first, as ONNX Runtime recommends
            quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
            base = prepared
        except Exception as exc:  # pre-processing is an optimisation, not a requirement
            logger.warning("quantization pre-processing failed (%s); quantizing the raw export", exc)
            base = source
        quantize_dynamic(
            str(base), str(target), weight_type=QuantType.QInt8, per_channel=True,
            op_types_to_quantize=["MatMul", "Gemm"],
        )
    finally:
        prepared.unlink(missing_ok=True)


def export_onnx(model_dir: str, out_dir: str, *, quantize: bool, name: str | None = None) -> Path:
    """Export the model in ``model_dir`` to ``out_dir/<name>-{fp32,int8}.onnx``, once.

    ``name`` (default: the folder's name) names the files. An existing file is reused as is.
    The int8 file is quantized from the fp32 one, which is exported (and kept) first if needed.
    """
    require_onnxruntime()
    model_path = Path(model_dir)
    if not model_path.is_dir():
        raise ModelUnavailable(f"{model_dir}: not a local model folder (the ONNX export works offline)")
    pooling_mode(model_path)  # fail before a minute of exporting, not after
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    label = name or str(model_path)
    fp32 = onnx_path(out, label, quantize=False)
    if not fp32.is_file():
        logger.info("Exporting %s to ONNX: %s", model_dir, fp32)
        tmp = _atomic_target(fp32)
        try:
            _export_fp32(model_path, tmp)
            tmp.replace(fp32)
        finally:
            tmp.unlink(missing_ok=True)
    if not quantize:
        return fp32
    int8 = onnx_path(out, label, quantize=True)
    if not int8.is_file():
        logger.info("Quantizing %s to int8: %s", fp32, int8)
        tmp = _atomic_target(int8)
        try:
            _quantize(fp32, tmp)
            tmp.replace(int8)
        finally:
            tmp.unlink(missing_ok=True)
    return int8


def export_onnx_once(model_dir: str, out_dir: str, *, quantize: bool, name: str | None = None) -> Path:
    """``export_onnx``, in a child process unless torch is already loaded here: exporting imports
    torch and the model, hundreds of MiB that a process running the export afterwards never needs
    (and glibc would not give all of back)."""
    target = onnx_path(out_dir, name or model_dir, quantize=quantize)
    if target.is_file():
        return target
    if "torch" in sys.modules:
        return export_onnx(model_dir, out_dir, quantize=quantize, name=name)
    from concurrent.futures import ProcessPoolExecutor

    logger.info("Exporting %s to ONNX once, in a child process (%s)", name or model_dir, target)
    # spawn, not fork: the caller may run Twisted's and Qdrant's threads.
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(export_onnx, model_dir, out_dir, quantize=quantize, name=name).result()


# -- inference ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnnxEmbedder:
    """An exported model run by ONNX Runtime, with the surface of :class:`~harvester.embedding.models.Embedder`.

    ``_tokenizer`` is the model's ``tokenizers.Tokenizer`` (its ``tokenizer.json``, truncating at
    ``max_seq_length``) when the folder has one that counts as the model's own does
    (``load_model_tokenizer``): then neither torch nor transformers is imported. Otherwise it is
    transformers' tokenizer of the folder.
    """

    session: Any
    name: str
    path: Path
    max_seq_length: int
    hidden_size: int
    _tokenizer: Any = field(repr=False)
    _inputs: tuple[str, ...] = ()

    @property
    def dimension(self) -> int:
        return self.hidden_size

    @property
    def max_tokens(self) -> int:
        """Word pieces a chunk may have, leaving room for the special tokens the model adds."""
        if self._plain_tokenizer:
            return self.max_seq_length - self._tokenizer.num_special_tokens_to_add(False)
        return self.max_seq_length - self._tokenizer.num_special_tokens_to_add(pair=False)

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def _plain_tokenizer(self) -> bool:
        from tokenizers import Tokenizer

        return isinstance(self._tokenizer, Tokenizer)

    @property
    def vector_name(self) -> str:
        return vector_name(self.name)

    @property
    def device(self) -> str:
        """For logs: what runs the model."""
        variant = "int8" if self.path.stem.endswith("-int8") else "fp32"
        return f"cpu (onnxruntime {variant})"

    def _token_ids(self, texts: list[str]) -> tuple[list[list[int]], list[list[int]] | None]:
        """Each text's ids (with the special tokens, truncated) and token types."""
        if self._plain_tokenizer:
            encodings = self._tokenizer.encode_batch(texts)
            return [e.ids for e in encodings], [e.type_ids for e in encodings]
        encoded = self._tokenizer(texts, truncation=True, max_length=self.max_seq_length,
                                  padding=False, return_attention_mask=False)
        return encoded["input_ids"], encoded.get("token_type_ids")

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Normalised float32 vectors, one row per text, in the order of ``texts``."""
        texts = list(texts)
        out = np.zeros((len(texts), self.hidden_size), dtype=np.float32)
        if not texts:
            return out
        # Longest first, as sentence-transformers does (by characters, before tokenizing): batches
        # of similar lengths pad little, and only one batch's encodings exist at a time (a large
        # page hands over thousands of chunks in one call).
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        step = max(1, int(batch_size))
        for start in range(0, len(order), step):
            rows = order[start:start + step]
            ids, types = self._token_ids([texts[i] for i in rows])
            width = max(len(row) for row in ids)
            # Padding positions are masked out of attention and pooling: their id does not matter.
            input_ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            token_types = np.zeros((len(rows), width), dtype=np.int64)
            for r, row_ids in enumerate(ids):
                n = len(row_ids)
                input_ids[r, :n] = row_ids
                mask[r, :n] = 1
                if types is not None:
                    token_types[r, :n] = types[r]
            feed = {"input_ids": input_ids, "attention_mask": mask, "token_type_ids": token_types}
            hidden = self.session.run(None, {k: feed[k] for k in self._inputs})[0]
            out[rows] = mean_pooled(hidden, mask)
        return out


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The model's sentence vectors from its token states: the mean over the attended tokens,
    normalised, as sentence-transformers' Pooling and Normalize modules compute them."""
    weights = mask[:, :, None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
    return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _session(path: Path, threads: int | None) -> Any:
    ort = require_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # The memory pattern plans one block per input shape; chunks come in all lengths, so it only
    # raised the peak.
    options.enable_mem_pattern = False
    # Idle pool threads would otherwise spin for a while after each call, on the cores the
    # crawl's extraction needs meanwhile.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def weights_apart(path: Path) -> Path:
    """The model of ``path`` saved with its weights in a file of their own (``NAME.apart.onnx`` and
    ``NAME.apart.onnx.data`` beside it), written once; ``path`` itself when that cannot be had.

    ONNX Runtime maps weights kept apart from the graph into memory, where the weights inside the
    one-file export are parsed and copied first: opening a session takes a third of the CPU time,
    which a cold ``scrapy search`` pays on every query. The graph and the weights are the export's
    (saved unoptimised), so the vectors are the same to the bit (tested). A copy older than the
    export is written again (a re-export under the same name)."""
    apart = path.with_name(f"{path.stem}.apart.onnx")
    try:
        if apart.is_file() and apart.stat().st_mtime_ns >= path.stat().st_mtime_ns:
            return apart
        ort = require_onnxruntime()
        folder = Path(tempfile.mkdtemp(prefix=f".{path.stem}.", dir=path.parent))
        try:
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.optimized_model_filepath = str(folder / apart.name)
            options.add_session_config_entry("session.optimized_model_external_initializers_file_name",
                                             f"{apart.name}.data")
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes",
                                             "1024")
            ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])
            # The weights first: a graph in place always finds its own weights beside it.
            os.replace(folder / f"{apart.name}.data", apart.parent / f"{apart.name}.data")
            os.replace(folder / apart.name, apart)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    except Exception as exc:  # a read-only cache, an ONNX Runtime without these options
        logger.debug("ONNX model %s kept in one file (%s)", path, exc)
        return path
    return apart


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harvester" / "onnx"


@functools.lru_cache(maxsize=8)
def load_onnx_embedder(name: str, *, quantized: bool, cache_dir: str, threads: int | None = None,
                       plain_tokenizer: Any = None) -> OnnxEmbedder:
    """Load (once per process) ``name`` with ONNX Runtime, exporting it into ``cache_dir`` first if
    needed. ``plain_tokenizer``: the model's ``tokenizers.Tokenizer`` when it counts as the model
    does (``harvester.embedding.tokenizer.load_model_tokenizer``), else transformers' is loaded."""
    require_onnxruntime()
    location = resolve_model(name)
    if not os.path.isdir(location):
        try:
            from huggingface_hub import snapshot_download

            location = snapshot_download(location)
        except Exception as exc:
            raise ModelUnavailable(f"cannot find embedding model {name!r} locally ({location}): {exc}") from exc
    try:
        path = export_onnx_once(location, cache_dir, quantize=quantized, name=name)
        return onnx_embedder(name, location, path, threads, plain_tokenizer)
    except (ImportError, ValueError, ModelUnavailable):
        raise
    except Exception as exc:
        raise ModelUnavailable(f"cannot load embedding model {name!r} with ONNX Runtime: {exc}") from exc


def onnx_embedder(name: str, location: str | Path, path: Path, threads: int | None,
                  plain_tokenizer: Any = None) -> OnnxEmbedder:
    """The embedder of the model folder ``location`` (named ``name``) on its export ``path``; see
    ``load_onnx_embedder`` for ``plain_tokenizer``."""
    limit = max_seq_length(location)
    session = _session(weights_apart(path), threads)
    inputs = tuple(i.name for i in session.get_inputs())
    unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown:
        raise ModelUnavailable(f"{path}: unexpected model inputs {sorted(unknown)}")
    width = session.get_outputs()[0].shape[-1]
    if not isinstance(width, int):  # a dynamic last axis: the model's config says
        config = json.loads((transformer_dir(location) / "config.json").read_text(encoding="utf-8"))
        width = int(config["hidden_size"])
    return OnnxEmbedder(session=session, name=name, path=path, max_seq_length=limit, hidden_size=width,
                        _tokenizer=_tokenizer(location, limit, plain_tokenizer), _inputs=inputs)


def _tokenizer(location: str | Path, limit: int, plain: Any) -> Any:
    """A copy of ``plain`` truncating at ``limit`` (no transformers import), else transformers'
    tokenizer of the folder."""
    if plain is not None:
        tokenizer = plain.__class__.from_str(plain.to_str())
        tokenizer.enable_truncation(max_length=limit)
        tokenizer.no_padding()
        return tokenizer
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(transformer_dir(location)), local_files_only=True)
