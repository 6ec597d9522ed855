"""Behaviour of the Funes service through its public methods (hash embedder: fast, deterministic)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

import funes
from funes.models import DEFAULT_IMPORTANCE, utcnow
from funes.providers.embed import HashEmbedder


@pytest.fixture
def mem(backend_mem: funes.Funes) -> funes.Funes:
    """The service on each backend (SQLite and PostgreSQL): these behaviours are the store contract's too."""
    return backend_mem


class CountingEmbedder(HashEmbedder):
    """The hash embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__(64)
        self.texts: list[str] = []

    def embed_batch(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        """Record the texts, then embed them."""
        self.texts.extend(texts)
        return super().embed_batch(texts, query=query)


def test_remember_returns_a_complete_record(mem: funes.Funes) -> None:
    memory = mem.remember("  The office closes at 6pm  ", type="fact", topic="office", references=[("site", "HQ")])
    assert memory.content == "The office closes at 6pm"
    assert memory.content_hash.startswith("sha256:")
    assert memory.version == 1 and memory.scope == "team" and memory.tenant == "default"
    assert memory.references[0].type == "site" and memory.references[0].id == "HQ"
    assert mem.get(memory.id) == memory


@pytest.mark.parametrize(("type_", "importance"), sorted(DEFAULT_IMPORTANCE.items()))
def test_importance_defaults_by_type(mem: funes.Funes, type_: str, importance: float) -> None:
    assert mem.remember(f"a {type_} to remember", type=type_).importance == importance


def test_same_content_in_same_scope_is_not_duplicated(mem: funes.Funes) -> None:
    first = mem.remember("Use metric units", project="acme")
    again = mem.remember("Use metric units", project="acme")
    assert again.id == first.id
    assert len(mem.list(project="acme").items) == 1


def test_same_content_in_other_scopes_and_tenants_is_separate(mem: funes.Funes) -> None:
    ids = {
        mem.remember("Use metric units").id,
        mem.remember("Use metric units", project="acme").id,
        mem.remember("Use metric units", project="globex").id,
        mem.remember("Use metric units", session="s1", scope="session").id,
        mem.remember("Use metric units", tenant="other").id,
    }
    assert len(ids) == 5


def test_same_content_of_two_users_is_not_shared(mem: funes.Funes) -> None:
    ana = mem.remember("My doctor is Dr. Who", user="ana")
    bob = mem.remember("My doctor is Dr. Who", user="bob")
    assert bob.id != ana.id and bob.user_id == "bob"
    assert mem.get(bob.id, user="bob").user_id == "bob"
    assert mem.remember("My doctor is Dr. Who", user="bob").id == bob.id


def test_update_keeps_five_previous_versions_fifo_and_reembeds(mem: funes.Funes) -> None:
    memory = mem.remember("version zero of the plan")
    for n in range(1, 8):
        memory = mem.update(memory.id, content=f"version {n} of the plan")
    assert memory.version == 8
    assert [v.content for v in memory.previous_versions] == [f"version {n} of the plan" for n in range(2, 7)]
    assert [v.version for v in memory.previous_versions] == [3, 4, 5, 6, 7]
    assert memory.previous_versions[-1].content == "version 6 of the plan"
    stored = mem.store.vectors_for([memory.id])[memory.id][0]
    assert np.allclose(stored, mem.embed(["version 7 of the plan"])[0], atol=1e-6)
    assert mem.doctor() == []


def test_update_of_other_fields_keeps_version_and_vectors(mem: funes.Funes) -> None:
    memory = mem.remember("Deploy on Fridays", type="decision")
    before = mem.store.vectors_for([memory.id])[memory.id]
    updated = mem.update(memory.id, importance=0.2, type="fact", metadata={"k": "v"})
    assert (updated.version, updated.importance, updated.memory_type) == (1, 0.2, "fact")
    assert updated.metadata == {"k": "v"}
    assert np.array_equal(mem.store.vectors_for([memory.id])[memory.id][0], before[0])
    assert [h.memory.id for h in mem.search("deploy fridays", types=["fact"])] == [memory.id]
    assert mem.search("deploy fridays", types=["decision"]) == []


def test_forget_removes_the_record_from_every_index(mem: funes.Funes) -> None:
    memory = mem.remember("forget me soon")
    assert mem.forget(memory.id).id == memory.id
    with pytest.raises(funes.NotFound):
        mem.get(memory.id)
    assert mem.search("forget me soon") == []
    assert mem.doctor() == []


def test_pin_and_unpin(mem: funes.Funes) -> None:
    memory = mem.remember("always keep this")
    assert mem.pin(memory.id).pinned is True
    assert [m.id for m in mem.list(pinned=True).items] == [memory.id]
    assert mem.unpin(memory.id).pinned is False
    assert mem.list(pinned=True).items == ()


def test_list_filters_and_cursor_pagination(mem: funes.Funes) -> None:
    prefs = [mem.remember(f"preference {n}", type="preference") for n in range(7)]
    mem.remember("a fact", type="fact")
    mem.remember("a project decision", type="decision", project="acme")
    seen = []
    cursor = None
    while True:
        page = mem.list(types=["preference"], limit=3, cursor=cursor)
        seen += [m.id for m in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(m.id for m in prefs) and len(seen) == 7
    assert [m.content for m in mem.list(scopes=["project"]).items] == ["a project decision"]
    with pytest.raises(funes.InvalidInput):
        mem.list(limit=0)


def test_another_tenant_sees_nothing(mem: funes.Funes) -> None:
    memory = mem.remember("secret roadmap for acme", tenant="acme")
    assert mem.search("secret roadmap") == []
    assert [h.memory.id for h in mem.search("secret roadmap", tenant="acme")] == [memory.id]
    with pytest.raises(funes.NotFound):
        mem.get(memory.id)
    assert mem.list().items == ()


def test_search_filters_types_kinds_scopes_and_time(mem: funes.Funes) -> None:
    fact = mem.remember("kiwi harvest starts in May", type="fact")
    pref = mem.remember("kiwi smoothies are the favourite", type="preference")
    msg = mem.remember("kiwi was mentioned in chat", kind="message", type="conversation")
    proj = mem.remember("kiwi supplier for the acme project", project="acme")

    def ids(**kw: object) -> set[str]:
        return {h.memory.id for h in mem.search("kiwi", **kw)}  # type: ignore[arg-type]

    assert ids() == {fact.id, pref.id, msg.id, proj.id}
    assert ids(types=["preference"]) == {pref.id}
    assert ids(kinds=["message"]) == {msg.id}
    assert ids(scopes=["project"]) == {proj.id}
    assert ids(since=utcnow() + timedelta(minutes=1)) == set()
    assert ids(until=utcnow() - timedelta(days=1)) == set()
    assert ids(since=(utcnow() - timedelta(days=1)).isoformat()) == {fact.id, pref.id, msg.id, proj.id}
    with pytest.raises(funes.InvalidInput):
        mem.search("kiwi", since="yesterday-ish")
    with pytest.raises(funes.InvalidInput):
        mem.search("kiwi", types=["opinion"])


def test_min_similarity_keeps_strong_keyword_matches(mem: funes.Funes) -> None:
    target = mem.remember("zyxwv " + " ".join(f"filler{n}" for n in range(60)))
    weak = mem.remember("gardening notes: tomatoes need sun")
    hits = mem.search("zyxwv", min_similarity=0.99)
    assert [h.memory.id for h in hits] == [target.id]
    assert hits[0].similarity < 0.99 and hits[0].explanation.keyword_rank == 1
    # A vector-only neighbour under the threshold is dropped.
    assert weak.id in {h.memory.id for h in mem.search("sun tomatoes gardening weeds")}
    assert weak.id not in {h.memory.id for h in mem.search("weeds", min_similarity=0.99)}
    assert mem.search("nothing matches this phrase", min_similarity=0.99) == []


def test_scope_boosts_appear_in_the_explanation(mem: funes.Funes) -> None:
    project = mem.remember("invoice numbering rules", project="acme")
    team = mem.remember("invoice numbering rules for everyone")
    session = mem.remember("invoice numbering rules today", session="s1")
    hits = {h.memory.id: h for h in mem.search("invoice numbering", project="acme")}
    assert hits[project.id].explanation.boosts["project"] == 1.5
    assert hits[team.id].explanation.boosts["team"] == 1.3
    assert "project" not in hits[session.id].explanation.boosts and "team" not in hits[session.id].explanation.boosts
    ex = hits[project.id].explanation
    product = ex.fused
    for factor in ex.boosts.values():
        product *= factor
    assert ex.score == pytest.approx(product) and hits[project.id].score == ex.score
    assert hits[project.id].attribution == "user-stated"


def test_search_tracks_access_and_flushes_on_close(tmp_path: Path) -> None:
    path = str(tmp_path / "access.db")
    service = funes.open(path, embedder=HashEmbedder(64))
    memory = service.remember("the wifi password is on the fridge")
    for _ in range(3):
        assert service.search("wifi password", session="s9")[0].memory.id == memory.id
    service.search("wifi password", track=False)
    service.close()
    reopened = funes.open(path, embedder=HashEmbedder(64))
    try:
        current = reopened.get(memory.id)
        assert current.access_count == 3 and current.last_accessed is not None
        log = reopened.store.access_log(memory.id)  # type: ignore[attr-defined]
        assert len(log) == 3
        assert {(r["query"], r["session_id"], r["action"]) for r in log} == {("wifi password", "s9", "search")}
        assert all(r["score"] > 0 for r in log)
    finally:
        reopened.close()


def test_expired_memories_are_never_returned(mem: funes.Funes) -> None:
    mem.remember("the sale ended", expires_at=utcnow() - timedelta(seconds=1))
    live = mem.remember("the sale continues", expires_at="2999-01-01")
    assert [h.memory.id for h in mem.search("sale")] == [live.id]
    assert [m.id for m in mem.list().items] == [live.id]
    assert len(mem.list(include_expired=True).items) == 2


def test_remembering_expired_content_again_revives_it(mem: funes.Funes) -> None:
    old = mem.remember("flash sale", expires_at=utcnow() - timedelta(seconds=1))
    again = mem.remember("flash sale")
    assert again.id == old.id and again.expires_at is None
    assert [h.memory.id for h in mem.search("flash sale")] == [old.id]


def test_overlong_content_is_split_and_every_part_is_searchable(tmp_path: Path) -> None:
    service = funes.open(str(tmp_path / "long.db"), embedder=HashEmbedder(64, max_tokens=50))
    try:
        vocabularies = ["alpha bravo charlie delta", "golf hotel india juliet", "mike november oscar papa"]
        paragraphs = [" ".join(f"{words}." for _ in range(12)) for words in vocabularies]
        memory = service.remember("\n\n".join(paragraphs))
        service.remember("an unrelated note about lunch")
        vectors = service.store.vectors_for([memory.id])[memory.id]
        assert len(vectors) >= 3
        assert service.stats()["vectors"] == len(vectors) + 1
        for words in vocabularies:
            hit = service.search(words)[0]
            assert hit.memory.id == memory.id and hit.explanation.vector_rank == 1
            assert hit.similarity > 0.8
        assert service.doctor() == []
    finally:
        service.close()


def test_embedding_cache_avoids_embedding_the_same_text_twice(tmp_path: Path) -> None:
    embedder = CountingEmbedder()
    service = funes.open(str(tmp_path / "cache.db"), embedder=embedder)
    try:
        service.remember("cache me if you can", project="a")
        service.remember("cache me if you can", project="b")
        assert embedder.texts == ["cache me if you can"]
        service.search("cache me if you can")
        assert embedder.texts == ["cache me if you can"]
        first = service.embed(["fresh text", "fresh text"])
        assert embedder.texts.count("fresh text") == 1 and np.array_equal(first[0], first[1])
    finally:
        service.close()


def test_reindex_with_another_embedder(tmp_path: Path) -> None:
    path = str(tmp_path / "re.db")
    with funes.open(path, embedder=HashEmbedder(64)) as service:
        memory = service.remember("reindex this text")
    with pytest.raises(funes.EmbedderMismatch) as info:
        funes.open(path, embedder=HashEmbedder(32))
    assert "funes reindex" in (info.value.hint or "")
    with funes.open(path, embedder=HashEmbedder(32), check_embedder=False) as service:
        assert service.doctor() != []
        assert service.reindex() == 1
        assert service.doctor() == []
    with funes.open(path, embedder=HashEmbedder(32)) as service:
        assert service.search("reindex")[0].memory.id == memory.id


def test_stats_counts(mem: funes.Funes) -> None:
    mem.remember("one", type="preference")
    mem.remember("two", project="acme")
    stats = mem.stats()
    assert stats["records"] == 2 and stats["by_scope"] == {"project": 1, "team": 1}
    assert stats["embedder"] == stats["embedder_configured"] == {"model_id": "funes-hash-64", "dimensions": 64}


def test_open_accepts_an_embedder_name(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "named.db"), embedder="hash") as service:
        assert service.embedder.model_id == "funes-hash-64"


@pytest.mark.slow
def test_real_model_threshold_keeps_meaning_and_strong_keywords(real_mem: funes.Funes) -> None:
    pref = real_mem.remember("I prefer US-based vendors with at least 90% energy efficiency", type="preference")
    other = real_mem.remember("The quarterly budget review happens every March", type="fact")
    hits = real_mem.search("which suppliers does the user like?", min_similarity=0.3)
    assert [h.memory.id for h in hits] == [pref.id]
    assert hits[0].similarity >= 0.3
    strong = real_mem.search("efficiency", min_similarity=0.95)
    assert [h.memory.id for h in strong] == [pref.id] and strong[0].similarity < 0.95
    assert other.id not in {h.memory.id for h in real_mem.search("supplier preferences", min_similarity=0.3)}
