"""Item pipelines, in order: dedup -> chunking -> embedding -> index."""
