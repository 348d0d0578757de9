"""Benchmark: the padding the model computes when the embedding pipeline groups pages' chunks.

A batch is padded to its longest text. Crawls the Flask docs (embedding off), counts each chunk's
tokens as embedded (context line + text, with [CLS]/[SEP], capped at 256), and compares the padded
tokens (linear layers) and the sum of squared padded lengths (attention) of batches of 16 when
the chunks are sorted across the whole crawl (what the model alone does) with groups of whole
pages up to N chunks, each sorted on its own (what ``EmbeddingPipeline`` hands the model).
Deterministic: no timing.

    .venv/bin/python bench/bench_padding.py
"""
import sys, json, tempfile
from pathlib import Path
sys.path.insert(0, "/work/main")
from tests.crawl import NO_EMBEDDING, cli_crawl
from tests.servers.sitesrv import SiteServer
from harvester.chunking.context import embedding_text
from harvester.embedding.folder import DEFAULT_MODEL
from harvester.embedding.tokenizer import load_model_tokenizer
work = Path(tempfile.mkdtemp())
with SiteServer(root=Path("/usr/share/doc/python-flask-doc/html")) as s:
    res = cli_crawl("docs", s.url, work, settings=NO_EMBEDDING)
feed = [json.loads(l) for l in open(next(work.rglob("*.jsonl")))]
tok = load_model_tokenizer(DEFAULT_MODEL)
pages = [[min(256, c + 2) for c in tok.count([embedding_text(ch.get("context", ""), ch["text"]) for ch in p["chunks"]])] for p in feed if p.get("chunks")]
def cost(lengths, bs):  # padded tokens and attention (len^2) over batches after sorting
    L = sorted(lengths, reverse=True); lin = att = 0
    for i in range(0, len(L), bs):
        b = L[i:i+bs]; lin += b[0] * len(b); att += b[0] ** 2 * len(b)
    return lin, att
allc = [x for p in pages for x in p]
ideal = cost(allc, 16)
def grouped(limit):
    lin = att = 0; group = []
    for p in pages:
        if group and sum(map(len, group)) + len(p) > limit:
            a, b = cost([x for g in group for x in g], 16); lin += a; att += b; group = []
        group.append(p)
    if group:
        a, b = cost([x for g in group for x in g], 16); lin += a; att += b
    return lin, att
print("chunks", len(allc), "real tokens", sum(allc))
print("sorted over the crawl", ideal)
for limit in (16, 64, 128, 256):  # HARVESTER_EMBEDDING_BATCH_SIZE 16 x GROUP_BATCHES 1, 4, 8, 16
    g = grouped(limit); print("groups up to", limit, g, "linear x%.3f attention x%.3f" % (g[0] / ideal[0], g[1] / ideal[1]))
