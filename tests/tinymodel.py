"""A small deterministic embedder for tests that are not about vectors.

A sentence-transformers folder like all-MiniLM-L6-v2's, with the same tokenizer files and sequence
limit (so pages are tokenised and chunked exactly as with the real model), but a one-layer BERT of
hidden size 32 with random weights from a fixed seed: it loads and encodes in a fraction of the
real model's time. Its vectors mean nothing; tests that check search results, scores or vectors
use the real model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HIDDEN = 32
# Copied from the real model: the tokenizer, the sequence limit and the module layout.
COPIED = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json",
          "sentence_bert_config.json", "modules.json", "config_sentence_transformers.json")


def build_tiny_model(folder: Path, seed: int = 0) -> Path:
    """Write the tiny model into ``folder`` (created) and return it."""
    import torch
    from transformers import BertConfig, BertModel
    from transformers.utils import logging as transformers_logging

    from harvester.embedding.folder import DEFAULT_MODEL, resolve_model

    source = Path(resolve_model(DEFAULT_MODEL))
    real = json.loads((source / "config.json").read_text())
    config = BertConfig(
        vocab_size=real["vocab_size"], max_position_embeddings=real["max_position_embeddings"],
        type_vocab_size=real.get("type_vocab_size", 2), pad_token_id=real.get("pad_token_id", 0),
        hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2, intermediate_size=2 * HIDDEN,
    )
    folder.mkdir(parents=True, exist_ok=True)
    transformers_logging.disable_progress_bar()
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        BertModel(config).save_pretrained(folder)
    for name in COPIED:
        shutil.copyfile(source / name, folder / name)
    pooling = json.loads((source / "1_Pooling" / "config.json").read_text())
    pooling["word_embedding_dimension"] = HIDDEN
    (folder / "1_Pooling").mkdir(exist_ok=True)
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling, indent=2))
    return folder
