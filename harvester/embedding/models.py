"""The embedding model: which one, where its weights are, and how it is loaded and called.

Scrapy-free: the embedding pipeline, the chunking pipeline (when a model's tokenizer.json alone
cannot count, ``harvester.embedding.tokenizer``), ``scrapy search`` and the benchmark all load the
model through here.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.embedding.folder import ModelUnavailable, resolve_model, vector_name
from harvester.embedding.tokenizer import load_model_tokenizer

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sentence_transformers import SentenceTransformer

@dataclass(frozen=True)
class Embedder:
    """A loaded sentence-transformers model with what the pipelines need to know about it."""

    model: SentenceTransformer
    name: str

    @property
    def dimension(self) -> int:
        model = self.model
        # Renamed in sentence-transformers 5; the old name still works there, with a warning.
        get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(get())

    @property
    def max_tokens(self) -> int:
        """Word pieces a chunk may have, leaving room for the special tokens the model adds."""
        special = self.model.tokenizer.num_special_tokens_to_add(pair=False)
        return int(self.model.max_seq_length) - special

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    @property
    def vector_name(self) -> str:
        return vector_name(self.name)

    @property
    def device(self) -> str:
        return str(self.model.device)

    def encode(self, texts: Sequence[str], batch_size: int) -> Any:
        """Normalised float32 vectors, one row per text (a numpy array)."""
        return self.model.encode(
            list(texts),
            batch_size=batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


@functools.lru_cache(maxsize=4)
def load_embedder(name: str, device: str | None = None) -> Embedder:
    """Load (once per process) the model ``name``: a local folder, or a hub id when reachable."""
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    # Its per-load progress bar would interleave with the crawl log.
    transformers_logging.disable_progress_bar()
    location = resolve_model(name)
    local = os.path.isdir(location)
    try:
        model = SentenceTransformer(location, device=device or None, local_files_only=local)
    except Exception as exc:  # sentence-transformers raises OSError, ValueError, HF errors...
        raise ModelUnavailable(
            f"cannot load embedding model {name!r} ({location}): {exc}"
        ) from exc
    return Embedder(model=model, name=name)


BACKENDS = ("auto", "torch", "onnx", "onnx-int8")


def resolve_backend(name: str, backend: str, device: str | None = None, onnx_cache: str | None = None) -> str:
    """The backend that ``backend`` stands for: itself, or for ``auto`` ``onnx`` (the fp32 export
    on ONNX Runtime: the same vectors, no torch in the process, a lower peak and a little
    faster on CPUs) when it computes what the torch model computes on this
    machine's CPU, else ``torch`` (a GPU, another device asked for, a model ONNX cannot stand in for)."""
    if backend != "auto":
        return backend
    reason = _why_not_onnx(name, device, onnx_cache)
    if reason:
        logger.debug("Embedding backend auto: torch, because %s", reason)
        return "torch"
    return "onnx"


@functools.lru_cache(maxsize=8)
def _why_not_onnx(name: str, device: str | None, onnx_cache: str | None) -> str | None:
    import importlib.util

    from harvester.embedding.onnx import default_cache_dir, onnx_path

    if device and device != "cpu":
        return f"device {device!r} is asked for"
    if _accelerator_for_torch():
        return "torch can use an accelerator here"
    unfit = onnx_unfit(name)
    if unfit:
        return unfit
    exported = onnx_path(onnx_cache or default_cache_dir(), name, quantize=False).is_file()
    if not exported and importlib.util.find_spec("onnx") is None:
        return "no ONNX export is cached and the onnx package (to export once) is not installed"
    return None


def onnx_unfit(name: str) -> str | None:
    """Why the fp32 ONNX export of ``name`` would not compute the sentence-transformers model's
    vectors without torch (None when it would): no onnxruntime, not a local folder, modules the
    export leaves out, pooling other than mean, a default prompt, or a ``tokenizer.json`` that
    does not count as the model does."""
    import importlib.util
    import json

    from harvester.embedding.folder import modules
    from harvester.embedding.onnx import pooling_mode

    if importlib.util.find_spec("onnxruntime") is None:
        return "onnxruntime is not installed"
    location = Path(resolve_model(name))
    if not location.is_dir():
        return f"{name!r} is not a local model folder"
    try:
        kinds = {str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules(location)}
        extra = kinds - {"Transformer", "Pooling", "Normalize"}
        if extra:
            return f"the model has modules the export leaves out ({', '.join(sorted(extra))})"
        pooling_mode(location)
        config = location / "config_sentence_transformers.json"
        if config.is_file() and json.loads(config.read_text(encoding="utf-8")).get("default_prompt_name"):
            return "the model puts a default prompt before texts"
    except (OSError, ValueError) as exc:
        return str(exc)
    if load_model_tokenizer(name) is None:
        return "the model's tokenizer.json alone does not count as the model does"
    return None


def _accelerator_for_torch() -> bool:
    """Whether torch would put the model on something other than the CPU here, found out without
    importing torch (seconds and hundreds of MiB): a GPU driver, or Apple silicon, and a torch
    build that is not CPU-only."""
    import platform
    import sys
    from importlib import metadata

    try:
        if metadata.version("torch").endswith("+cpu"):
            return False
    except metadata.PackageNotFoundError:
        return False
    if sys.platform == "darwin":
        return platform.machine() == "arm64"
    return any(os.path.exists(path) for path in ("/proc/driver/nvidia/version", "/dev/kfd", "/dev/dxg"))


def backend_options(settings: Any) -> dict[str, Any]:
    """``load_backend``'s keyword arguments from Harvester's settings (any object with Scrapy's
    ``get``/``getint``)."""
    return {
        "backend": settings.get("HARVESTER_EMBEDDING_BACKEND"),
        "device": settings.get("HARVESTER_EMBEDDING_DEVICE") or None,
        "threads": settings.getint("HARVESTER_EMBEDDING_THREADS"),
        "onnx_cache": settings.get("HARVESTER_ONNX_CACHE_DIR") or None,
    }


def settings_backend(settings: Any) -> str:
    """The backend a crawl under Harvester's ``settings`` embeds with (``auto`` resolved)."""
    options = backend_options(settings)
    return resolve_backend(settings.get("HARVESTER_EMBEDDING_MODEL"), options["backend"],
                           options["device"], options["onnx_cache"])


# The pipelines load the model from their own worker threads at the same moment; transformers'
# lazy imports are not thread-safe, and a model should be loaded once per process anyway.
_LOADING = threading.Lock()


def load_backend(
    name: str, *, backend: str = "torch", device: str | None = None, threads: int = 0,
    onnx_cache: str | None = None,
) -> Any:
    """See ``_load_backend``; one load at a time, each model once per process."""
    with _LOADING:
        return _load_backend(name, backend, device, threads, onnx_cache)


@functools.lru_cache(maxsize=4)
def _load_backend(
    name: str, backend: str, device: str | None, threads: int, onnx_cache: str | None
) -> Any:
    """The embedder for ``backend``: sentence-transformers on torch (GPU when present), or ONNX
    Runtime on the CPU, fp32 or int8 (exported once from the local weights into ``onnx_cache``).

    Every backend has the same surface: ``dimension``, ``max_tokens``, ``tokenizer``,
    ``vector_name`` and ``encode(texts, batch_size)``.
    """
    if backend not in BACKENDS:
        raise ModelUnavailable(f"unknown embedding backend {backend!r}: one of {BACKENDS}")
    if backend == "auto":
        if resolve_backend(name, backend, device, onnx_cache) == "torch":
            return load_embedder(name, device)
        try:
            return _load_backend(name, "onnx", device, threads, onnx_cache)
        except (ModelUnavailable, ImportError) as exc:
            logger.warning("Embedding with torch: ONNX Runtime could not run %s (%s)", name, exc)
            return load_embedder(name, device)
    if backend == "torch":
        return load_embedder(name, device)
    try:
        from harvester.embedding.onnx import default_cache_dir, load_onnx_embedder

        counted = load_model_tokenizer(name)
        return load_onnx_embedder(
            name, quantized=backend == "onnx-int8", cache_dir=onnx_cache or str(default_cache_dir()),
            threads=threads or None, plain_tokenizer=counted.tokenizer if counted is not None else None,
        )
    except ImportError as exc:
        raise ModelUnavailable(f"the {backend} backend needs onnxruntime: pip install onnxruntime ({exc})") from exc
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelUnavailable(f"cannot load {name!r} on the {backend} backend: {exc}") from exc
