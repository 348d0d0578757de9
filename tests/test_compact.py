"""The compact map dedup keeps an entry per chunk text in: a dict's behaviour, a fraction of its memory."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from harvester.dedup.compact import CompactIntMap


@pytest.mark.parametrize("bits", [32, 64, 128])
def test_it_behaves_as_a_dict_through_merges(bits: int) -> None:
    rng = random.Random(bits)
    compact, model = CompactIntMap(value_bits=bits, fresh_limit=8), {}
    keys = [rng.getrandbits(64) for _ in range(300)] + ["text", -5, 2**70]
    for step in range(5000):
        key = rng.choice(keys)
        action = rng.random()
        if action < 0.5:
            value = rng.choice([rng.getrandbits(bits), 0, [step], "id", -1, 2**bits])
            compact[key] = model[key] = value
        elif action < 0.7:
            assert compact.pop(key, "none") == model.pop(key, "none")
        else:
            assert compact.get(key, "none") == model.get(key, "none")
            assert (key in compact) == (key in model)
    assert compact.get_many(keys, "none") == [model.get(key, "none") for key in keys]
    with pytest.raises(ValueError):
        CompactIntMap(value_bits=16)


def test_an_entry_costs_a_few_dozen_bytes_not_a_dicts_hundred_and_more() -> None:
    rng = random.Random(1)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        compact = CompactIntMap(value_bits=128)
        for _ in range(50_000):
            compact[rng.getrandbits(64)] = rng.getrandbits(128)
        per_entry = (tracemalloc.get_traced_memory()[0] - start) / 50_000
    finally:
        tracemalloc.stop()
    assert per_entry < 40  # a dict of ints: about 170
