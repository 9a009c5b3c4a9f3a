"""Batch inference over many Python workers with Ray Data, the way
docs/python.md documents: map_batches with one Translator per actor, on a
local Ray bound to loopback. Skipped without ray."""
import os
import sys

import pytest

import clgraph
from conftest import ROOT
from test_models import date_lines

DATES = os.path.join(ROOT, "models", "dates")


class TranslateBatch:
    """A Ray Data actor: one Translator, one CPU thread, reused for every batch."""

    def __init__(self, model_dir):
        import clgraph as cg
        self.translator = cg.Translator(model_dir, intra_threads=1)

    def __call__(self, batch):
        results = self.translator.translate_batch(list(batch["source"]), max_batch_size=32)
        batch["translation"] = [r.hypotheses[0] for r in results]
        return batch


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_data_map_batches():
    ray = pytest.importorskip("ray")
    pytest.importorskip("ray.data")
    lines = date_lines(300, seed=21)
    want = [r.hypotheses[0] for r in clgraph.Translator(DATES).translate_batch(lines)]
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join([here] + [p for p in sys.path if p])
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path, "CLGRAPH_THREADS": "1"}})
    try:
        ds = ray.data.from_items([{"index": i, "source": s} for i, s in enumerate(lines)])
        out = ds.map_batches(TranslateBatch, fn_constructor_kwargs={"model_dir": DATES}, batch_size=64,
                             concurrency=2, num_cpus=1).take_all()
    finally:
        ray.shutdown()
    got = {row["index"]: row["translation"] for row in out}
    assert len(got) == len(lines)
    assert [got[i] for i in range(len(lines))] == want
