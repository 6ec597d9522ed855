"""Forgetting you can prove (issue 25): the text leaves every place, a receipt says so, verify checks the bytes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from click.testing import CliRunner

import funes
from funes.errors import Conflict, EmbedderUnavailable, InvalidInput, NotFound
from funes.interfaces.cli import main
from funes.models import utcnow
from funes.providers.embed import HashEmbedder
from funes.store import AccessEvent

SECRET = "My quokkabrandt passcode is zephyrwhistle42 and I prefer marmaladeorchid seats."
TOKENS = (b"quokkabrandt", b"zephyrwhistle42", b"marmaladeorchid", b"vaultkeeperx9")
OTHER = "Team lunch is on Fridays at the ramen bar."


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory as the working directory: the default memory folder lives under it."""
    root = tmp_path / "project"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def _open(url: str, **settings: object) -> funes.Funes:
    return funes.open(url, embedder=HashEmbedder(64), worker="off", **settings)


def _seed(mem: funes.Funes) -> str:
    """Alice's text stored, written back to Markdown, searched, said in a chat and learned from, and uploaded."""
    stated = mem.remember(SECRET.replace("marmaladeorchid", "aisle"), user="alice")
    mem.update(stated.id, content=SECRET, user="alice")  # the first wording is a kept version now
    mem.writeback.write_back(mem.get(stated.id, user="alice"))
    mem.remember(OTHER)
    mem.session("s1", user="alice")
    mem.add_message("s1", "user", "I prefer marmaladeorchid seats on long flights.")
    mem.add_message("s1", "assistant", "Noted.")
    learned = mem.learn("s1", user="alice")
    assert learned["added"], learned
    assert mem.search("zephyrwhistle42 passcode", user="alice")
    mem.upload("alice.md", b"# Notes\n\nThe quokkabrandt vaultkeeperx9 code is zephyrwhistle42.\n", user="alice")
    mem.jobs.run_pending()
    assert mem.search("vaultkeeperx9", user="alice")
    return mem.list(user="alice").items[0].id


def _scan(files: list[Path]) -> list[tuple[str, bytes]]:
    found = []
    for path in files:
        data = path.read_bytes().lower()
        found += [(str(path), t) for t in TOKENS if t in data]
    return found


def _files(*roots: Path) -> list[Path]:
    out: list[Path] = []
    for root in roots:
        if root.is_file():
            out.append(root)
        elif root.is_dir():
            out += [p for p in root.rglob("*") if p.is_file()]
    return out


def test_forgetting_a_user_leaves_none_of_their_text_in_any_file_on_sqlite(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "store" / "mem.db"
    with _open(str(db), ann_min=1, vector_cache_min=1) as mem:
        _seed(mem)
        mem.jobs.run_pending()  # builds the ANN index the searches asked for
        folder = Path(mem.memory_folders.folders()[0].path)
        uploads = mem.uploads.folder
        before = _scan(_files(db.parent, folder, uploads))
        assert {t for _, t in before} == set(TOKENS)
        assert [p for p in db.parent.glob("mem.db.ann/*") if p.suffix != ".lock"], "no ANN index was built"
        receipt = mem.forget_everywhere(user="alice")
        assert [h.memory.content for h in mem.search("ramen lunch")][:1] == [OTHER]
        verified = mem.verify_forgotten(receipt["id"])
    assert verified["ok"] and verified["found"] == 0 and verified["tokens"] >= 4, verified
    assert verified["files_scanned"]["store"] >= 1 and verified["files_scanned"]["folders"] >= 1
    # The closed store: the file, its WAL (if any), the ANN files, the folder and the uploads.
    assert _scan(_files(db.parent, folder, uploads)) == []
    counts = receipt["counts"]
    assert counts["records"] >= 5 and counts["versions"] == 1 and counts["messages"] == 2 and counts["sessions"] == 1
    assert counts["access_log_rows"] >= 1 and counts["uploads"] == 1 and counts["markdown_files"] == 1
    assert counts["jobs"] >= 1 and counts["documents"] == 1 and counts["embedding_cache"] >= 1
    # The tombstone holds no content: ids, hashes and counts only.
    with _open(str(db)) as mem:
        tomb = mem.forget_receipt(receipt["id"])
        assert tomb["counts"] == receipt["counts"] and tomb["tokens"]["hashes"] == receipt["tokens"]["hashes"]
        assert [m.content for m in mem.list(user="alice").items] == [OTHER] and mem.sessions(user="alice") == []
    assert not any(t.decode() in json.dumps(tomb).lower() for t in TOKENS)


@pytest.mark.postgres
def test_forgetting_a_user_leaves_none_of_their_text_in_the_postgres_data_files(
    project: Path, pg_url: str, pg_admin_url: str
) -> None:
    import psycopg

    with _open(pg_url) as mem:
        _seed(mem)
        folder = Path(mem.memory_folders.folders()[0].path)
        uploads = mem.uploads.folder
        dbname = urlparse(pg_url).path.lstrip("/")
        with psycopg.connect(pg_admin_url, autocommit=True) as admin:
            root = Path(str(admin.execute("SHOW data_directory").fetchone()[0]))
            oid = admin.execute("SELECT oid FROM pg_database WHERE datname = %s", (dbname,)).fetchone()[0]
            admin.execute("CHECKPOINT")  # the rows reach the data files
        database_dir = root / "base" / str(oid)
        assert {t for _, t in _scan(_files(database_dir, folder, uploads))} == set(TOKENS)
        receipt = mem.forget_everywhere(user="alice")
        assert receipt["storage"]["vacuum_full"]
        assert [h.memory.content for h in mem.search("ramen lunch")][:1] == [OTHER]
        verified = mem.verify_forgotten(receipt["id"])
        assert verified["ok"], verified
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute("CHECKPOINT")
    # Every file of the database's directory: heap, TOAST, indexes (pg_wal keeps history; docs say so).
    assert _scan(_files(database_dir, folder, uploads)) == []


def test_forgetting_a_message_removes_what_was_learned_from_it(project: Path, tmp_path: Path) -> None:
    with _open(str(tmp_path / "m.db")) as mem:
        mem.session("s1", user="bo")
        mem.add_message("s1", "user", "I prefer marmaladeorchid seats on long flights.")
        mem.add_message("s1", "user", "My manager is Priya.")
        learned = mem.learn("s1", user="bo")
        fact = next(i["memory"] for i in learned["added"] if "marmaladeorchid" in i["statement"])
        message_record = next(m for m in mem.list(kinds=["message"], user="bo").items if "marmaladeorchid" in m.content)
        why = mem.why(fact.id, user="bo")
        assert why["sources"]["sessions"] == ["s1"] and why["sources"]["messages"]
        assert fact.id in {d["id"] for d in mem.why(message_record.id, user="bo")["derived"]}
        receipt = mem.forget_everywhere([message_record.id], caller="bo")
        assert receipt["counts"]["derived_removed"] >= 1 and receipt["counts"]["messages"] == 1
        with pytest.raises(NotFound):
            mem.get(fact.id, user="bo")
        left = [m.content for m in mem.list(user="bo").items]
        assert any("Priya" in c for c in left) and not any("marmaladeorchid" in c for c in left)
        assert [m.content for m in mem.history("s1", user="bo")] == ["My manager is Priya."]
        report = mem.verify_forgotten(receipt["id"])
        assert report["ok"], report["hits"]


def test_bad_input_is_refused_and_changes_nothing(project: Path, store_url: str) -> None:
    with _open(store_url) as mem:
        kept = mem.remember(SECRET)

        def state() -> list[tuple[str, str]]:
            return [(m.id, m.content) for m in mem.list().items]

        before = state()
        with pytest.raises(NotFound, match="nothing was forgotten"):
            mem.forget_everywhere([kept.id, "mem_nope"])
        with pytest.raises(InvalidInput, match="needs confirmation"):
            mem.forget_everywhere(matching="zephyrwhistle42")
        with pytest.raises(InvalidInput, match="shorter than"):
            mem.preview_forget(matching="ze")
        with pytest.raises(InvalidInput, match="one of them"):
            mem.forget_everywhere([kept.id], user="alice")
        with pytest.raises(NotFound, match="Nothing of user 'ghost'"):
            mem.forget_everywhere(user="ghost")
        with pytest.raises(NotFound, match="receipt"):
            mem.verify_forgotten("fgt_missing")
        assert state() == before
        assert mem.store.list_receipts("default") == []
        preview = mem.preview_forget(matching="ZEPHYRwhistle42")
        assert [r["id"] for r in preview["records"]] == [kept.id]
        receipt = mem.forget_everywhere(matching="zephyrwhistle42", confirm=True)
        assert receipt["selector"]["by"] == "matching" and "zephyr" not in json.dumps(receipt["selector"])
        assert state() == []


def test_verify_says_where_a_forgotten_word_came_back(project: Path, tmp_path: Path) -> None:
    with _open(str(tmp_path / "m.db")) as mem:
        mem.remember(SECRET, to_markdown=True)
        receipt = mem.forget_everywhere(matching="quokkabrandt", confirm=True)
        report = mem.verify_forgotten(receipt["id"])
        assert report["ok"], report["hits"]
        folder = Path(mem.memory_folders.folders()[0].path)
        stray = folder / "stray.md"
        stray.write_text("copied by hand: the QUOKKABRANDT passcode\n", encoding="utf-8")
        report = mem.verify_forgotten(receipt)
        assert not report["ok"] and report["found"] == 2
        where = {h["word"]: (h["file"], h["offset"], h["place"]) for h in report["hits"]}
        assert where == {"quokkabrandt": (str(stray), 20, "folders"), "passcode": (str(stray), 33, "folders")}


def _run(db: Path, *args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--db", str(db), "--embedder", "hash", *args], input=input)
    return result.exit_code, result.output


def test_the_cli_previews_asks_forgets_and_verifies(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    with _open(str(db)) as mem:
        first = mem.remember(SECRET)
        mem.remember(OTHER)
    code, out = _run(db, "forget", "--matching", "zephyrwhistle42", input="no\n")
    assert code == 1 and first.id in out and "nothing was forgotten" in out
    code, out = _run(db, "forget", "--matching", "zephyrwhistle42", "--preview", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)["records"]] == [first.id]
    receipt_file = tmp_path / "receipt.json"
    code, out = _run(db, "forget", "--matching", "zephyrwhistle42", "--receipt", str(receipt_file), input="forget\n")
    assert code == 0 and "Receipt fgt_" in out, out
    code, out = _run(db, "verify-forgotten", str(receipt_file))
    assert code == 0 and out.startswith("0 found"), out
    code, out = _run(db, "forget", "mem_nope")
    assert code == 1 and "nothing was forgotten" in out
    with _open(str(db)) as mem:
        other = mem.list().items[0]
    code, out = _run(db, "why", other.id, "--json")
    assert code == 0 and json.loads(out)["id"] == other.id


def test_the_rest_api_forgets_with_an_admin_key(project: Path, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from funes.interfaces.server.app import create_app

    with _open(str(tmp_path / "r.db")) as mem:
        key = mem.keys.create("t", "admin", user="ana")[0]
        headers = {"Authorization": f"Bearer {key}"}
        client = TestClient(create_app(mem), base_url="http://127.0.0.1")
        made = client.post("/v1/teams/t/memories", json={"content": SECRET}, headers=headers).json()
        assert client.get(f"/v1/teams/t/memories/{made['id']}/why", headers=headers).status_code == 200
        refused = client.post("/v1/teams/t/forget", json={"matching": "quokkabrandt"}, headers=headers)
        assert refused.status_code == 400 and "confirm" in refused.json()["error"]["hint"]
        preview = client.post("/v1/teams/t/forget/preview", json={"matching": "quokkabrandt"}, headers=headers)
        assert [r["id"] for r in preview.json()["records"]] == [made["id"]]
        receipt = client.post("/v1/teams/t/forget", json={"ids": [made["id"]]}, headers=headers).json()
        assert receipt["counts"]["records"] == 1
        verified = client.get(f"/v1/teams/t/forget/{receipt['id']}/verify", headers=headers).json()
        assert verified["ok"] is True
        missing = client.post("/v1/teams/t/forget", json={"ids": ["mem_nope"]}, headers=headers)
        assert missing.status_code == 404


def test_forgetting_a_message_removes_the_insight_of_its_chat_and_queues_a_fresh_one(
    project: Path, tmp_path: Path
) -> None:
    with _open(str(tmp_path / "i.db")) as mem:
        mem.session("pool")
        question = "How should we size the PostgreSQL quokkabrandt pool for the API servers under peak load?"
        answer = (
            "Size the pool from the database side: PostgreSQL handles about two connections per core "
            "well, so with 8 cores keep the pool near 16 and let PgBouncer multiplex the API servers onto it."
        )
        mem.add_messages("pool", [{"role": "user", "content": question}, {"role": "assistant", "content": answer}])
        made = mem.process_chat("pool")
        assert made["status"] == "created", made
        insight = made["memory"]
        assert mem.why(insight.id)["sources"]["sessions"] == ["pool"]
        asked = next(m for m in mem.list(kinds=["message"]).items if "quokkabrandt" in m.content)
        receipt = mem.forget_everywhere([asked.id])
        assert {r["id"] for r in receipt["records"] if r["derived"]} == {insight.id}
        assert receipt["counts"]["derived_rebuilding"] == 1
        assert mem.list(kinds=["insight"]).items == ()
        queued = [j for j in mem.jobs.list(kind="insights") if j.status == "queued"]
        assert [j.payload["session"] for j in queued] == ["pool"]
        assert [m.content for m in mem.history("pool")] == [answer]
        report = mem.verify_forgotten(receipt["id"])
        assert report["ok"], report["hits"]


def test_forgetting_a_matched_text_cuts_its_lines_from_a_memory_folder_note(project: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    note = notes / "travel.md"
    note.write_text(
        "# Travel\n\nThe hotel is near the station.\nThe quokkabrandt door code is zephyrwhistle42.\n"
        "Breakfast starts at seven.\n",
        encoding="utf-8",
    )
    with _open(str(tmp_path / "f.db")) as mem:
        mem.add_folder(notes)
        mem.sync(notes)
        preview = mem.preview_forget(matching="zephyrwhistle42")
        assert preview["markdown_files"] == [str(note)]
        receipt = mem.forget_everywhere(matching="zephyrwhistle42", confirm=True)
        assert receipt["counts"]["markdown_files"] == 1
        text = note.read_text(encoding="utf-8")
        assert "zephyrwhistle42" not in text and "quokkabrandt" not in text
        assert "The hotel is near the station." in text and "Breakfast starts at seven." in text
        assert [h.memory.source.uri for h in mem.search("hotel station breakfast")][:1] == [str(note)]
        assert mem.verify_forgotten(receipt["id"])["ok"]


def _mirrored(mem: funes.Funes, notes: Path, name: str) -> tuple[Any, str, dict[str, Any], Path]:
    """A memory-store memory at ``/team/NAME`` holding the secret words, and its mirror file in a memory folder."""
    folder = mem.memory_folders.add_folder(notes)
    ms = mem.memory_stores
    store = ms.create_store("Notes")["id"]
    made = ms.create_memory(store, f"/team/{name}", "The quokkabrandt code is zephyrwhistle42.\n")
    return ms, store, made, Path(folder.path) / ".memory_stores" / store / "team" / name


def test_forgetting_a_memory_store_memory_removes_its_versions_and_its_mirrored_file(
    project: Path, tmp_path: Path
) -> None:
    with _open(str(tmp_path / "s.db")) as mem:
        ms, store, made, mirror = _mirrored(mem, tmp_path / "notes", "vault.md")
        ms.update_memory(store, made["id"], content="The quokkabrandt code is vaultkeeperx9.\n")
        assert mirror.is_file() and len(ms.list_versions(store)["data"]) == 2
        receipt = mem.forget_everywhere([made["id"]])
        assert receipt["counts"]["store_versions"] == 2 and receipt["mirror_files"] == [str(mirror)]
        assert not mirror.exists() and ms.list_versions(store)["data"] == []
        assert mem.verify_forgotten(receipt["id"])["ok"]
    found = _scan(_files(tmp_path / "s.db", tmp_path / "notes"))
    assert found == []


def test_a_receipt_keeps_a_file_path_that_spells_a_forgotten_word_only_as_its_keyed_hash(
    project: Path, tmp_path: Path
) -> None:
    """A mirror named after the memory's path would put the forgotten word in the tombstone, and verify fails."""
    from funes.curation.forget_scan import token_hash

    with _open(str(tmp_path / "p.db")) as mem:
        _, _, made, mirror = _mirrored(mem, tmp_path / "notes", "quokkabrandt.md")
        assert mirror.is_file()
        receipt = mem.forget_everywhere([made["id"]])
        salt = bytes.fromhex(receipt["tokens"]["salt"])
        assert receipt["mirror_files"] == [f"hmac-sha256/16:{token_hash(salt, str(mirror))}"]
        assert receipt["counts"]["mirror_files"] == 1 and not mirror.exists()
        assert mem.forget_receipt(receipt["id"])["mirror_files"] == receipt["mirror_files"]
        assert mem.verify_forgotten(receipt["id"])["ok"]
    assert _scan(_files(tmp_path / "p.db", tmp_path / "notes")) == []


def test_a_file_gone_since_verify_listed_it_holds_nothing(tmp_path: Path) -> None:
    """PostgreSQL drops a relation's files (a VACUUM, a forget's scrub) while another verify scans: no hit."""
    from funes.curation.forget_scan import scan_file, seal

    tokens = seal(["quokkabrandt"])
    kept = tmp_path / "kept.md"
    kept.write_text("the quokkabrandt passcode\n", encoding="utf-8")
    assert [h["word"] for h in scan_file(kept, tokens)] == ["quokkabrandt"]
    assert scan_file(tmp_path / "19239_fsm", tokens, ["mem_x"]) == []


def test_access_rows_written_after_a_forget_bring_back_neither_the_record_nor_the_words(
    project: Path, store_url: str
) -> None:
    """Rows of a read are written after it: held by another server process (PostgreSQL), or held back
    while the store was locked, or from a search that ran beside the forget. None may undo the forget."""
    with _open(store_url) as mem, _open(store_url) as other:
        secret = mem.remember(SECRET, user="alice")
        kept = mem.remember(OTHER)
        assert other.search("zephyrwhistle42 passcode", user="alice")  # `other`'s rows may wait for a write
        read_at = utcnow()
        receipt = mem.forget_everywhere(user="alice")
        tenant = mem.core.tenant_of(None)
        late = [
            AccessEvent(secret.id, tenant, "search", query="quokkabrandt zephyrwhistle42"),
            AccessEvent(kept.id, tenant, "search", query="quokkabrandt lunch"),
        ]
        mem.store.record_access(late, read_at)  # a read from before the forget, written after it
        assert [h.memory.id for h in other.search("ramen lunch")][:1] == [kept.id]  # `other` writes what it held
        other.core.sync_access()
        rows = mem.store.db.reader().execute("SELECT memory_id, query FROM access_log").fetchall()
        assert secret.id not in {r[0] for r in rows}, rows
        assert not [r for r in rows if r[1] and any(t.decode() in r[1].lower() for t in TOKENS)], rows
        assert (kept.id, None) in {(r[0], r[1]) for r in rows}  # the read of a kept record still counts
        assert ("ramen lunch" in {r[1] for r in rows}) and mem.get(kept.id).access_count >= 2
        assert mem.verify_forgotten(receipt["id"])["ok"]


class _Beside(HashEmbedder):
    """The hash embedder, which runs ``during`` once inside its next batch: a forget (or an outage) meanwhile."""

    def __init__(self) -> None:
        super().__init__(64)
        self.during: Any = None

    def embed_batch(self, texts: Any, *, query: bool = False) -> Any:
        during, self.during = self.during, None
        if during is not None:
            during()
        return super().embed_batch(texts, query=query)


def _cached(mem: funes.Funes, *texts: str) -> set[str]:
    rows = mem.store.db.reader().execute("SELECT text_hash FROM embedding_cache").fetchall()
    wanted = {hashlib.sha256(t.encode("utf-8")).hexdigest(): t for t in texts}
    return {wanted[r[0]] for r in rows if r[0] in wanted}


def _down() -> None:
    raise EmbedderUnavailable("the embedding server is down (test)")


def test_a_vectors_job_embedding_a_record_while_it_is_forgotten_caches_none_of_its_text(
    project: Path, store_url: str
) -> None:
    """Another process embeds a record for its vectors job; the record is forgotten before the vectors return.
    The job skips the gone record, but its text's cache row (hash and vector) must not land after the forget."""
    beside = _Beside()
    with _open(store_url) as mem, funes.open(store_url, embedder=beside, worker="off") as other:
        beside.during = _down  # stored while the embedder is down: its vectors are a job
        secret = other.remember(SECRET, user="alice")
        assert [j.kind for j in other.jobs.list(status="queued")] == ["vectors"]
        receipts: list[dict[str, Any]] = []
        beside.during = lambda: receipts.append(mem.forget_everywhere([secret.id]))
        job = other.jobs.run_one(kinds=["vectors"])
        assert job is None or job.status != "done" or job.result == {"embedded": 0, "skipped": 1}
        assert receipts and _cached(mem, SECRET) == set()
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]
        kept = other.remember(OTHER)  # a text read after the forget is cached as ever
        assert _cached(mem, OTHER) == {OTHER} and other.get(kept.id) is not None


@contextlib.contextmanager
def _meanwhile(
    monkeypatch: pytest.MonkeyPatch, owner: Any, step: str, write: Callable[[], Any], refused: type[Exception]
) -> Iterator[list[Any]]:
    """Inside the block, when the forget reaches ``owner.step``, ``write`` runs in another thread (another process's
    write) and is given 2 s before the forget goes on; the list yielded holds its result, or the ``refused`` error
    it raised, once the block ends."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(write())
        except refused as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    reached = getattr(owner, step)

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        thread.start()
        thread.join(timeout=2)
        return reached(*args, **kwargs)

    monkeypatch.setattr(owner, step, meanwhile)
    yield outcome
    thread.join()


def _learning(mem: funes.Funes, other: funes.Funes) -> str:
    """Alice's chat of two statements, and a learn job of it queued for ``other``; the tenant."""
    mem.session("s1", user="alice")
    # Statements inside longer messages: the learner embeds them afresh (a message's own text is cached).
    mem.add_message("s1", "user", "Thanks for booking. I prefer marmaladeorchid seats on long flights.")
    mem.add_message("s1", "user", "By the way, I prefer window tables at the ramen bar.")
    tenant = mem.core.tenant_of(None)
    other.core.enqueue_job("learn", {"session": "s1", "user": "alice"}, tenant=tenant)
    return tenant


def test_a_learn_job_running_across_a_forget_learns_nothing_from_the_forgotten_message(
    project: Path, store_url: str
) -> None:
    """A learn job read the chat before a forget of one message, and writes after it: its fact from that
    message would bring the text back (its job names the session, not the message, so the forget left it)."""
    beside = _Beside()
    with _open(store_url) as mem, funes.open(store_url, embedder=beside, worker="off") as other:
        tenant = _learning(mem, other)
        receipts: list[dict[str, Any]] = []
        beside.during = lambda: receipts.append(mem.forget_everywhere(matching="marmaladeorchid", confirm=True))
        crossed = other.jobs.run_one(kinds=["learn"])
        records = [m.content.lower() for m in mem.store.iter_records(tenant)]
        assert receipts and not [c for c in records if "marmaladeorchid" in c], records
        assert _cached(mem, "I prefer marmaladeorchid seats on long flights.") == set()  # the statement's
        assert crossed is not None and (crossed.status, crossed.attempts) == ("queued", 0), crossed  # to run again
        again = other.jobs.run_one(kinds=["learn"])
        assert again is not None and again.status == "done", again
        learned = [s["statement"] for s in again.result["added"]]
        assert learned and not [s for s in learned if "marmaladeorchid" in s.lower()], learned
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]


def test_writing_back_a_copy_held_from_before_a_forget_writes_nothing(project: Path, store_url: str) -> None:
    """A caller (or another process) holds a record read before the forget and writes it back to Markdown
    after: the section would put the words back in a file, and the sync would index them as a note."""
    with _open(store_url) as mem:
        held = mem.remember(SECRET, user="alice")
        kept = mem.remember(OTHER)
        receipt = mem.forget_everywhere(user="alice")
        refused: NotFound | None = None
        try:
            mem.write_back(held)
        except NotFound as exc:
            refused = exc
        assert _scan(_files(Path(mem.memory_folders.folder().path))) == []
        assert not [m for m in mem.store.iter_records(None) if "quokkabrandt" in m.content.lower()]
        assert refused is not None and "deleted or forgotten" in refused.message
        assert mem.verify_forgotten(receipt["id"])["ok"]
        assert mem.write_back(kept).read_text(encoding="utf-8").count(kept.content) == 1  # a standing one is


def test_a_job_running_across_a_forget_logs_no_read_of_a_forgotten_record(project: Path, store_url: str) -> None:
    """A learn job finds a statement already known and logs the read (``restated``, the statement as its query).
    A forget of both meanwhile rolls the job back, but PostgreSQL holds access rows outside the transaction:
    stamped with the job's start, they bring back neither the gone record's row nor the words."""
    beside = _Beside()
    with _open(store_url) as mem, funes.open(store_url, embedder=beside, worker="off") as other:
        known = mem.remember("I prefer marmaladeorchid seats on long flights", user="alice", type="preference")
        _learning(mem, other)
        receipts: list[dict[str, Any]] = []
        # The first statement is found known (a read of `known`); the forget runs while the second is embedded.
        forget = lambda: receipts.append(mem.forget_everywhere(matching="marmaladeorchid", confirm=True))  # noqa: E731
        beside.during = lambda: setattr(beside, "during", forget)  # the first batch passes, the second forgets
        other.jobs.run_one(kinds=["learn"])
        other.core.sync_access()  # the rows `other` held go now
        assert receipts and known.id in {r["id"] for r in receipts[0]["records"]}
        rows = mem.store.db.reader().execute("SELECT memory_id, query FROM access_log").fetchall()
        assert known.id not in {r[0] for r in rows}, rows
        assert not [r for r in rows if r[1] and "marmaladeorchid" in r[1].lower()], rows
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]


def test_learning_from_a_chat_while_it_is_forgotten_writes_nothing(project: Path, store_url: str) -> None:
    """`learn(session)` called directly (a request in another process) reads the chat, then writes: a forget
    between the two is refused with what to do, not turned into a fact of the forgotten message."""
    beside = _Beside()
    with _open(store_url) as mem, funes.open(store_url, embedder=beside, worker="off") as other:
        tenant = _learning(mem, other)
        receipts: list[dict[str, Any]] = []
        beside.during = lambda: receipts.append(mem.forget_everywhere(matching="marmaladeorchid", confirm=True))
        refused: Conflict | None = None
        try:
            other.learn("s1", user="alice")
        except Conflict as exc:
            refused = exc
        records = [m.content.lower() for m in mem.store.iter_records(tenant)]
        assert receipts and not [c for c in records if "marmaladeorchid" in c], records
        assert _cached(mem, "I prefer marmaladeorchid seats on long flights.") == set()
        assert refused is not None and "run it again" in (refused.hint or "").lower(), refused
        learned = [s["statement"] for s in other.learn("s1", user="alice")["added"]]  # again: from what remains
        assert learned == ["I prefer window tables at the ramen bar."], learned
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]


def test_an_insight_of_a_chat_forgotten_meanwhile_is_not_written(project: Path, store_url: str) -> None:
    """`process_chat` (another process) reads the chat, then writes its insight: a forget of the chat's question
    between the two is refused, not turned into an insight of the forgotten words."""
    beside = _Beside()
    with _open(store_url) as mem, funes.open(store_url, embedder=beside, worker="off") as other:
        question = "How should we size the PostgreSQL quokkabrandt pool for the API servers under peak load?"
        answer = (
            "Size the pool from the database side: PostgreSQL handles about two connections per core "
            "well, so with 8 cores keep the pool near 16 and let PgBouncer multiplex the API servers onto it."
        )
        mem.session("pool")
        mem.add_messages("pool", [{"role": "user", "content": question}, {"role": "assistant", "content": answer}])
        receipts: list[dict[str, Any]] = []
        beside.during = lambda: receipts.append(mem.forget_everywhere(matching="quokkabrandt", confirm=True))
        with contextlib.suppress(Conflict):
            other.process_chat("pool")
        records = [m.content.lower() for m in mem.store.iter_records(mem.core.tenant_of(None))]
        assert receipts and not [c for c in records if "quokkabrandt" in c], records
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]


def test_a_learn_that_reads_while_the_forget_plans_waits_and_writes_nothing(
    project: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process learns from the chat while the forget is still planning: it reads the chat as it still is,
    and its write waits for the forget (store.forgets_held), then finds the receipt and writes nothing (Conflict:
    run it again), so the fact of the forgotten message never lands; run again, it learns what remains."""
    with _open(store_url) as mem, _open(store_url) as other:
        _learning(mem, other)
        # The learn reads the chat as it still is while the forget plans, then waits to write.
        with _meanwhile(
            monkeypatch, mem.forgetting, "_mirrors", lambda: other.learn("s1", user="alice"), Conflict
        ) as outcome:
            receipt = mem.forget_everywhere(matching="marmaladeorchid", confirm=True)
        assert len(outcome) == 1 and isinstance(outcome[0], Conflict), outcome
        records = [m.content.lower() for m in mem.store.iter_records(mem.core.tenant_of(None))]
        assert not [c for c in records if "marmaladeorchid" in c], records
        assert mem.verify_forgotten(receipt["id"])["ok"]
        again = other.learn("s1", user="alice")
        assert [a["statement"] for a in again["added"]] == ["I prefer window tables at the ramen bar."], again


def test_a_held_back_search_of_forgotten_words_leaves_no_cached_query_vector(project: Path, tmp_path: Path) -> None:
    """SQLite caches a search's query vector in the store when it embeds it; the forget finds queries through
    the access log. Rows held back by a locked store reach it only after the forget: the query's cache row
    must go when they do (PostgreSQL keeps query vectors in the process)."""
    with _open(str(tmp_path / "q.db")) as mem:
        secret, kept = mem.remember(SECRET, user="alice"), mem.remember(OTHER)
        query = "quokkabrandt zephyrwhistle42 passcode"
        mem.embed_query(query)  # the search's embedding, cached in the store
        read_at = utcnow()
        receipt = mem.forget_everywhere(user="alice")
        tenant = mem.core.tenant_of(None)
        mem.store.record_access([AccessEvent(secret.id, tenant, "search", query=query)], read_at)  # held back
        assert _cached(mem, query) == set()
        mem.embed_query("ramen lunch")
        mem.store.record_access([AccessEvent(kept.id, tenant, "search", query="ramen lunch")], utcnow())
        assert _cached(mem, "ramen lunch") == {"ramen lunch"}  # a read after the forget keeps its cache row
        assert mem.verify_forgotten(receipt["id"])["ok"]


def test_a_mirror_file_written_from_a_copy_held_across_a_forget_does_not_come_back(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A memory-store write mirrors its memory to a file after its transaction (``mirror_all`` a page at a time):
    one that read the memory before the forget and writes the file after the shredding must not put it back."""
    with _open(str(tmp_path / "s.db")) as mem:
        ms, store, made, mirror = _mirrored(mem, tmp_path / "notes", "vault.md")
        held = mem.store.get(made["id"])
        assert held is not None and mirror.is_file()
        purge = mem.store.purge

        def written_meanwhile(*args: Any, **kwargs: Any) -> dict[str, int]:
            ms._mirror(held, held.content)  # another process's write lands between the shredding and the purge
            assert mirror.is_file()
            return purge(*args, **kwargs)

        monkeypatch.setattr(mem.store, "purge", written_meanwhile)
        receipt = mem.forget_everywhere([made["id"]])
        monkeypatch.undo()
        assert not mirror.exists()
        ms._mirror(held, held.content)  # and one that lands after the purge
        assert not mirror.exists() and mem.verify_forgotten(receipt["id"])["ok"]
        kept = ms.create_memory(store, "/team/kept.md", "Lunch is on Fridays.\n")
        assert (mirror.parent / "kept.md").read_text(encoding="utf-8") == "Lunch is on Fridays.\n"
        assert kept["id"]
    assert _scan(_files(tmp_path / "s.db", tmp_path / "notes")) == []


def test_a_forget_committing_between_a_jobs_check_and_its_commit_waits_for_it(
    project: Path, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forget that planned while a learn job's completion was writing (its COMMIT not yet made) missed the job's
    fact of the forgotten message, and the job, checked before the forget committed, kept it.
    The job holds the tenant's forget lock (shared on PostgreSQL; SQLite's write lock) from its transaction's
    start, and the forget holds it alone around its plan and purge: it plans after the job's commit."""
    import threading

    with _open(store_url) as mem, _open(store_url) as other:
        tenant = _learning(mem, other)
        finish = other.store.finish_job
        receipts: list[dict[str, Any]] = []
        forget = threading.Thread(
            target=lambda: receipts.append(mem.forget_everywhere(matching="marmaladeorchid", confirm=True))
        )

        def checked_then_finished(*args: Any, **kwargs: Any) -> bool:
            forget.start()  # inside the job's write, before its check and its commit
            forget.join(timeout=3)  # it waits for the lock the job holds (before, it committed meanwhile)
            return finish(*args, **kwargs)

        monkeypatch.setattr(other.store, "finish_job", checked_then_finished)
        job = other.jobs.run_one(kinds=["learn"])
        forget.join()
        assert job is not None and job.status == "done" and receipts, job
        records = [m.content.lower() for m in mem.store.iter_records(tenant)]
        assert not [c for c in records if "marmaladeorchid" in c], records
        assert mem.verify_forgotten(receipts[0]["id"])["ok"]


@pytest.mark.postgres
def test_a_forget_on_a_pool_of_one_connection_does_not_wait_on_itself(project: Path, pg_url: str) -> None:
    """The forget's lock lives on a connection of its own: with ``pg_pool_max = 1`` the plan's reads and the
    purge still find the pool's one connection free."""
    with _open(pg_url, pg_pool_max=1, pg_pool_min=1) as mem:
        mem.remember(SECRET, user="alice")
        kept = mem.remember(OTHER)
        receipt = mem.forget_everywhere(user="alice")
        assert [m.id for m in mem.list().items] == [kept.id]
        assert mem.verify_forgotten(receipt["id"])["ok"]
