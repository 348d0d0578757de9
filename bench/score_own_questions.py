"""`../shared/eval/questions/score_questions.py` for a question set of this repository
(`bench/questions/CORPUS.jsonl`), which has no ground truth in the kit: answers and results are
matched on their normalised paths (the kit's `norm_path`), every path counts as a page.

    .venv/bin/python bench/score_own_questions.py django --questions bench/questions/django.jsonl
        --search-cmd "python -m scrapy search --json -k {k} -- {query}" --json-out bench/results/questions_django.json
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

SCORER = Path(__file__).resolve().parent.parent.parent / "shared" / "eval" / "questions" / "score_questions.py"


class _Every(set):  # type: ignore[type-arg]
    def __contains__(self, item: object) -> bool:
        return True


class PathMatcher:
    """The scorer's matcher without ground truth."""

    def __init__(self, corpus: str) -> None:
        self.known = _Every()

    def __call__(self, url: str) -> str:
        return scorer.common.norm_path(url) if url else ""


spec = importlib.util.spec_from_file_location("score_questions", SCORER)
assert spec and spec.loader
scorer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scorer)
scorer.PathMatcher = PathMatcher

if __name__ == "__main__":
    sys.exit(scorer.main(sys.argv[1:]))
