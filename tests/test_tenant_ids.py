"""Record ids and tenants (issue 29): one tenant can never overwrite, move, read or shadow another's record
by naming its id, on either backend, whether the process acts for no tenant (the library, the CLI) or for one
(the server, where PostgreSQL's row-level security hides the other tenant's rows from the writer)."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

import funes
from funes.errors import InvalidInput, NotFound
from funes.providers.embed import HashEmbedder
from funes.store.tenancy import acting_for


@pytest.fixture
def mem(store_url: str) -> Iterator[funes.Funes]:
    service = funes.open(store_url, embedder=HashEmbedder(64), worker="off")
    yield service
    service.close()


@pytest.mark.parametrize("acting", [None, "globex"], ids=["no tenant set", "acting for globex"])
def test_a_record_id_is_one_tenants_and_another_cannot_write_read_or_move_it(
    mem: funes.Funes, acting: str | None
) -> None:
    ours = mem.remember("acme ships the zeppelin in May", tenant="acme")
    vector = mem.store.vectors_for([ours.id])[ours.id]
    theirs = ours.evolve(tenant="globex", content="globex overwrote this")
    export = io.StringIO()
    mem.export(export, tenant="acme")
    with acting_for(acting):
        for write in (
            lambda: mem.store.put(theirs, None),
            lambda: mem.store.put(theirs, vector),
            lambda: mem.store.put_many([(theirs, vector)]),
            lambda: mem.import_(io.StringIO(export.getvalue()), tenant="globex"),
        ):
            with pytest.raises(InvalidInput, match="another tenant"):
                write()
        # Reads, changes and deletions by globex see no record of that id.
        for call in (
            lambda: mem.get(ours.id, tenant="globex"),
            lambda: mem.update(ours.id, content="globex edit", tenant="globex"),
            lambda: mem.forget(ours.id, tenant="globex"),
            lambda: mem.versions(ours.id, tenant="globex"),
            lambda: mem.forget_everywhere([ours.id], tenant="globex"),
        ):
            with pytest.raises(NotFound):
                call()
    # acme's record is as it was, still acme's, with its one vector, and acme's own calls work on it.
    with acting_for(None):
        assert mem.store.get(ours.id) == ours
        assert len(mem.store.vectors_for([ours.id])[ours.id]) == 1
    assert mem.get(ours.id, tenant="acme").content == ours.content
    assert [h.memory.id for h in mem.search("zeppelin", tenant="acme")] == [ours.id]
    assert not mem.search("zeppelin", tenant="globex")
    changed = mem.update(ours.id, content="acme ships the zeppelin in June", tenant="acme")
    assert len(mem.versions(changed.id, tenant="acme")) == 2
    mem.forget(ours.id, tenant="acme")
    with pytest.raises(NotFound):
        mem.get(ours.id, tenant="acme")
