"""A representative workload over the public API, for the tests that read every statement the PostgreSQL store sends."""

from __future__ import annotations

from pathlib import Path

import funes
from funes.store.tenancy import acting_for


def workload(mem: funes.Funes, tmp: str) -> None:
    """Writes, search on both KNN plans, sessions and context, documents, memory stores, jobs, forgetting, upkeep."""
    for tenant in ("acme", "globex"):
        with acting_for(tenant):
            mem.remember_many([f"{tenant} note {n}: the budget review is on Friday" for n in range(12)], tenant=tenant)
            one = mem.remember("Deploys go out on Tuesdays; the budget is in the blue folder", tenant=tenant)
            mem.update(one.id, content="Deploys go out on Wednesdays", tenant=tenant)
            mem.pin(one.id, tenant=tenant)
            mem.get(one.id, tenant=tenant)
            mem.list(tenant=tenant, limit=5)
            for exact_max in (4000, 0):  # the exact plan, then the HNSW one
                mem.core.store.exact_max = exact_max
                mem.search("budget review Friday", tenant=tenant)
                mem.search("予算 budget", tenant=tenant)
            session = mem.session(f"{tenant}-chat", tenant=tenant)
            mem.add_messages(
                session,
                [{"role": "user", "content": "I prefer aisle seats"}, {"role": "assistant", "content": "Noted."}],
            )
            mem.history(session)
            mem.build_context(session, "which seat do I like?")
            doc = Path(tmp) / f"{tenant}-handbook.md"
            doc.write_text("# Handbook\n\nExpenses are filed by the 5th of each month.\n", encoding="utf-8")
            mem.ingest(str(doc), tenant=tenant)
            stores = mem.memory_stores
            store = stores.create_store("Notes", tenant=tenant)["id"]
            made = stores.create_memory(store, "/team/standup.md", "Standup is at 9:30.\n", tenant=tenant)
            stores.list_memories(store, tenant=tenant)
            stores.list_versions(store, tenant=tenant)
            mem.versions(one.id, tenant=tenant)
            mem.stats(tenant=tenant)
            mem.forget(made["id"] if "id" in made else one.id, tenant=tenant)
            mem.forget_many([one.id], tenant=tenant)
            mem.core.store.flush_accesses()
            lines = list(mem.transfer.export_lines(tenant=tenant))
            mem.import_(lines, tenant=tenant)  # export and import back, memory stores included
    mem.run_jobs()
    mem.maintain()
    mem.doctor()
