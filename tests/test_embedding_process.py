"""The model in its own process gives the in-process vectors, and outlives a killed child."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from harvester.embedding import DEFAULT_MODEL, ModelUnavailable, load_embedder
from harvester.embedding_process import EmbeddingProcessFailed, ProcessEmbedder

OPTIONS = {"backend": "torch", "device": "cpu", "threads": 1, "onnx_cache": None}
TEXTS = ["How do I register a blueprint?", "Qdrant keeps a sparse vector beside the dense one.", "x"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the child inherits the environment


@pytest.mark.e2e
def test_child_vectors_equal_the_in_process_model_and_a_killed_child_is_replaced():
    expected = load_embedder(DEFAULT_MODEL, "cpu").encode(TEXTS, batch_size=4)
    embedder = ProcessEmbedder(DEFAULT_MODEL, OPTIONS)
    try:
        assert embedder.load() == "cpu"
        assert np.allclose(embedder.encode(TEXTS, 4), expected, atol=1e-5)
        for pid in embedder.pids():
            os.kill(pid, signal.SIGKILL)
        with pytest.raises(EmbeddingProcessFailed):
            embedder.encode(TEXTS, 4)
        assert np.allclose(embedder.encode(TEXTS, 4), expected, atol=1e-5)
    finally:
        embedder.close()


@pytest.mark.e2e
def test_a_model_the_child_cannot_load_is_reported_with_its_reason(tmp_path):
    embedder = ProcessEmbedder(str(tmp_path / "no-such-model"), OPTIONS)
    try:
        with pytest.raises(ModelUnavailable, match="no-such-model"):
            embedder.load()
    finally:
        embedder.close()
