from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
EVAL_DIR = REPO.parent / "shared" / "eval"
DOC_ROOTS = {
    "flask": Path("/usr/share/doc/python-flask-doc/html"),
    "requests": Path("/usr/share/doc/python-requests-doc/html"),
    "scrapy": Path("/usr/share/doc/python-scrapy-doc/html"),
}


def doc_root(corpus: str) -> Path:
    root = DOC_ROOTS[corpus]
    if not root.is_dir():
        pytest.skip(f"{root} is missing: apt-get install python-{corpus}-doc")
    return root


def truth_pages(corpus: str) -> list[dict[str, Any]]:
    path = EVAL_DIR / "truth" / f"{corpus}.jsonl"
    if not path.exists():
        pytest.skip(f"the public scorer is missing at {EVAL_DIR}")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from harvester.embedding.models import load_embedder

    return load_embedder("sentence-transformers/all-MiniLM-L6-v2").tokenizer


def score_feed(corpus: str, feed: Path, *extra: str) -> dict[str, Any]:
    """The public scorer's figures for a JSONL feed (its last JSON line)."""
    import subprocess
    import sys

    if not (EVAL_DIR / "score.py").exists():
        pytest.skip(f"the public scorer is missing at {EVAL_DIR}")
    process = subprocess.run([sys.executable, str(EVAL_DIR / "score.py"), corpus, str(feed), *extra],
                             capture_output=True, text=True, timeout=300, check=True)
    return json.loads([line for line in process.stdout.splitlines() if line.startswith("{")][-1])


def qdrant_points(path: Path, collection: str = "harvester", engine: str = "edge") -> list[Any]:
    """Every point of an embedded store (``engine``: ``edge`` or ``local``) with ``id`` and ``payload``."""
    from harvester.index.engines import open_store

    store = open_store(None, None, str(path), engine, wait=30)
    try:
        return list(store.scroll(collection))
    finally:
        store.close()
