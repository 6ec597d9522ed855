"""Passage windows (issue 28): the mixed store's 30 questions, with and without windows, in one run.

Builds the mixed store of tests/test_documents_hold_their_own.py (a PDF report,
a workbook heavy with the same business words, Markdown notes) once per
setting of ``passage_window_sentences`` (0 = no windows: the in-run baseline)
and prints, for each, how many answers come first and within the top 3, the
embedding time of the ingest (the model's own work, through an empty cache),
the vectors stored and the store's size.

    python bench/passage_windows.py --sizes 0 1 2 3
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_documents_hold_their_own import cases, fill

import funes
from funes.providers.embed.local import LocalEmbedder


class TimedEmbedder:
    """The real model, timing its own work (the store's cache is empty: every text is embedded)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_batch(self, texts: Any, *, query: bool = False) -> Any:
        start = time.perf_counter()
        out = self.inner.embed_batch(texts, query=query)
        if not query:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)
        return out


def run(size: int, model: Any, folder: Path) -> dict[str, Any]:
    """One store with ``passage_window_sentences=size``: answer ranks, ingest embedding cost, size."""
    from funes.providers.embed import Embedder

    timed = TimedEmbedder(model)
    Embedder.register(type(timed))  # a duck-typed wrapper, accepted as the embedder instance
    db = folder / f"docs-{size}.db"
    mem = funes.open(str(db), embedder=timed, passage_window_sentences=size)
    fill(mem, folder)
    cases_ = cases()
    ranks: list[int | None] = []
    for question, needle in cases_:
        hits = mem.search(question, limit=10)
        ranks.append(next((n for n, h in enumerate(hits) if needle in h.memory.content), None))
    vectors = mem.core.store.db.reader().execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
    records = mem.core.store.db.reader().execute("SELECT count(*) FROM memories").fetchone()[0]
    mem.close()
    return {
        "size": size,
        "first": sum(r == 0 for r in ranks),
        "top3": sum(r is not None and r <= 2 for r in ranks),
        "ranks": ranks,
        "embed_seconds": timed.seconds,
        "texts_embedded": timed.texts,
        "records": records,
        "vectors": vectors,
        "bytes": os.path.getsize(db),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the table for each window size, the first row (size 0) being the baseline."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1, 2, 3])
    args = parser.parse_args(argv)
    model = LocalEmbedder()
    model.embed_batch(["warm up"])
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print("| window sentences | answers first | top 3 | texts embedded | embed s | vectors | store KB |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    base: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            row = run(size, model, Path(tmp))
            base = base or row
            print(
                f"| {size or 'none (baseline)'} | {row['first']}/30 | {row['top3']}/30 | {row['texts_embedded']} "
                f"| {row['embed_seconds']:.2f} ({row['embed_seconds'] / base['embed_seconds']:.2f}x) "
                f"| {row['vectors']} | {row['bytes'] // 1024} ({row['bytes'] / base['bytes']:.2f}x) |"
            )
            print("  ranks:", row["ranks"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
