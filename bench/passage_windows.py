"""Passage windows (issue 28): the mixed store's 30 questions, with and without windows, in one run.

Builds the mixed store of tests/test_documents_hold_their_own.py (a PDF report,
a workbook heavy with the same business words, Markdown notes) once per
setting of ``passage_window_sentences`` (0 = no windows: the in-run baseline)
and prints, for each, how many answers come first and within the top 3, the
embedding time of the ingest (the model's own work, through an empty cache),
the vectors stored and the store's size.

    python bench/passage_windows.py --sizes 0 1 2 3
    python bench/passage_windows.py --unchanged   # LoCoMo and the agent set: what windows change there

``--unchanged`` counts the LoCoMo turns and agent-set memories that get
windows with the defaults (a record without windows stores exactly the
vectors it stored before; a chat message never gets any), and builds each
LoCoMo conversation twice (windows off, on), comparing the vectors stored and
every question's hits: units in order and relevance to four decimals.
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
        self.tokens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_batch(self, texts: Any, *, query: bool = False) -> Any:
        start = time.perf_counter()
        out = self.inner.embed_batch(texts, query=query)
        if not query:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)
            self.tokens += sum(self.inner.count_tokens(t) for t in texts)
        return out


def run(size: int, model: Any, folder: Path, settings: dict[str, str]) -> dict[str, Any]:
    """One store with ``passage_window_sentences=size``: answer ranks, ingest embedding cost, size."""
    from funes.providers.embed import Embedder

    timed = TimedEmbedder(model)
    Embedder.register(type(timed))  # a duck-typed wrapper, accepted as the embedder instance
    db = folder / f"docs-{size}.db"
    mem = funes.open(str(db), embedder=timed, **{**settings, "passage_window_sentences": size})
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
        "tokens_embedded": timed.tokens,
        "records": records,
        "vectors": vectors,
        "bytes": os.path.getsize(db),
    }


def unchanged(cache: Path) -> None:
    """Print how many agent memories get windows, and whether any LoCoMo vector or hit moves with windows on."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from agent_memory_data import stores
    from quality_data import DATA, CachingEmbedder, ingest_locomo, load_locomo

    from funes.memory.windows import sentence_windows
    from funes.models.config import load

    model = CachingEmbedder(LocalEmbedder(), cache)
    config = load()
    size, least = config.passage_window_sentences, config.passage_window_min_tokens

    def windowed(text: str) -> bool:
        return bool(sentence_windows(text, model.count_tokens, size, least, model.max_tokens))

    memories = [m for store in stores() for m, _ in store.memories]
    print(f"agent set: {sum(map(windowed, memories))} of {len(memories)} memories get windows")
    samples = load_locomo(DATA)
    total = same_total = 0
    for sample in samples:
        runs, vectors = [], []
        with tempfile.TemporaryDirectory() as tmp:
            for n, windows in enumerate((0, size)):
                with funes.open(f"{tmp}/l{n}.db", embedder=model, passage_window_sentences=windows) as mem:
                    c = ingest_locomo(mem, sample)
                    vectors.append(
                        mem.core.store.db.reader().execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
                    )
                    runs.append(
                        [
                            [
                                (c.record_to_dia.get(h.memory.id), round(h.relevance, 4))
                                for h in mem.search(
                                    q.text, tenant=c.tenant, limit=50, track=False, min_relevance=0, as_of=c.last_at
                                )
                            ]
                            for q in c.questions
                        ]
                    )
        same = sum(a == b for a, b in zip(*runs, strict=True))
        total, same_total = total + len(runs[0]), same_total + same
        print(
            f"LoCoMo {sample['sample_id']}: vectors stored off/on {vectors[0]}/{vectors[1]}; questions with the same "
            f"50 hits, order and relevance: {same} of {len(runs[0])}"
        )
    print(f"LoCoMo: {same_total} of {total} questions unchanged")
    model.save()


def main(argv: list[str] | None = None) -> int:
    """Print the table for each window size, the first row (size 0) being the baseline."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="Another setting.")
    parser.add_argument("--unchanged", action="store_true", help="LoCoMo and the agent set with and without windows.")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "funes-quality")
    args = parser.parse_args(argv)
    if args.unchanged:
        unchanged(args.cache)
        return 0
    model = LocalEmbedder()
    model.embed_batch(["warm up"])
    print(f"load average: {os.getloadavg()[0]:.2f}")
    print(
        "| window sentences | answers first | top 3 | texts embedded | tokens embedded | embed s | vectors | store KB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    base: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            row = run(size, model, Path(tmp), dict(item.split("=", 1) for item in args.set))
            base = base or row
            print(
                f"| {size or 'none (baseline)'} | {row['first']}/30 | {row['top3']}/30 | {row['texts_embedded']} "
                f"| {row['tokens_embedded']} ({row['tokens_embedded'] / base['tokens_embedded']:.2f}x) "
                f"| {row['embed_seconds']:.2f} ({row['embed_seconds'] / base['embed_seconds']:.2f}x) "
                f"| {row['vectors']} | {row['bytes'] // 1024} ({row['bytes'] / base['bytes']:.2f}x) |"
            )
            print("  ranks:", row["ranks"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
