"""Data sets and stores for bench/quality.py: LoCoMo and SciFact, loaded in place and written through the public API.

The data sets live in ``/work/shared/bench/`` (or ``--data``) and are never
copied. Embeddings are cached on disk (``--cache``, default
``/tmp/funes-quality``) by model, text and kind (query or passage), so a rerun
re-embeds nothing: the stores themselves are rebuilt every run, through the
same code paths a user's application takes.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

# The public data sets sit in the workspace's shared/ folder, beside the checkout; FUNES_BENCH_DATA
# (or each script's --data) points elsewhere.
DATA = Path(os.environ.get("FUNES_BENCH_DATA") or Path(__file__).resolve().parents[2] / "shared" / "bench")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def require(path: Path) -> Path:
    """The path, or exit with a message that says where the data set must be."""
    if not path.exists():
        sys.exit(
            f"Data set not found at {path}. The benchmarks read LoCoMo and SciFact in place from "
            f"{DATA} (locomo/locomo10.json, scifact/corpus.jsonl, queries.jsonl, qrels/test.tsv); "
            "pass --data DIR (or set FUNES_BENCH_DATA) to point elsewhere."
        )
    return path


class CachingEmbedder:
    """An embedder that keeps every vector it computed in a pickle file, keyed by model, kind and text hash."""

    def __init__(self, inner: Any, cache_dir: Path) -> None:
        self.inner = inner
        self.model_id: str = inner.model_id
        self.dimensions: int = inner.dimensions
        self.max_tokens: int = inner.max_tokens
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / f"embeddings-{re.sub(r'[^A-Za-z0-9]+', '-', self.model_id)}.pkl"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            self.vectors = pickle.loads(self.path.read_bytes())
        self.dirty = False

    @staticmethod
    def key(text: str, query: bool) -> str:
        """The cache key of a text embedded as a query or a passage."""
        return ("q:" if query else "p:") + hashlib.sha256(text.encode("utf-8")).hexdigest()

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Vectors from the cache, computing (in batches of 64) only the missing ones."""
        missing = list(dict.fromkeys(t for t in texts if self.key(t, query) not in self.vectors))
        for start in range(0, len(missing), 64):
            chunk = missing[start : start + 64]
            for text, vec in zip(chunk, self.inner.embed_batch(chunk, query=query), strict=True):
                self.vectors[self.key(text, query)] = np.asarray(vec, dtype=np.float32)
            self.dirty = True
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self.vectors[self.key(t, query)] for t in texts])

    def count_tokens(self, text: str) -> int:
        """The inner model's token count."""
        return int(self.inner.count_tokens(text))

    def save(self) -> None:
        """Write the cache back when it grew."""
        if self.dirty:
            if self.path.exists():  # another run may have saved meanwhile: keep its vectors too
                self.vectors = {**pickle.loads(self.path.read_bytes()), **self.vectors}
            tmp = self.path.with_suffix(f".{id(self)}.tmp")
            tmp.write_bytes(pickle.dumps(self.vectors, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.replace(self.path)
            self.dirty = False


# -- LoCoMo ----------------------------------------------------------------------------------
@dataclass
class Question:
    """One scored question with its evidence turns (dia ids)."""

    tenant: str
    text: str
    category: int
    evidence: set[str]


@dataclass
class Conversation:
    """One LoCoMo conversation loaded into its tenant."""

    tenant: str
    questions: list[Question]
    record_to_dia: dict[str, str] = field(default_factory=dict)
    dia_text: dict[str, str] = field(default_factory=dict)
    dia_session: dict[str, str] = field(default_factory=dict)
    # When the last session took place: questions are asked "as of" then (a user asking their imported history).
    last_at: datetime | None = None


def parse_evidence(items: list[str]) -> set[str]:
    """Evidence ids, tolerating the data set's typos ('D8:6; D9:17', 'D:11:26')."""
    out: set[str] = set()
    for item in items:
        for m in re.finditer(r"D:?(\d+):(\d+)", item):
            out.add(f"D{m.group(1)}:{m.group(2)}")
    return out


def parse_date(text: str) -> datetime | None:
    """LoCoMo's '1:56 pm on 8 May, 2023' as an aware datetime."""
    try:
        return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    except ValueError:
        return None


def turn_text(turn: dict[str, Any]) -> str:
    """A turn as a message: ``Speaker: text``, with the shared image's caption."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def load_locomo(data: Path) -> list[dict[str, Any]]:
    """The ten conversations of locomo10.json."""
    return list(json.loads(require(data / "locomo" / "locomo10.json").read_text(encoding="utf-8")))


def questions_of(sample: dict[str, Any]) -> list[Question]:
    """The scored questions (categories 1-4, with evidence) of one conversation."""
    out = []
    for qa in sample["qa"]:
        evidence = parse_evidence(qa.get("evidence") or [])
        if qa.get("category") in CATEGORIES and evidence:
            out.append(Question(sample["sample_id"], qa["question"], int(qa["category"]), evidence))
    return out


def ingest_locomo(mem: Any, sample: dict[str, Any]) -> Conversation:
    """One conversation as a tenant: sessions become Funes sessions, turns messages (speaker, date, dia id)."""
    tenant = sample["sample_id"]
    conv = sample["conversation"]
    speaker_a = conv["speaker_a"]
    out = Conversation(tenant, questions_of(sample))
    numbers = sorted(int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k))
    # Embed every turn in batches first (add_message embeds one message at a time).
    mem.embed_records([turn_text(t) for n in numbers for t in conv[f"session_{n}"]])
    for n in numbers:
        session = mem.session(f"{tenant}-s{n}", tenant=tenant, title=f"session {n}")
        at = parse_date(conv.get(f"session_{n}_date_time", ""))
        if at is not None:
            out.last_at = at if out.last_at is None else max(out.last_at, at)
        for turn in conv[f"session_{n}"]:
            role = "user" if turn["speaker"] == speaker_a else "assistant"
            message = session.add_message(role, turn_text(turn), at=at)
            for record_id in message.record_ids:
                out.record_to_dia[record_id] = turn["dia_id"]
            out.dia_text[turn["dia_id"]] = turn_text(turn)
            out.dia_session[turn["dia_id"]] = session.id
    return out


# -- SciFact ---------------------------------------------------------------------------------
SCIFACT_TENANT = "scifact"


@dataclass
class SciFact:
    """The SciFact corpus loaded into a tenant, with the test queries and their judgements."""

    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    record_to_doc: dict[str, str] = field(default_factory=dict)
    doc_text: dict[str, str] = field(default_factory=dict)


def load_scifact(
    data: Path, limit: int | None
) -> tuple[list[dict[str, Any]], dict[str, str], dict[str, dict[str, int]]]:
    """Corpus, test queries and qrels (the first ``limit`` judged queries when given)."""
    root = require(data / "scifact")
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (root / "qrels" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels[qid][doc] = int(score)
    queries = {}
    for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["_id"] in qrels:
            queries[row["_id"]] = row["text"]
    if limit:
        queries = dict(list(queries.items())[:limit])
    corpus = [json.loads(line) for line in (root / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    return corpus, queries, {q: qrels[q] for q in queries}


def ingest_scifact(mem: Any, data: Path, limit: int | None) -> SciFact:
    """Every abstract as one record (title + text) through ``remember``."""
    corpus, queries, qrels = load_scifact(data, limit)
    out = SciFact(queries, qrels)
    texts = [d["text"] or d["title"] for d in corpus]
    # Warm the cache in batches with the text the core embeds (title, newline, content).
    mem.embed_records([f"{d['title']}\n{t}" if d["title"] else t for d, t in zip(corpus, texts, strict=True)])
    for d, text in zip(corpus, texts, strict=True):
        memory = mem.remember(text, title=d["title"] or None, tenant=SCIFACT_TENANT, type="fact")
        out.record_to_doc[memory.id] = d["_id"]
        out.doc_text[d["_id"]] = f"{d['title']}\n{text}" if d["title"] else text  # the text Funes embeds
    return out
