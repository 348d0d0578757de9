"""What importing Harvester costs: the modules every command and a crawl without embedding load."""


def test_what_every_command_imports_holds_no_heavy_module():
    import subprocess
    import sys

    heavy = ["qdrant_client", "datasketch", "scipy", "torch", "sentence_transformers", "transformers", "numpy",
             "tokenizers", "trafilatura", "markdownify", "bs4", "pypdf", "playwright", "scrapy_playwright", "grpc",
             "qdrant_edge", "onnxruntime", "mcp"]
    # What `scrapy crawl` imports before a crawl starts: the settings, the add-on, every command
    # module (Scrapy imports them all) and the spiders.
    code = ("import sys, importlib, pkgutil, harvester.addon, harvester.settings, harvester.commands, "
            "harvester.spiders.site, harvester.spiders.docs, harvester.spiders.sitemap; "
            "[importlib.import_module(f'harvester.commands.{m.name}') "
            "for m in pkgutil.iter_modules(harvester.commands.__path__)]; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_crawl_without_embedding_or_index_imports_neither_qdrant_nor_the_model():
    """Nor the store's module (the commands catch its errors from harvester.exceptions), nor
    numpy.random (20-30 ms; a page's signature draws its permutations with the standard library)."""
    import subprocess
    import sys

    code = ("import sys, harvester.extract.middleware, harvester.chunking.pipeline, harvester.dedup.pipeline, "
            "harvester.recrawl.extension, harvester.report.extension, harvester.urls.middleware, "
            "harvester.commands.search, harvester.commands.export, harvester.commands.mcp; "
            "from harvester.dedup.minhash import MinHash; "
            "from harvester.dedup.shingles import markdown_word_hashes, shingle_hashes; "
            "MinHash.of(shingle_hashes(markdown_word_hashes('one two three four five six seven'), 5)); "
            "print('numpy' in sys.modules, [m for m in ('qdrant_client', 'grpc', 'torch', 'sentence_transformers', "
            "'transformers', 'harvester.index.store', 'numpy.random') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True []"
