"""``scrapy search``'s own handling of its command line and its cold start, in this process."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harvester.commands.search import Command
from tests.conftest import import_prerequisite
from tests.crawl import scrapy_command


@pytest.mark.parametrize(("argv", "query"), [
    (["--", "-s or custom_settings: which wins?"], "-s or custom_settings: which wins?"),
    (["-k", "3", "--", "why -- twice"], "why -- twice"),
    (["how", "do", "routes", "work"], "how do routes work"),
])
def test_the_query_is_searched_without_the_double_dash(tmp_path, monkeypatch, argv: list[str], query: str) -> None:
    # Scrapy leaves "--" among a command's arguments; embedded, it moved the query's vector.
    asked: list[str] = []

    def search(self: Command, settings: Any, text: str, *args: Any) -> list[dict[str, Any]]:
        asked.append(text)
        return []

    monkeypatch.setattr(Command, "_search", search)
    done = scrapy_command(["search", "--json", *argv], tmp_path)
    assert done.returncode == 0, done.stderr
    assert asked == [query]


def small_model(path: Path) -> Path:
    """A one-MatMul ONNX model whose weight is large enough to be kept apart."""
    onnx = import_prerequisite("onnx")
    from onnx import TensorProto, helper, numpy_helper

    weight = numpy_helper.from_array(np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096, "weight")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "weight"], ["y"])], "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 64])], [weight])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


def test_sessions_open_a_copy_with_the_weights_apart_and_compute_the_same(tmp_path) -> None:
    ort = import_prerequisite("onnxruntime")
    from harvester.embedding.onnx import weights_apart

    export = small_model(tmp_path / "m-fp32.onnx")
    apart = weights_apart(export)
    assert apart == tmp_path / "m-fp32.apart.onnx"
    assert (tmp_path / "m-fp32.apart.onnx.data").stat().st_size >= 64 * 64 * 4
    assert apart.stat().st_size < export.stat().st_size / 4
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    outputs = [ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
               for path in (export, apart)]
    assert np.array_equal(*outputs)
    # Written once; again after a new export under the same name.
    written = apart.stat().st_mtime_ns
    assert weights_apart(export) == apart and apart.stat().st_mtime_ns == written
    os.utime(export, ns=(written + 10**9, written + 10**9))
    assert weights_apart(export) == apart and apart.stat().st_mtime_ns > written
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_cache_that_cannot_take_the_copy_keeps_the_export(tmp_path, monkeypatch) -> None:
    import_prerequisite("onnxruntime")
    from harvester.embedding import onnx as embedding_onnx

    export = small_model(tmp_path / "m-fp32.onnx")

    def read_only(**kwargs: Any) -> str:
        raise PermissionError(13, "Permission denied", kwargs.get("dir"))

    monkeypatch.setattr(embedding_onnx.tempfile, "mkdtemp", read_only)
    assert embedding_onnx.weights_apart(export) == export
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-fp32.onnx"]


def test_the_command_modules_leave_the_spiders_unimported() -> None:
    # Scrapy imports every command module for every command: `scrapy search` pays for theirs.
    import subprocess
    import sys

    code = ("import sys, importlib, pkgutil, harvester.commands; "
            "[importlib.import_module(f'harvester.commands.{m.name}') "
            "for m in pkgutil.iter_modules(harvester.commands.__path__)]; "
            "print(sorted(m for m in sys.modules if m.startswith('harvester.spiders')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
