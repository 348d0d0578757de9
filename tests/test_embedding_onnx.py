"""The ONNX Runtime embedding backend agrees with the torch one (fp32 closely, int8 roughly)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harvester.embedding import onnx as embedding_onnx
from harvester.embedding.folder import DEFAULT_MODEL, ModelUnavailable, resolve_model
from harvester.embedding.models import load_backend, load_embedder
from tests.conftest import import_prerequisite, missing_prerequisite

REPO = Path(__file__).resolve().parent.parent

SENTENCES = [
    "How do I register a blueprint with a URL prefix?",
    "Flask is a lightweight WSGI web application framework.",
    "x",
    "The application context keeps track of the application-level data during a request, CLI "
    "command, or other activity. Rather than passing the application around to each function, the "
    "current_app and g proxies are accessed instead. " * 6,  # longer than max_seq_length: truncated
    "Use the test client to send requests to the application and inspect the responses.",
]


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    # Imported when the module's first test runs, not when it is collected: torch and
    # sentence-transformers take seconds to import, in every worker that collects this file.
    for module in ("onnxruntime", "onnx", "torch", "sentence_transformers"):
        import_prerequisite(module)


@pytest.fixture(scope="module")
def torch_embedder():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        return load_embedder(DEFAULT_MODEL, "cpu")
    except ModelUnavailable as exc:
        missing_prerequisite(f"embedding model unavailable: {exc}")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory, torch_embedder):
    return str(tmp_path_factory.mktemp("onnx-cache"))


@pytest.fixture(scope="module")
def onnx_fp32(cache_dir):
    # Through load_backend, as the crawl loads it: with the model's tokenizer.json read by `tokenizers`.
    return load_backend(DEFAULT_MODEL, backend="onnx", threads=1, onnx_cache=cache_dir)


@pytest.fixture(scope="module")
def onnx_int8(cache_dir):
    return load_backend(DEFAULT_MODEL, backend="onnx-int8", threads=1, onnx_cache=cache_dir)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_files_are_named_after_the_model(cache_dir, onnx_fp32, onnx_int8):
    assert onnx_fp32.path.name == "all-MiniLM-L6-v2-fp32.onnx"
    assert onnx_int8.path.name == "all-MiniLM-L6-v2-int8.onnx"
    assert onnx_fp32.path.parent == onnx_int8.path.parent == Path(cache_dir)
    assert onnx_int8.path.stat().st_size < onnx_fp32.path.stat().st_size


@pytest.mark.parametrize("variant", ["onnx_fp32", "onnx_int8"])
def test_same_surface_as_the_torch_embedder(request, torch_embedder, variant):
    onnx = request.getfixturevalue(variant)
    assert onnx.dimension == torch_embedder.dimension == 384
    assert onnx.max_tokens == torch_embedder.max_tokens
    assert onnx.vector_name == torch_embedder.vector_name
    assert onnx.name == torch_embedder.name
    # The model's tokenizer.json read with `tokenizers` (no transformers), truncating as the model does.
    from tokenizers import Tokenizer

    assert isinstance(onnx.tokenizer, Tokenizer)
    samples = ["Blueprints and views", "Überprüfung naïve café — ½ 東京", "word " * 600]
    ids, _ = onnx._token_ids(samples)
    assert ids == torch_embedder.tokenizer(samples, truncation=True, max_length=256)["input_ids"]
    assert len(ids[2]) == 256


def test_fp32_matches_torch(torch_embedder, onnx_fp32):
    ref = torch_embedder.encode(SENTENCES, batch_size=4)
    got = onnx_fp32.encode(SENTENCES, batch_size=4)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert cosines(ref, got).min() > 0.999


def test_int8_is_close_to_torch(torch_embedder, onnx_int8):
    ref = torch_embedder.encode(SENTENCES, batch_size=4)
    got = onnx_int8.encode(SENTENCES, batch_size=4)
    assert got.dtype == np.float32 and got.shape == ref.shape
    assert cosines(ref, got).min() > 0.95


@pytest.mark.parametrize("variant", ["onnx_fp32", "onnx_int8"])
def test_vectors_are_normalised(request, variant):
    vectors = request.getfixturevalue(variant).encode(SENTENCES, batch_size=2)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_order_is_preserved_with_mixed_lengths(onnx_fp32):
    texts = [SENTENCES[i % len(SENTENCES)] * (1 + i % 3) for i in range(11)]
    together = onnx_fp32.encode(texts, batch_size=3)  # sorted by length inside, batches padded
    one_by_one = np.vstack([onnx_fp32.encode([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)
    assert onnx_fp32.encode([], batch_size=8).shape == (0, 384)


def test_padding_does_not_change_a_vector(onnx_fp32):
    short = onnx_fp32.encode(["x"], batch_size=1)
    padded = onnx_fp32.encode(["x", SENTENCES[3]], batch_size=2)[:1]
    np.testing.assert_allclose(short, padded, atol=1e-5)


def test_the_cache_is_reused(cache_dir, onnx_fp32, onnx_int8, monkeypatch):
    model_dir = resolve_model(DEFAULT_MODEL)
    stamps = {p: p.stat().st_mtime_ns for p in (onnx_fp32.path, onnx_int8.path)}

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(embedding_onnx, "_export_fp32", no_export)
    monkeypatch.setattr(embedding_onnx, "_quantize", no_export)
    for quantize in (False, True):
        path = embedding_onnx.export_onnx(model_dir, cache_dir, quantize=quantize, name=DEFAULT_MODEL)
        assert path in stamps
    embedding_onnx.load_onnx_embedder.cache_clear()
    again = embedding_onnx.load_onnx_embedder(DEFAULT_MODEL, quantized=True, cache_dir=cache_dir, threads=2)
    assert again.path == onnx_int8.path
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


def test_other_poolings_are_refused(tmp_path):
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "modules.json").write_text(
        '[{"path": "", "type": "sentence_transformers.models.Transformer"},'
        ' {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]')
    (tmp_path / "1_Pooling" / "config.json").write_text(
        '{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}')
    with pytest.raises(ValueError, match="mean pooling only"):
        embedding_onnx.pooling_mode(tmp_path)
    with pytest.raises(ValueError, match="mean pooling only"):
        embedding_onnx.export_onnx(str(tmp_path), str(tmp_path / "out"), quantize=False)


def test_missing_onnxruntime_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes ``import onnxruntime`` fail
    with pytest.raises(ImportError, match="pip install onnxruntime"):
        embedding_onnx.require_onnxruntime()
    with pytest.raises(ImportError, match="pip install onnxruntime"):
        embedding_onnx.export_onnx(resolve_model(DEFAULT_MODEL), str(tmp_path), quantize=False)
    with pytest.raises(ImportError, match="pip install onnxruntime"):
        embedding_onnx.load_onnx_embedder(DEFAULT_MODEL, quantized=False, cache_dir=str(tmp_path / "new"))
    # The module itself imports without onnxruntime: the backend is optional.
    code = "import sys; sys.modules['onnxruntime'] = None; import harvester.embedding.onnx"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_auto_runs_onnx_on_a_cpu_and_torch_where_the_export_cannot_stand_in(monkeypatch, tmp_path):
    import importlib.util
    import json

    from harvester.embedding import models

    def resolved(name=DEFAULT_MODEL, **options):
        models._why_not_onnx.cache_clear()
        return models.resolve_backend(name, "auto", **options)

    assert resolved() == "onnx"
    assert models.resolve_backend(DEFAULT_MODEL, "torch") == "torch"
    assert resolved(device="cpu") == "onnx"
    assert resolved(device="cuda:1") == "torch"

    def variant(label, **files):
        folder = tmp_path / label
        folder.mkdir()
        source = Path(resolve_model(DEFAULT_MODEL))
        for entry in source.iterdir():
            if entry.name not in files:
                (folder / entry.name).symlink_to(entry)
        for name, content in files.items():
            (folder / name).write_text(json.dumps(content))
        return str(folder)

    modules = json.loads((Path(resolve_model(DEFAULT_MODEL)) / "modules.json").read_text())
    assert resolved(variant("plain", **{"modules.json": modules})) == "onnx"
    dense = [*modules, {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}]
    with_dense = variant("dense", **{"modules.json": dense})
    assert resolved(with_dense) == "torch"
    # The query encoder of `scrapy search` refuses it too: its queries would miss the Dense layer.
    from harvester.embedding.query import load_onnx_query_encoder

    assert load_onnx_query_encoder(with_dense, str(tmp_path / "query-cache")) is None
    assert not (tmp_path / "query-cache").exists()
    prompted = {"prompts": {"query": "query: "}, "default_prompt_name": "query"}
    assert resolved(variant("prompted", **{"config_sentence_transformers.json": prompted})) == "torch"

    monkeypatch.setattr(models, "_accelerator_for_torch", lambda: True)
    assert resolved() == "torch"
    monkeypatch.undo()
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "onnxruntime" else real_find_spec(name, *args))
    assert resolved() == "torch"
    monkeypatch.undo()
    models._why_not_onnx.cache_clear()


def test_auto_keeps_torch_and_transformers_out_of_the_process(cache_dir, onnx_fp32):
    code = ("import sys; from harvester.embedding.models import load_backend; "
            f"model = load_backend({DEFAULT_MODEL!r}, backend='auto', onnx_cache={cache_dir!r}); "
            "vectors = model.encode(['How do I register a blueprint?'], 1); "
            "print(model.device, vectors.shape, 'torch' in sys.modules, 'transformers' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cpu", "(onnxruntime", "fp32)", "(1,", "384)", "False", "False"]
