"""An optional ONNX Runtime backend for the embedding model, on CPUs, in fp32 or dynamic int8.

The transformer under a sentence-transformers folder is exported once, offline, from the local
weights (``torch.onnx.export``), and, for the int8 variant, quantized with ONNX Runtime's dynamic
quantization (int8 weights, per output channel). The files are cached as
``CACHE_DIR/<model-name>-fp32.onnx`` and ``CACHE_DIR/<model-name>-int8.onnx`` and reused when present;
delete them to re-export (for example after replacing the weights under the same name).

:class:`OnnxEmbedder` has the surface of :class:`harvester.embedding.models.Embedder` (``name``,
``dimension``, ``max_tokens``, ``tokenizer``, ``vector_name``, ``encode``) and computes what the
sentence-transformers pipeline computes: the model's own tokenizer, truncation at
``max_seq_length``, mean pooling over the attention mask, L2 normalisation.

Needs ``onnxruntime`` to run (``pip install onnxruntime``); exporting also needs ``torch``,
``transformers`` and ``onnx`` (and ``onnxscript`` for torch's dynamo exporter).
"""

from __future__ import annotations

import functools
import logging
import os
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


# -- inference ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OnnxEmbedder:
    """An exported model run by ONNX Runtime, with the surface of :class:`~harvester.embedding.models.Embedder`."""

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
        return self.max_seq_length - self._tokenizer.num_special_tokens_to_add(pair=False)

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def vector_name(self) -> str:
        return vector_name(self.name)

    @property
    def device(self) -> str:
        """For logs: what runs the model."""
        variant = "int8" if self.path.stem.endswith("-int8") else "fp32"
        return f"cpu (onnxruntime {variant})"

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """Normalised float32 vectors, one row per text, in the order of ``texts``."""
        texts = list(texts)
        out = np.zeros((len(texts), self.hidden_size), dtype=np.float32)
        if not texts:
            return out
        encoded = self._tokenizer(texts, truncation=True, max_length=self.max_seq_length,
                                  padding=False, return_attention_mask=False)
        ids: list[list[int]] = encoded["input_ids"]
        types: list[list[int]] | None = encoded.get("token_type_ids")
        # Longest first, as sentence-transformers does: batches of similar lengths pad little.
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        pad = self._tokenizer.pad_token_id or 0
        step = max(1, int(batch_size))
        for start in range(0, len(order), step):
            rows = order[start:start + step]
            width = max(len(ids[i]) for i in rows)
            input_ids = np.full((len(rows), width), pad, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            token_types = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(ids[i])
                input_ids[r, :n] = ids[i]
                mask[r, :n] = 1
                if types is not None:
                    token_types[r, :n] = types[i]
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
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "harvester" / "onnx"


@functools.lru_cache(maxsize=8)
def load_onnx_embedder(name: str, *, quantized: bool, cache_dir: str, threads: int | None = None) -> OnnxEmbedder:
    """Load (once per process) ``name`` with ONNX Runtime, exporting it into ``cache_dir`` first if needed."""
    require_onnxruntime()
    from transformers import AutoConfig, AutoTokenizer

    location = resolve_model(name)
    if not os.path.isdir(location):
        try:
            from huggingface_hub import snapshot_download

            location = snapshot_download(location)
        except Exception as exc:
            raise ModelUnavailable(f"cannot find embedding model {name!r} locally ({location}): {exc}") from exc
    try:
        path = export_onnx(location, cache_dir, quantize=quantized, name=name)
        folder = transformer_dir(location)
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
        session = _session(path, threads)
    except (ImportError, ValueError):
        raise
    except Exception as exc:
        raise ModelUnavailable(f"cannot load embedding model {name!r} with ONNX Runtime: {exc}") from exc
    inputs = tuple(i.name for i in session.get_inputs())
    unknown = set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown:
        raise ModelUnavailable(f"{path}: unexpected model inputs {sorted(unknown)}")
    return OnnxEmbedder(
        session=session, name=name, path=path, max_seq_length=max_seq_length(location),
        hidden_size=int(config.hidden_size), _tokenizer=tokenizer, _inputs=inputs,
    )
