"""EmbeddingPipeline: pages waiting for the model go to it together."""

from scrapy.utils.misc import build_from_crawler

from harvester.embedding.pipeline import EmbeddingPipeline
from harvester.items import PageItem
from tests.components import crawler_with


def test_embedding_hands_the_model_several_waiting_pages_at_once(monkeypatch):
    """Pages that wait while the model works go to it together (up to GROUP_BATCHES batches), so
    their chunks are sorted by length together and batches carry less padding; after each call the
    heap's free memory goes back to the system (the torch model runs in this process)."""
    import asyncio
    import threading

    import numpy as np

    from harvester.embedding import pipeline as embedding_pipeline
    from harvester.embedding.pipeline import GROUP_BATCHES
    from harvester.memory import trim_malloc

    trims = []
    monkeypatch.setattr(embedding_pipeline, "trim_malloc", lambda: trims.append(1) or trim_malloc())

    class RecordingModel:
        def __init__(self):
            self.calls: list[int] = []
            self.release = threading.Event()

        def encode(self, texts, batch_size):
            self.calls.append(len(texts))
            self.release.wait(5)  # the first call holds the model while the other pages queue
            return [np.zeros(2, dtype=np.float32) for _ in texts]

    batch = 4
    pipeline = build_from_crawler(EmbeddingPipeline, crawler_with(HARVESTER_EMBEDDING_BATCH_SIZE=batch,
                                                                   HARVESTER_EMBEDDING_BACKEND="torch"))
    model = pipeline._embedder = RecordingModel()
    pages = [PageItem(url=f"https://example.org/{n}", title="A", markdown="x", content_hash=str(n)) for n in range(12)]
    for n, page in enumerate(pages):
        page.chunks = [{"id": f"{n}-{i}", "text": f"page {n} chunk {i}", "context": ""} for i in range(3)]

    async def crawl():
        first = asyncio.ensure_future(pipeline.process_item(pages[0]))
        while not model.calls:
            await asyncio.sleep(0.01)
        rest = [asyncio.ensure_future(pipeline.process_item(page)) for page in pages[1:]]
        await asyncio.sleep(0.05)
        model.release.set()
        return await asyncio.gather(first, *rest)

    done = asyncio.run(crawl())
    pipeline._worker.close()
    assert all(len(page.vectors) == 3 for page in done)
    # 11 waiting pages of 3 chunks: whole pages up to batch x GROUP_BATCHES chunks per call.
    limit = batch * GROUP_BATCHES
    assert model.calls[0] == 3
    assert model.calls[1] > 3  # several pages in one call
    assert model.calls[1] == limit // 3 * 3 and sum(model.calls) == 36
    assert len(trims) == len(model.calls)
    for settings in ({"HARVESTER_EMBEDDING_PROCESS": True}, {"HARVESTER_MALLOC_TUNING": False}):
        assert not build_from_crawler(EmbeddingPipeline, crawler_with(**settings))._trim
