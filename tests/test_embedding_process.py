"""The model in its own process gives the in-process vectors, and outlives a killed child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from harvester.embedding.folder import DEFAULT_MODEL, ModelUnavailable
from harvester.embedding.models import load_embedder
from harvester.embedding.process import EmbeddingProcessFailed, ProcessEmbedder

REPO = Path(__file__).resolve().parent.parent
OPTIONS = {"backend": "torch", "device": "cpu", "threads": 1, "onnx_cache": None}
TEXTS = ["How do I register a blueprint?", "Qdrant keeps a sparse vector beside the dense one.", "x"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the child inherits the environment


@pytest.mark.e2e
@pytest.mark.cli
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
@pytest.mark.cli
def test_a_model_the_child_cannot_load_is_reported_with_its_reason(tmp_path):
    # The ONNX backend, the default on a CPU: its child reports the missing model without importing torch.
    embedder = ProcessEmbedder(str(tmp_path / "no-such-model"), {**OPTIONS, "backend": "onnx"})
    try:
        with pytest.raises(ModelUnavailable, match="no-such-model"):
            embedder.load()
    finally:
        embedder.close()


PARENT = """
import sys
from harvester.embedding.process import ProcessEmbedder
# The ONNX backend: the child fails on the model without importing torch; what is watched is the process.
embedder = ProcessEmbedder(sys.argv[1], {"backend": "onnx", "device": "cpu", "threads": 1, "onnx_cache": None})
try:
    embedder.load()
except Exception:
    pass  # the child is up (its model is not): enough to watch it outlive its parent
print(embedder.pids()[0], flush=True)
sys.stdin.read()
"""


@pytest.mark.cli
def test_the_child_ends_when_the_crawler_is_killed(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "no-model")], cwd=REPO,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert _alive(child)
        parent.kill()
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(child), "the embedding process outlived its killed parent"
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"
