"""The query side of the model, loaded fast: for ``scrapy search`` and the MCP server.

Loading the model through sentence-transformers imports torch and transformers, seconds before the
first query is embedded. A query needs only the model's tokenizer (``tokenizer.json``, read with
``tokenizers``) and the transformer run once: ONNX Runtime on the model's fp32 export, the same
export and cache as the ``onnx`` embedding backend (``harvester.embedding.onnx``), pooled and
normalised as the model does. Its vectors equal the torch model's to float precision (tested). When
ONNX Runtime or the export is missing, the crawl's own backend is loaded instead.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harvester.embedding.folder import ModelUnavailable, resolve_model

if TYPE_CHECKING:
    from harvester.embedding.onnx import OnnxEmbedder

logger = logging.getLogger(__name__)


def load_onnx_query_encoder(name: str, cache_dir: str, *, export: bool = True,
                            threads: int | None = None) -> OnnxEmbedder | None:
    """The fast query encoder of ``name``, or None when it cannot be had (the export would not
    compute the model's vectors, ``harvester.embedding.models.onnx_unfit``; no export and
    ``export`` off)."""
    from harvester.embedding.models import onnx_unfit
    from harvester.embedding.tokenizer import load_model_tokenizer

    if onnx_unfit(name):
        return None
    from harvester.embedding.onnx import export_onnx_once, onnx_embedder, onnx_path

    location = Path(resolve_model(name))
    counted = load_model_tokenizer(name)
    path = onnx_path(cache_dir, name, quantize=False)
    if not path.is_file():
        if not export:
            return None
        try:
            path = export_onnx_once(str(location), cache_dir, quantize=False, name=name)
        except Exception as exc:
            logger.info("No ONNX export of %s (%s); queries use the model", name, exc)
            return None
    try:
        return onnx_embedder(name, location, path, threads, counted.tokenizer)
    except ModelUnavailable:
        return None


def load_query_embedder(settings: Any) -> Any:
    """The embedder for queries under Harvester's ``settings``: the fast ONNX encoder when
    ``HARVESTER_QUERY_ENCODER`` is ``auto`` and it can be had, else the crawl's backend."""
    from harvester.embedding.models import backend_options, load_backend
    from harvester.embedding.onnx import default_cache_dir

    name = settings.get("HARVESTER_EMBEDDING_MODEL")
    options = backend_options(settings)
    # An int8 collection is queried with the int8 model, as it was embedded.
    if settings.get("HARVESTER_QUERY_ENCODER") == "auto" and options["backend"] in ("auto", "torch", "onnx"):
        encoder = load_onnx_query_encoder(name, options["onnx_cache"] or str(default_cache_dir()),
                                          threads=options["threads"] or None)
        if encoder is not None:
            return encoder
    return load_backend(name, **options)
