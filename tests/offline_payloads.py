"""Fifty payloads for the offline provider's titles and topics, chat pairs for its merge rate, and documents.

Written for the offline-summaries checks (issue 26): code cells, tables, files,
chats, notes and other entities as the seeds send them. The chat pairs are one
subject said twice in other words (they should merge) and two subjects that
share words (they should not). The documents and notes (files) are what
ingest and folder sync label with a topic, with pairs of documents on one
subject for their labels' agreement.
"""

from __future__ import annotations

import json
from typing import Any


def _entity(kind: str, ident: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "id": ident, "fields": {"id": ident, "type": kind, **fields}})


def _chat(*turns: str) -> str:
    return "\n".join(f"{'user' if i % 2 == 0 else 'assistant'}: {t}" for i, t in enumerate(turns))


CODE = [
    _entity(
        "CODE_CELL",
        "Sales:A1",
        code="# revenue per region\nimport pandas as pd\ndf.groupby('region').sum()",
        language="python",
    ),
    _entity("CODE_CELL", "Sales:B4", code="def churn_rate(active, lost):\n    return lost / active", language="python"),
    _entity("CODE_CELL", "Ops:C2", code="SELECT vendor, SUM(amount) FROM invoices GROUP BY vendor", language="sql"),
    _entity(
        "CODE_CELL", "Ops:D9", code="-- overdue invoices\nSELECT * FROM invoices WHERE due < NOW()", language="sql"
    ),
    _entity("CODE_CELL", "HR:A3", code="class Payroll:\n    def run(self): ...", language="python"),
    _entity(
        "CODE_CELL",
        "HR:B1",
        code="// headcount by team\nconst byTeam = groupBy(staff, s => s.team)",
        language="javascript",
    ),
    _entity("CODE_CELL", "Fin:E5", code="import numpy as np\nnp.percentile(latency, 95)", language="python"),
    _entity("CODE_CELL", "Fin:F1", code="x = 1"),
    _entity("CODE_CELL", "Mkt:A7", content="Total revenue per region for Q3, summed from the orders table"),
    _entity(
        "CODE_CELL",
        "Mkt:B2",
        code="plot(signups, title='Weekly signups')",
        language="python",
        output_shape={"rows": 52, "cols": 2},
    ),
    _entity(
        "CODE_CELL", "Eng:C3", code="# retry with backoff\nfor attempt in range(5):\n    call()", language="python"
    ),
    _entity("CODE_CELL", "Eng:D4", code="", language="python"),
]
TABLES = [
    _entity("DATA_TABLE", "Table1", name="Ramen visits", columns=["date", "bar", "rating"], rows=12),
    _entity("DATA_TABLE", "Table2", columns=["vendor", "status", "audit_date"], rows=40),
    _entity(
        "SHEET_TABLE", "Budget!A1:F30", name="Budget 2026", columns=["line", "q1", "q2", "q3", "q4", "total"], rows=29
    ),
    _entity("SHEET_TABLE", "Staff!A1:C9", columns=["name", "team", "start"], rows=8),
    _entity(
        "DATA_TABLE",
        "Orders",
        columns=["order_id", "customer", "amount", "currency", "placed_at", "shipped_at"],
        rows=1200,
    ),
    _entity("DATA_TABLE", "T9", columns=[], rows=0),
    "date,bar,rating\n2026-01-03,Ichiran,4\n2026-01-10,Afuri,5\n2026-01-17,Ippudo,4",
    "name,team,start\nAna,Data,2024\nBo,Infra,2025",
    _entity("SHEET_TABLE", "KPIs!B2:D14", name="Quarterly KPIs", columns=["metric", "target", "actual"], rows=12),
    _entity("DATA_TABLE", "Leads", columns=["lead", "source", "stage", "owner"], rows=310),
]
FILES = [
    _entity("FILE", "budget.xlsx", name="budget.xlsx", sheet_names=["Budget", "KPIs"], data_table_count=2),
    _entity("FILE", "ops.xlsx", sheet_names=["Vendors", "Invoices"], code_cell_count=3),
    _entity("FILE", "notes.md"),
    _entity(
        "CONNECTION",
        "warehouse",
        url="postgresql://warehouse.internal/analytics",
        description="The analytics warehouse",
    ),
]
CHATS = [
    _chat("Hi, how are you?", "Fine, thanks. What can I do for you?"),
    _chat("Which vendors are on probation after the audit?", "Acme and Globex, since the March audit."),
    _chat("Book a table for four on Friday, somewhere quiet.", "Done: Casa Lupo, 8pm, a quiet corner."),
    _chat("What's our on-call rotation?", "It rotates every Monday; Ana is on this week."),
    _chat("Summarise the Q3 revenue numbers.", "Revenue grew 12% to 4.1M, driven by the EU region."),
    _chat("Can you remind me why we picked Postgres?", "For row-level security and pgvector in one database."),
    _chat("hello", "hi! what do you need?", "nothing, just testing"),
    _chat("Move the standup to 10am from now on.", "Updated: the standup is at 10am from tomorrow."),
    _chat("I prefer window seats on long flights.", "Noted: window seats for long-haul flights."),
    _chat("How do I rotate the API keys?", "Run `funes keys create`, switch clients over, then revoke the old key."),
    _chat("Where do the offsite photos live?", "In the team drive, folder Offsite 2026."),
    _chat("a,b", "c,d"),
]
NOTES = [
    "# Ramen bar visits\n\nWe went to Ichiran twice and Afuri once in January.",
    "## Deploy checklist\n- run the migrations\n- warm the cache\n- flip the flag",
    "The pager rotates every Monday at 9am.",
    "content: the vendor list is reviewed every quarter. id: v1. type: note",
    "Decision: we standardise on PostgreSQL 17 for the team server.",
    "Meeting notes 2026-03-02 — attendees: Ana, Bo. Agreed to freeze the schema until April.",
    "   \n\nOnly one line after blank lines about the quarterly planning offsite in Lisbon.",
    "A very long sentence " + "that keeps going and going " * 12 + "until it ends.",
    _entity("CHAT_INSIGHT", "topic:vendors", content="Vendors on probation are re-audited every quarter."),
    _entity("CONNECTION", "crm", description="Salesforce CRM sync, nightly at 2am"),
    _entity("DATA_TABLE", "Glossary", name="Glossary of terms"),
    "TODO: write the onboarding guide for new data engineers",
]
PAYLOADS = [*CODE, *TABLES, *FILES, *CHATS, *NOTES]

Turns = list[tuple[str, str]]


def _turns(*texts: str) -> Turns:
    return [("user" if i % 2 == 0 else "assistant", t) for i, t in enumerate(texts)]


SAME_SUBJECT: list[tuple[Turns, Turns]] = [
    (
        _turns(
            "Which vendors are on probation after the audit? I need the list for the board.",
            "Acme and Globex vendors are on probation since the March audit; both get re-audited in June. Until then their purchase orders need a second approval from finance.",
        ),
        _turns(
            "Is Globex still a probationary supplier after the audit findings?",
            "Yes: Globex stays on probation until the audit findings close, like Acme. Orders from either supplier still need the extra finance sign-off until the June re-audit.",
        ),
    ),
    (
        _turns(
            "Where should the team offsite happen this year? We are about 40 people.",
            "Lisbon works well for the offsite: venues near the river fit 40 people. The Tagus waterfront has three venues with rooms for workshops and a terrace for dinner.",
        ),
        _turns(
            "Can you find a venue for our company offsite in Lisbon for 40 people?",
            "For the offsite I shortlisted three Lisbon venues for 40 people by the river. Each has a workshop room and a terrace, and all are walking distance from the Cais do Sodré station.",
        ),
    ),
    (
        _turns(
            "How do we rotate the API keys without downtime? The old keys expire soon.",
            "Create new API keys, switch clients over, then revoke the old keys once traffic moved. Watch the key usage dashboard so no client still calls with an old key before you revoke it.",
        ),
        _turns(
            "What's the procedure to replace expiring API keys safely?",
            "Issue the new API keys first, move every client, and only then revoke the expiring keys. The usage log shows the last use of each key, so you can confirm nothing still depends on the old ones.",
        ),
    ),
    (
        _turns(
            "Why did we choose PostgreSQL for the team server instead of MySQL?",
            "PostgreSQL gives row-level security and pgvector in one database for the team server. MySQL would have needed a separate vector store and application-side tenant checks.",
        ),
        _turns(
            "Remind me of the reasons behind picking Postgres for the server.",
            "The team server uses Postgres for row-level security and the pgvector extension. That keeps tenants isolated inside the database and vectors next to the rows, with no second system.",
        ),
    ),
    (
        _turns(
            "What is the on-call rotation schedule for the infra team?",
            "The infra on-call rotation changes every Monday at 9am; Ana has this week. The handover happens in the infra channel with a short summary of open incidents.",
        ),
        _turns(
            "Who is on call for infra, and when does the rotation switch?",
            "The on-call rotation for infra switches on Mondays at 9am; next week is Bo. Whoever hands over posts the open incidents in the infra channel before the switch.",
        ),
    ),
    (
        _turns(
            "Summarise how Q3 revenue grew and which region drove it.",
            "Q3 revenue grew 12% to 4.1M, and the EU region drove most of the revenue growth. The US was flat, and APAC grew slightly on two new enterprise contracts.",
        ),
        _turns(
            "What drove the revenue increase in the third quarter?",
            "Third-quarter revenue rose 12%, mostly from EU region sales growth. US sales stayed flat while APAC added a little through new enterprise deals.",
        ),
    ),
    (
        _turns(
            "The offsite catering has to be vegetarian, and nut-free for Mira.",
            "Noted: offsite catering will be vegetarian and nut-free. I will send the caterer the allergy note for Mira and ask for labelled dishes at every meal.",
        ),
        _turns(
            "Please make sure the catering at the offsite has no nuts and no meat.",
            "Yes, the offsite catering is vegetarian with no nuts. The caterer has the allergy details and will label each dish so Mira can eat safely.",
        ),
    ),
    (
        _turns(
            "How should we back up the analytics warehouse every night?",
            "Back up the analytics warehouse nightly with pg_dump to the offsite bucket. Keep thirty daily copies and test a restore into a scratch database every month.",
        ),
        _turns(
            "What's the nightly backup plan for the warehouse database?",
            "A nightly pg_dump of the warehouse database goes to the offsite backup bucket. Thirty days of dumps are kept, and a monthly restore test proves the backups work.",
        ),
    ),
]
OTHER_SUBJECT: list[tuple[Turns, Turns]] = [
    (SAME_SUBJECT[0][0], SAME_SUBJECT[1][0]),
    (SAME_SUBJECT[1][0], SAME_SUBJECT[2][0]),
    (SAME_SUBJECT[2][0], SAME_SUBJECT[3][0]),
    (SAME_SUBJECT[3][0], SAME_SUBJECT[4][0]),
    (SAME_SUBJECT[4][0], SAME_SUBJECT[5][0]),
    (SAME_SUBJECT[5][0], SAME_SUBJECT[6][0]),
    (SAME_SUBJECT[6][0], SAME_SUBJECT[7][0]),
    (SAME_SUBJECT[7][0], SAME_SUBJECT[0][0]),
]

# Documents and notes as files (name, text): what `funes ingest` and folder sync label with a topic.
DOCUMENTS: list[tuple[str, str]] = [
    (
        "ramen.md",
        "# Ramen bar visits\n\nWe went to Ichiran twice and Afuri once; the ramen at Afuri was the best ramen.",
    ),
    ("deploy.md", "## Deploy checklist\n- run the migrations\n- warm the cache\n- flip the flag before the deploy"),
    (
        "2026-03-02.md",
        "---\ntitle: Schema freeze meeting\n---\nAttendees: Ana, Bo. Agreed to freeze the schema until April.",
    ),
    ("README.md", "# Funes\n\nLocal-first long-term memory for assistants. Funes keeps what an assistant learns."),
    ("notes.md", "The pager rotates every Monday at 9am. The pager goes to Ana this week."),
    ("vendors.csv", "vendor,status,audit_date\nAcme,probation,2026-03-01\nGlobex,probation,2026-03-02"),
    ("budget-2026.csv", "line,q1,q2,q3,q4,total\nTravel,10,12,9,14,45\nHardware,30,0,25,0,55"),
    ("report.txt", "Annual report 2025\n\nRevenue grew 14 percent to 8.2 million. Revenue from exports doubled."),
    ("vendor-review.md", "content: the vendor list is reviewed every quarter. id: v1. type: note"),
    (
        "journal.md",
        "# Ramen\n\nIchiran twice this month.\n\n# Taxes\n\nFile the tax return by April.\n\n# 2026-01-02\n\nQuiet day.",
    ),
    ("untitled.txt", "   \n\nOnly one line after blank lines about the quarterly planning offsite in Lisbon."),
    ("TODO.md", "- [ ] write the onboarding guide for new data engineers\n- [ ] pick an onboarding buddy for each"),
    ("api-keys.md", "# Rotating API keys\n\nCreate new API keys, switch the clients, then revoke the old API keys."),
    (
        "postgres.md",
        "Decision: we standardise on PostgreSQL 17 for the team server. Postgres gives us row-level security.",
    ),
    ("IMG_2041.txt", "Whiteboard: churn by cohort, churn by plan, churn after the price change."),
    ("on-call.md", "# On-call\n\n## Rotation\n\nWeekly, Mondays at 9am.\n\n## Escalation\n\nPage the infra lead."),
]
# Two documents on one subject in other words (they should share a topic), as files (name, text).
SAME_SUBJECT_DOCUMENTS: list[tuple[tuple[str, str], tuple[str, str]]] = [
    (
        ("ramen.md", "# Ramen bar visits\n\nIchiran twice, Afuri once: the ramen at Afuri was the best."),
        ("tokyo-food.md", "# Where we ate\n\nRamen at Ichiran on Friday, more ramen at Afuri on Sunday."),
    ),
    (
        ("api-keys.md", "# Rotating API keys\n\nCreate new API keys, switch clients, revoke the old API keys."),
        ("runbook.md", "# Replacing expiring API keys\n\nIssue new API keys first, then revoke the expiring keys."),
    ),
    (
        ("vendor-audit.md", "# Vendor audit\n\nAcme and Globex vendors are on probation after the audit."),
        ("vendors.csv", "vendor,status,audit_date\nAcme,probation,2026-03-01\nGlobex,probation,2026-03-02"),
    ),
    (
        ("offsite.md", "# Offsite planning\n\nLisbon, 40 people, venues by the river for the offsite."),
        ("lisbon.txt", "The company offsite is in Lisbon this year; the offsite venue has a terrace."),
    ),
    (
        ("backups.md", "# Warehouse backups\n\nA nightly pg_dump of the warehouse goes to the offsite bucket."),
        ("restore-test.md", "# Restore test\n\nEvery month we restore the warehouse backups into a scratch database."),
    ),
    (
        ("on-call.md", "# On-call rotation\n\nThe rotation switches every Monday at 9am."),
        ("pager.txt", "Who is on call this week? The on-call rotation hands the pager over on Mondays."),
    ),
    (
        ("q3-revenue.md", "# Q3 revenue\n\nRevenue grew 12% to 4.1M, driven by the EU region."),
        ("report.txt", "Third quarter results\n\nRevenue rose 12 percent; EU revenue drove the growth."),
    ),
    (
        ("catering.md", "# Offsite catering\n\nCatering is vegetarian and nut-free for Mira."),
        ("menu.txt", "Menu for the offsite: vegetarian catering, no nuts, every dish labelled."),
    ),
]

__all__ = ["DOCUMENTS", "OTHER_SUBJECT", "PAYLOADS", "SAME_SUBJECT", "SAME_SUBJECT_DOCUMENTS"]
