"""The query side of the model, loaded fast: for ``scrapy search`` and the MCP server.

Loading the model through sentence-transformers imports torch and transformers, seconds before the
first query is embedded. A query needs only the model's tokenizer (``tokenizer.json``, read with
``tokenizers``) and the transformer run once: ONNX Runtime on the model's fp32 export, the same
export and cache as the ``onnx`` embedding backend (``harvester.embedding.onnx``), pooled and
normalised as the model does. Its vectors equal the torch model's to float precision (tested). When
ONNX Runtime or the export is missing, the crawl's own backend is loaded instead.
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harvester.embedding.folder import max_seq_length, resolve_model, vector_name
from harvester.embedding.onnx import mean_pooled

logger = logging.getLogger(__name__)


@dataclass
class OnnxQueryEncoder:
    """Embeds short texts with ``tokenizers`` + ONNX Runtime; the ``Embedder`` surface that search
    uses (``dimension``, ``vector_name``, ``encode``)."""

    name: str
    session: Any
    dimension: int
    _tokenizer: Any = field(repr=False)
    _inputs: tuple[str, ...] = ()

    @property
    def vector_name(self) -> str:
        return vector_name(self.name)

    def encode(self, texts: list[str] | tuple[str, ...], batch_size: int = 1) -> np.ndarray:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            ids = np.array([encoding.ids], dtype=np.int64)
            mask = np.array([encoding.attention_mask], dtype=np.int64)
            feed = {"input_ids": ids, "attention_mask": mask,
                    "token_type_ids": np.array([encoding.type_ids], dtype=np.int64)}
            hidden = self.session.run(None, {k: feed[k] for k in self._inputs})[0]
            out[row] = mean_pooled(hidden, mask)[0]
        return out


def load_onnx_query_encoder(name: str, cache_dir: str, *, export: bool = True,
                            threads: int | None = None) -> OnnxQueryEncoder | None:
    """The fast query encoder of ``name``, or None when it cannot be had (no ONNX Runtime, a model
    that is not a local mean-pooled sentence-transformers folder, no export and ``export`` off)."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    from harvester.embedding.models import load_model_tokenizer
    from harvester.embedding.onnx import _session, export_onnx, onnx_path, pooling_mode

    location = Path(resolve_model(name))
    counted = load_model_tokenizer(name)
    if counted is None or not location.is_dir():
        return None
    try:
        pooling_mode(location)
    except ValueError:
        return None
    path = onnx_path(cache_dir, name, quantize=False)
    if not path.is_file():
        if not export:
            return None
        try:
            logger.info("Exporting %s to ONNX once, for fast queries (%s)", name, path)
            path = export_onnx(str(location), cache_dir, quantize=False, name=name)
        except Exception as exc:  # noqa: BLE001 (no torch/onnx to export with: use the model itself)
            logger.info("No ONNX export of %s (%s); queries use the model", name, exc)
            return None
    tokenizer = counted.tokenizer.__class__.from_str(counted.tokenizer.to_str())
    tokenizer.enable_truncation(max_length=max_seq_length(location))
    tokenizer.no_padding()
    session = _session(path, threads)
    inputs = tuple(i.name for i in session.get_inputs())
    if set(inputs) - {"input_ids", "attention_mask", "token_type_ids"}:
        return None
    dimension = int(session.get_outputs()[0].shape[-1])
    return OnnxQueryEncoder(name=name, session=session, dimension=dimension, _tokenizer=tokenizer,
                            _inputs=inputs)


def load_query_embedder(settings: Any) -> Any:
    """The embedder for queries under Harvester's ``settings``: the fast ONNX encoder when
    ``HARVESTER_QUERY_ENCODER`` is ``auto`` and it can be had, else the crawl's backend."""
    from harvester.embedding.models import backend_options, load_backend
    from harvester.embedding.onnx import default_cache_dir

    name = settings.get("HARVESTER_EMBEDDING_MODEL")
    options = backend_options(settings)
    # An int8 collection is queried with the int8 model, as it was embedded.
    if settings.get("HARVESTER_QUERY_ENCODER") == "auto" and options["backend"] in ("torch", "onnx"):
        encoder = load_onnx_query_encoder(name, options["onnx_cache"] or str(default_cache_dir()),
                                          threads=options["threads"] or None)
        if encoder is not None:
            return encoder
    return load_backend(name, **options)
