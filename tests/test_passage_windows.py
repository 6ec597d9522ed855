"""Passage windows (issue 28): a long record is also matched, and explained, by its best sentences.

A record of several sentences and ``passage_window_min_tokens`` tokens is stored
with one vector per window of ``passage_window_sentences`` sentences beside the
vector of its whole text, in the same transaction; the windows go with the
record (delete, forget, import) and are added to older records by the
``passage-windows`` job.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import funes
from funes.memory.passages import WINDOWS_JOB
from funes.memory.windows import sentence_windows
from funes.providers.embed import HashEmbedder

# Ten sentences, about 130 tokens as HashEmbedder counts them: nine windows of two sentences.
SENTENCES = [
    "The quarterly review covered the budget of every team in the northern region.",
    "Marketing asked for more money to run the spring campaign in three new cities.",
    "The engineering group wants two more servers for the nightly build of the product.",
    "Finance warned that travel costs rose by nine percent over the last quarter.",
    "The support desk answered most tickets within four hours of their arrival.",
    "Legal reviewed the new supplier contracts and found two clauses to change.",
    "The office in Porto will move to a larger floor in the same building.",
    "Hiring slowed down because the budget for new roles is frozen until June.",
    "The board will vote on the dividend at the annual meeting in the autumn.",
    "Everyone agreed to meet again after the results of the second quarter are out.",
]
LONG = " ".join(SENTENCES)
SHORT = "Ana likes the window seat."


def _vectors(mem: funes.Funes, memory_id: str) -> int:
    return len(mem.core.store.vectors_for([memory_id]).get(memory_id, []))


def _open(url: str, **settings: Any) -> funes.Funes:
    """A store with two-sentence windows from 112 tokens (set here, so the counts below do not follow the defaults)."""
    settings = {"passage_window_sentences": 2, "passage_window_min_tokens": 112, **settings}
    return funes.open(url, embedder=HashEmbedder(64), worker="off", **settings)


def test_the_windows_of_a_text_are_runs_of_its_sentences() -> None:
    count = HashEmbedder(64).count_tokens
    windows = sentence_windows(LONG, count, 2, 112, 256)
    assert [(w.first, w.last) for w in windows] == [(n, n + 1) for n in range(9)]
    assert windows[3].text == f"{SENTENCES[3]} {SENTENCES[4]}"
    assert sentence_windows(LONG, count, 2, 1000, 256) == []  # too short for the threshold
    assert sentence_windows(f"{SENTENCES[0]} {SENTENCES[1]}", count, 2, 1, 256) == []  # one window: the text
    assert sentence_windows(LONG, count, 0, 1, 256) == []  # switched off
    table = "\n".join(f"Revenue {region} | 1.1 | 1.2 | 3 percent" for region in ("North", "South", "East", "West"))
    assert sentence_windows(table * 3, count, 2, 1, 256) == []  # rows are not sentences: a sheet stays whole


def test_a_long_record_has_its_windows_and_they_go_with_it(store_url: str) -> None:
    with _open(store_url) as mem:
        long = mem.remember(LONG)
        short = mem.remember(SHORT)
        assert _vectors(mem, long.id) == 1 + 9 and _vectors(mem, short.id) == 1  # chat-sized text: no windows
        mem.forget(long.id)
        assert _vectors(mem, long.id) == 0
        assert mem.core.store.db.reader().execute("SELECT count(*) FROM memory_vectors").fetchone()[0] == 1


def test_forgetting_everywhere_removes_the_windows_and_their_cached_vectors(store_url: str) -> None:
    with _open(store_url) as mem:
        record = mem.remember(LONG)
        model = mem.core.embedding.embedder.model_id
        windows = [w.text for w in mem.core.embedding.windows(LONG)]
        hashes = [hashlib.sha256(t.encode("utf-8")).hexdigest() for t in windows]
        assert len(mem.core.store.cache_get(model, hashes)) == 9  # what the forget must remove
        mem.forget_everywhere(record.id)
        assert _vectors(mem, record.id) == 0
        assert mem.core.store.cache_get(model, hashes) == {}


def test_a_failed_write_leaves_neither_the_record_nor_any_window(tmp_path: Path, monkeypatch: Any) -> None:
    import funes.store.sqlite as sqlite_store

    with _open(str(tmp_path / "crash.db")) as mem:
        mem.remember(SHORT)
        real, calls = sqlite_store.serialize, []

        def fails_on_the_fifth_window(vector: Any) -> Any:
            calls.append(1)
            if len(calls) == 5:
                raise OSError("disk gone mid-write")
            return real(vector)

        monkeypatch.setattr(sqlite_store, "serialize", fails_on_the_fifth_window)
        with pytest.raises(OSError):
            mem.remember(LONG)
        monkeypatch.setattr(sqlite_store, "serialize", real)
        conn = mem.core.store.db.reader()
        assert [m.content for m in mem.list(limit=10).items] == [SHORT]
        assert conn.execute("SELECT count(*) FROM memory_vectors").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM vec_memories").fetchone()[0] == 1
        assert _vectors(mem, mem.remember(LONG).id) == 10  # and the same write succeeds whole


def test_the_explanation_says_which_sentences_matched(store_url: str) -> None:
    with _open(store_url) as mem:
        record = mem.remember(LONG)
        mem.remember(SHORT)
        (hit,) = [h for h in mem.search(f"{SENTENCES[5]} {SENTENCES[6]}", limit=3) if h.memory.id == record.id]
        assert hit.explanation.passage is not None
        assert hit.explanation.passage["sentences"] == [6, 7]
        assert hit.explanation.to_dict()["passage"]["text"] == f"{SENTENCES[5]} {SENTENCES[6]}"
        assert hit.explanation.passage["cosine"] == pytest.approx(1.0, abs=1e-4)
        # The record's cosine: its whole text's plus half (passage_window_weight) of the window's gain over it.
        whole = float(
            mem.core.store.vectors_for([record.id])[record.id][0]
            @ mem.core.embedding.embed_query(f"{SENTENCES[5]} {SENTENCES[6]}")
        )
        assert hit.explanation.vector_similarity == pytest.approx(whole + 0.5 * (1.0 - whole), abs=1e-4)
        # The whole text matching best says so by giving no passage.
        (whole,) = [h for h in mem.search(LONG, limit=3) if h.memory.id == record.id]
        assert whole.explanation.passage is None


@pytest.mark.slow
def test_a_sentence_inside_a_long_note_is_found_and_explained_with_the_real_model(
    tmp_path: Path, local_embedder: Any
) -> None:
    with funes.open(str(tmp_path / "real.db"), embedder=local_embedder) as mem:
        note = mem.remember(LONG)
        mem.remember("Travel requests above 500 euros need a director's approval.")
        mem.remember("The travel agency books flights for the whole company.")
        hits = mem.search("How much did travel costs go up?", limit=3)
        assert hits[0].memory.id == note.id
        passage = hits[0].explanation.passage
        assert passage is not None and SENTENCES[3] in passage["text"], passage


def _age(mem: funes.Funes) -> int:
    """Make the store look written before windows: every record's vectors only its text's, the migration undone."""
    version = next(v for v, name in mem.store.migrations() if "passage_windows" in name)
    with mem.store.db.write() as conn:  # type: ignore[attr-defined]
        conn.execute("DELETE FROM migrations WHERE version = ?", (version,))
    return version


def test_a_store_written_before_windows_gets_them_from_one_job_per_tenant(store_url: str) -> None:
    with _open(store_url, passage_window_sentences=0) as mem:
        first = mem.remember(LONG)
        other = mem.remember(LONG.replace("Porto", "Lisbon"), tenant="other")
        mem.remember(SHORT)
        assert _vectors(mem, first.id) == 1
        _age(mem)
    with _open(store_url) as mem:
        queued = mem.store.list_jobs(None, kind=WINDOWS_JOB)
        assert sorted(j.tenant for j in queued) == ["default", "other"]
        assert mem.run_jobs()["done"] == 2
        assert _vectors(mem, first.id) == 10
        with funes.store.tenancy.acting_for("other"):
            assert _vectors(mem, other.id) == 10
        hit = mem.search(f"{SENTENCES[1]} {SENTENCES[2]}", limit=1)[0]
        assert hit.memory.id == first.id and hit.explanation.passage["sentences"] == [2, 3]  # type: ignore[index]
        # Running it again finds nothing to do.
        mem.core.enqueue_job(WINDOWS_JOB, {}, tenant="default")
        assert mem.run_jobs()["done"] == 1
        assert _vectors(mem, first.id) == 10
    with _open(store_url) as mem:
        assert mem.store.list_jobs(None, kind=WINDOWS_JOB, status="queued") == []  # the migration ran once


def test_the_backfill_goes_in_batches_each_queueing_the_next(tmp_path: Path) -> None:
    url = str(tmp_path / "batches.db")
    with _open(url, passage_window_sentences=0) as mem:
        ids = [mem.remember(f"Note {n}. {LONG}").id for n in range(3)]
    with _open(url) as mem:
        mem.core.enqueue_job(WINDOWS_JOB, {"batch": 1})
        assert mem.store.list_jobs(None, kind=WINDOWS_JOB, status="queued") != []  # (a new store queues none)
        assert mem.run_jobs()["done"] == 3  # one record per job, each queueing the next while any is left
        assert [_vectors(mem, i) for i in ids] == [11, 11, 11]


def test_an_export_made_before_windows_gets_them_after_import(tmp_path: Path) -> None:
    with _open(str(tmp_path / "old.db"), passage_window_sentences=0) as old:
        record = old.remember(LONG)
        lines = list(old.export_lines())
    with _open(str(tmp_path / "new.db")) as new:
        new.import_(lines)
        assert _vectors(new, record.id) == 1
        assert [j.kind for j in new.store.list_jobs(None, kind=WINDOWS_JOB)] == [WINDOWS_JOB]
        new.run_jobs()
        assert _vectors(new, record.id) == 10
    with _open(str(tmp_path / "new.db")) as new, _open(str(tmp_path / "copy.db")) as copy:
        copy.import_(list(new.export_lines()))  # an export with windows carries them
        assert _vectors(copy, record.id) == 10
        assert copy.store.list_jobs(None, kind=WINDOWS_JOB) == []


def test_reindex_rebuilds_the_windows_with_the_settings_in_force(tmp_path: Path) -> None:
    url = str(tmp_path / "reindex.db")
    with _open(url) as mem:
        record = mem.remember(LONG)
        assert _vectors(mem, record.id) == 10
    with _open(url, passage_window_sentences=3) as mem:
        assert mem.reindex() == 1
        assert _vectors(mem, record.id) == 1 + 8
    with _open(url, passage_window_sentences=0) as mem:
        mem.reindex()
        assert _vectors(mem, record.id) == 1
        assert mem.search(LONG, limit=1)[0].explanation.passage is None


def test_a_long_chat_message_gets_no_windows(tmp_path: Path) -> None:
    with _open(str(tmp_path / "chat.db")) as mem:
        session = mem.session("s1")
        message = session.add_message("user", LONG)
        (record_id,) = message.record_ids
        assert _vectors(mem, record_id) == 1  # one utterance, recalled whole with the turns around it
        mem.core.enqueue_job(WINDOWS_JOB, {})
        mem.run_jobs()
        assert _vectors(mem, record_id) == 1  # and the backfill leaves it so
