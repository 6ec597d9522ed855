"""The web UI in a real headless Chromium, against a live `funes serve` on 127.0.0.1 with a temp database.

The browser is Debian's /usr/bin/chromium driven by Playwright (browser
downloads are impossible here). Without it these tests skip and say how to
install it; `.ci/run` installs it and sets FUNES_REQUIRE_BROWSER, so in CI a
missing browser fails instead. Screenshots of the main screens land in the
test's tmp_path.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

# Read at import: the autouse fixture clears FUNES_* variables before each test.
CHROMIUM = os.environ.get("FUNES_TEST_CHROMIUM", "/usr/bin/chromium")
REQUIRE_BROWSER = bool(os.environ.get("FUNES_REQUIRE_BROWSER"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
]
TIMEOUT_MS = 90_000


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _cli(home: Path, *args: str) -> str:
    env = {**os.environ, "FUNES_HOME": str(home)}
    code = "from funes.interfaces.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


class Server:
    """A live `funes serve` subprocess and a tiny JSON client for setting up data."""

    def __init__(self, home: Path, db: Path, key: str | None) -> None:
        self.home = home
        self.db = db
        self.key = key
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = db.parent / "serve.log"
        self.log = self.log_path.open("wb")
        code = "from funes.interfaces.cli import main; main()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(self.port)],
            # No cooldown between generations of a file, so a regenerate runs at once.
            env={**os.environ, "FUNES_HOME": str(home), "FUNES_GENERATE_COOLDOWN_SECONDS": "0"},
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                if self.call("GET", "/v1/health")["status"] == "ok":
                    break
            except (OSError, urllib.error.URLError):
                pass
            assert self.proc.poll() is None, self.output()
            assert time.monotonic() < deadline, f"funes serve did not start:\n{self.output()}"
            time.sleep(0.2)

    def output(self) -> str:
        """What the server printed so far."""
        self.log.flush()
        return self.log_path.read_text(errors="replace")

    def call(self, method: str, path: str, body: Any = None, *, expect: int | None = None) -> Any:
        """One JSON request with the key; returns the parsed answer (None when empty)."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        if expect is not None:
            assert status == expect, f"{method} {path}: {status} {raw[:500]!r}"
        elif status >= 400:
            raise AssertionError(f"{method} {path}: {status} {raw[:500]!r}")
        return json.loads(raw) if raw else None

    def stop(self) -> None:
        """Terminate the server and close its log."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def server(tmp_path: Path, funes_home: Path) -> Iterator[Server]:
    """`funes serve` with a fresh database and one admin key for team `acme`."""
    db = tmp_path / "ui.db"
    out = _cli(
        funes_home, "--db", str(db), "keys", "create", "--team", "acme", "--role", "admin", "--name", "ui", "--json"
    )
    key = json.loads(out)["key"]
    srv = Server(funes_home, db, key)
    try:
        yield srv
    finally:
        srv.stop()


def _no_serious_axe_violations(page: Any, server: Server) -> None:
    """Run axe-core (the copy axe-playwright-python ships) on every view; fail on critical or serious findings."""
    from axe_playwright_python.sync_playwright import Axe

    axe = Axe()
    found = {}
    for view in ("map", "search", "documents", "sessions", "control"):
        page.goto(f"{server.base}/ui/#/{view}")
        page.locator("#nav").wait_for()
        page.wait_for_load_state("networkidle")
        violations = axe.run(page).response["violations"]
        bad = [v for v in violations if v["impact"] in ("critical", "serious")]
        if bad:
            found[view] = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3]) for v in bad]
    assert found == {}, found


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Any]:
    """A Chromium page at 1280x800 that fails the test on any uncaught script error."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        how = "install Debian's chromium (`apt-get install -y chromium`) to run the browser tests"
        if REQUIRE_BROWSER:  # .ci/run: a missing browser is an error, never a silent skip
            pytest.fail(f"{CHROMIUM} is missing and FUNES_REQUIRE_BROWSER is set: {how}")
        pytest.skip(f"{CHROMIUM} is missing: {how}")
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(TIMEOUT_MS)
        pg = context.new_page()
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        try:
            yield pg
        finally:
            browser.close()
    assert not errors, errors


def _sign_in(page: Any, server: Server) -> None:
    page.goto(f"{server.base}/ui/")
    page.locator("#login-key").fill(server.key or "")
    page.locator("#login-key").press("Enter")
    page.locator("#team-name").wait_for()
    assert page.locator("#team-name").inner_text() == "acme"


FILLER = (
    "The {n}th paragraph of the {part} notes covers routine matters: rota {n}, supplies, visitor badges and the "
    "printer on floor {n} that needs toner again. Nothing here changes the plan agreed last month."
)


def _make_pdf(path: Path) -> None:
    """Two full pages, so the fact on page 2 lands in chunks of that page alone."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    pdf.add_page()
    pdf.multi_cell(
        0, 6, "Quarterly operations review\n\n" + "\n".join(FILLER.format(n=n, part="office") for n in range(1, 13))
    )
    pdf.add_page()
    before = "\n".join(FILLER.format(n=n, part="plant") for n in range(1, 7))
    after = "\n".join(FILLER.format(n=n, part="plant") for n in range(7, 13))
    fact = "The Zorblat reactor in hall seven runs at exactly 451 kelvin during the night shift."
    pdf.multi_cell(0, 6, f"Cooling systems\n\n{before}\n{fact}\n{after}")
    pdf.output(str(path))


def _no_horizontal_overflow(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    assert width <= inner, f"page is {width}px wide in a {inner}px viewport"


def test_the_main_scenario_upload_search_edit_restore_pin_delete_clear(
    server: Server, page: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    team = "/v1/teams/acme"
    note = server.call(
        "POST",
        f"{team}/memories",
        {
            "content": "Deploys happen every Tuesday morning.",
            "title": "Deploy cadence",
            "topic": "ops",
            "scope": "team",
        },
        expect=201,
    )
    other = server.call(
        "POST",
        f"{team}/memories",
        {"content": "The old wiki lives at wiki.example.", "title": "Old wiki", "topic": "ops", "scope": "team"},
        expect=201,
    )
    for content in ("Hello, can you remember my seat is 14B?", "Sure, seat 14B noted."):
        role = "user" if content.startswith("Hello") else "assistant"
        server.call("POST", f"{team}/sessions/s-ui-1/messages", {"role": role, "content": content}, expect=201)

    _sign_in(page, server)

    # 1. Upload a generated PDF through the picker.
    pdf = tmp_path / "facts.pdf"
    _make_pdf(pdf)
    page.get_by_role("link", name="Documents").click()
    expect(page.locator("#docs-list")).to_contain_text("No documents yet")
    page.locator("#doc-file").set_input_files(str(pdf))
    # 2. It shows as indexed.
    row = page.locator("#docs-list tr", has_text="facts.pdf")
    expect(row.locator(".doc-status")).to_contain_text("indexed", timeout=TIMEOUT_MS)
    page.screenshot(path=str(tmp_path / "documents.png"), full_page=True)

    # 3. Search for a fact in it and open the hit.
    page.get_by_role("link", name="Search").click()
    page.locator("#search-q").press_sequentially("Zorblat reactor temperature", delay=20)
    hit = page.locator("#search-results .hit", has_text="451 kelvin").first
    expect(hit).to_be_visible()
    expect(hit.locator(".attribution")).to_contain_text("p.2")
    expect(hit.locator(".why")).to_contain_text("Why:")
    page.screenshot(path=str(tmp_path / "search.png"), full_page=True)
    hit.click()
    # 4. The page attribution is in the detail panel.
    expect(page.locator("#detail-attribution")).to_contain_text("facts.pdf p.2")

    # 5. Edit a memory and see the version history grow.
    page.get_by_role("link", name="Knowledge map").click()
    page.locator("#tab-team").click()
    page.locator(f'.node[data-id="{note["id"]}"]').click()
    expect(page.locator("#detail-title")).to_have_text("Deploy cadence")
    page.locator("#history > summary").click()
    expect(page.locator("#history-list")).to_contain_text("No earlier versions")
    page.locator("#edit-memory").click()
    page.locator("#edit-content").fill("Deploys happen every Thursday afternoon.")
    page.locator("#save-memory").click()
    expect(page.locator("#detail-content")).to_have_text("Deploys happen every Thursday afternoon.")
    page.locator("#history > summary").click()
    expect(page.locator("#history-list .version")).to_have_count(1)
    expect(page.locator("#history-list .version").first).to_contain_text("Deploys happen every Tuesday morning.")
    page.screenshot(path=str(tmp_path / "map.png"))

    # 6. Restore the old version.
    page.get_by_role("button", name="Restore version 1").click()
    expect(page.locator("#detail-content")).to_have_text("Deploys happen every Tuesday morning.")
    expect(page.locator("#history-list .version")).to_have_count(2)
    restored = server.call("GET", f"{team}/memories/{note['id']}")
    assert restored["content"] == "Deploys happen every Tuesday morning."
    assert restored["version"] == 3

    # 7. Pin it, then delete another memory.
    page.locator("#pin-memory").click()
    expect(page.locator("#pin-memory")).to_have_text("Unpin")
    expect(page.locator(f'.node[data-id="{note["id"]}"] .badge.pin')).to_be_visible()
    assert server.call("GET", f"{team}/memories/{note['id']}")["pinned"] is True
    page.locator(f'.node[data-id="{other["id"]}"]').click()
    expect(page.locator("#detail-title")).to_have_text("Old wiki")
    page.locator("#delete-memory").click()
    expect(page.locator("#confirm-dialog")).to_be_visible()
    page.locator("#confirm-ok").click()
    expect(page.locator(f'.node[data-id="{other["id"]}"]')).to_have_count(0)
    server.call("GET", f"{team}/memories/{other['id']}", expect=404)

    # 8. Clear session memory behind a typed confirmation.
    _no_serious_axe_violations(page, server)  # with documents, sessions and memories on every view
    page.get_by_role("link", name="Memory control").click()
    expect(page.locator("#stats .stat").first).to_be_visible()
    # Each figure once, in words: one database size, one tier table, no raw keys such as database_bytes.
    expect(page.locator("#stats .stat-label", has_text="Database size")).to_have_count(1)
    expect(page.locator("#stats caption", has_text="tier")).to_have_count(1)
    assert "_bytes" not in page.locator("#stats").inner_text()
    page.screenshot(path=str(tmp_path / "control.png"), full_page=True)
    page.locator("#clear-session-id").fill("s-ui-1")
    page.get_by_role("button", name="Clear session memory").click()
    expect(page.locator("#confirm-ok")).to_be_disabled()
    page.locator("#confirm-input").fill("s-ui-1")
    page.locator("#confirm-ok").click()
    expect(page.locator("#clear-session-result")).to_contain_text("Removed")
    left = server.call("GET", f"{team}/sessions")["items"]
    assert all(s["id"] != "s-ui-1" for s in left)
    assert server.call("GET", f"{team}/memories/{note['id']}")["pinned"] is True


def test_team_view_groups_by_topic_and_file_view_by_entity_type(server: Server, page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    team = "/v1/teams/acme"
    for content, topic in (
        ("Revenue grew 12% in Q3.", "finance"),
        ("The budget freeze ends in March.", "finance"),
        ("On-call rotates weekly.", "ops"),
        ("Lunch is at noon.", None),
        ("# Ramen bar visits\n\nWe went to Ichiran twice in January.", "food"),
    ):
        body = {"content": content, "scope": "team", **({"topic": topic} if topic else {})}
        server.call("POST", f"{team}/memories", body, expect=201)
    for entity_type, entity_id, content in (
        ("DATA_TABLE", "sales", "Table sales: region, month, amount."),
        ("CODE_CELL", "cell-1", "Python cell summing amount per region."),
        ("CODE_CELL", "cell-2", "Python cell plotting monthly totals."),
    ):
        body = {"content": content, "file_id": "report.grid", "entity_type": entity_type, "entity_id": entity_id}
        server.call("POST", f"{team}/memories", body, expect=201)

    # A wrong key is refused beside the sign-in form.
    page.goto(f"{server.base}/ui/")
    page.locator("#login-key").fill("fk_not_a_real_key")
    page.locator("#login-key").press("Enter")
    expect(page.locator("#login-error")).not_to_be_empty()
    expect(page.locator("#nav")).to_be_hidden()

    _sign_in(page, server)
    page.locator("#tab-team").click()
    finance = page.locator('.group[data-group="topic:finance"]')
    expect(finance.locator(".node")).to_have_count(2)
    expect(finance.locator("h3")).to_contain_text("finance")
    expect(page.locator('.group[data-group="topic:ops"] .node')).to_have_count(1)
    # The map drawn by meaning: one point per memory, near neighbours linked; a point opens its detail.
    page.locator("#tab-atlas").click()
    points = page.locator("#atlas .atlas-node")
    expect(points).to_have_count(8)  # the 5 team memories and the project's 3
    drawn = server.call("GET", f"{team}/map")
    assert {n["id"] for n in drawn["nodes"]} == {points.nth(i).get_attribute("data-id") for i in range(8)}
    assert all(0 <= n["x"] <= 1 and 0 <= n["y"] <= 1 for n in drawn["nodes"])
    page.locator("#atlas .atlas-node", has_text="Ramen bar visits").click()
    expect(page.locator("#detail-content")).to_contain_text("Ichiran")
    page.keyboard.press("Escape")
    page.screenshot(path=str(tmp_path / "atlas.png"))
    page.locator("#tab-team").click()
    # A note's Markdown heading is its card's title, without the "#" markers.
    expect(page.locator('.group[data-group="topic:food"] .node-title')).to_have_text("Ramen bar visits")
    expect(page.locator('.group[data-group="topic:"]')).to_contain_text("No topic")
    expect(finance.locator(".badge.scope").first).to_have_text("team")
    page.screenshot(path=str(tmp_path / "team-view.png"))

    # Keyboard: Tab reaches a node, Enter opens its detail, Escape closes it.
    node = finance.locator(".node").first
    node.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#detail")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()

    page.locator("#tab-team").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tab-file")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#tab-file")).to_be_focused()
    page.locator("#map-file").fill("report.grid")
    page.locator("#map-file").press("Enter")
    expect(page.locator('.group[data-group="CODE_CELL"] .node')).to_have_count(2)
    expect(page.locator('.group[data-group="DATA_TABLE"] .node')).to_have_count(1)
    expect(page.locator('.group[data-group="CODE_CELL"] h3')).to_contain_text("Code cells")
    expect(page.locator('.group[data-group="DATA_TABLE"] .badge.scope').first).to_have_text(
        "project"
    )  # one word for it, as the CLI and docs say (issue 26)
    page.screenshot(path=str(tmp_path / "file-view.png"))

    # axe-core on every view: no critical or serious accessibility violation.
    _no_serious_axe_violations(page, server)

    # A narrow screen: nothing overflows horizontally on any view.
    page.set_viewport_size({"width": 390, "height": 844})
    for view in ("map", "search", "documents", "sessions", "control"):
        page.goto(f"{server.base}/ui/#/{view}")
        page.locator("#nav").wait_for()
        page.wait_for_load_state("networkidle")
        _no_horizontal_overflow(page)
        page.screenshot(path=str(tmp_path / f"narrow-{view}.png"), full_page=True)
    page.goto(f"{server.base}/ui/#/map")
    page.locator("#tab-team").click()
    page.locator(".node").first.click()
    expect(page.locator("#detail-content")).to_be_visible()
    _no_horizontal_overflow(page)
    page.screenshot(path=str(tmp_path / "narrow-detail.png"), full_page=True)


def _drop(page: Any, name: str, data: str, mime: str) -> None:
    """Drop one file on the upload zone, as a person dragging it from their desktop would."""
    page.locator("#dropzone").wait_for()  # the view renders after the link is followed
    page.evaluate(
        """([name, data, mime]) => {
            const dt = new DataTransfer();
            dt.items.add(new File([data], name, { type: mime }));
            const zone = document.getElementById("dropzone");
            zone.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
        }""",
        [name, data, mime],
    )


def test_documents_usage_settings_and_regenerate(server: Server, page: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    team = "/v1/teams/acme"
    for role, content in (("user", "What is our refund window?"), ("assistant", "Refunds are accepted for 30 days.")):
        server.call("POST", f"{team}/sessions/s-usage/messages", {"role": role, "content": content}, expect=201)
    entities = [
        {"entity_type": "DATA_TABLE", "entity_id": "sales", "content": "Table sales: region, month, amount."},
        {"entity_type": "CODE_CELL", "entity_id": "cell-1", "content": "Python cell summing amount per region."},
    ]
    accepted = server.call(
        "POST", f"{team}/memories/generate", {"file_id": "report.grid", "entities": entities}, expect=202
    )
    deadline = time.monotonic() + 120
    while server.call("GET", f"/v1/jobs/{accepted['job_id']}")["status"] not in ("done", "failed"):
        assert time.monotonic() < deadline, "the generate job did not finish"
        time.sleep(0.3)

    _sign_in(page, server)

    # Documents: drop a file, see it indexed, re-index it, and remove it; a broken file fails with its reason.
    page.get_by_role("link", name="Documents").click()
    _drop(page, "handbook.md", "# Handbook\n\nExpense reports are due on the fifth working day.\n", "text/markdown")
    row = page.locator("#docs-list tr", has_text="handbook.md")
    expect(row.locator(".doc-status")).to_contain_text("indexed", timeout=TIMEOUT_MS)
    _drop(page, "broken.pdf", "this is not a pdf at all", "application/pdf")
    broken = page.locator("#docs-list tr", has_text="broken.pdf")
    expect(broken.locator(".doc-status")).to_contain_text("failed", timeout=TIMEOUT_MS)
    expect(broken.locator(".error-inline")).not_to_be_empty()
    page.screenshot(path=str(tmp_path / "documents-failed.png"), full_page=True)
    # The note's section sits on the map under the note's topic, not under "No topic" (issue 26).
    page.get_by_role("link", name="Knowledge map").click()
    page.locator("#tab-team").click()
    expect(page.locator('.group[data-group="topic:handbook"] .node-title')).to_have_text("Handbook")
    expect(page.locator('.group[data-group="topic:"]')).to_have_count(0)
    page.get_by_role("link", name="Documents").click()
    row.get_by_role("button", name="Re-index handbook.md").click()
    expect(row.locator(".doc-status")).to_contain_text("indexed", timeout=TIMEOUT_MS)
    row.get_by_role("button", name="Remove handbook.md").click()
    page.locator("#confirm-ok").click()
    expect(page.locator("#docs-list tr", has_text="handbook.md")).to_have_count(0)
    assert all(d["name"] != "handbook.md" for d in server.call("GET", f"{team}/documents")["items"])

    # Token usage: the context for the next call, per section, as a bar.
    page.get_by_role("link", name="Sessions").click()
    page.locator('.node[data-session="s-usage"]').click()
    # Opening a session measures its context at once, from its last user message: no error.
    expect(page.locator("#context-box .bar")).to_be_visible()
    expect(page.get_by_text("The user message is empty")).to_have_count(0)
    page.locator("#context-query").fill("refund window")
    page.locator("#build-context").click()
    bar = page.locator("#context-box .bar")
    expect(bar).to_be_visible()
    expect(bar).to_have_attribute("aria-label", re.compile(r"Context: [\d,]+ of [\d,]+ tokens"))
    assert page.locator("#context-box .seg").count() >= 2
    expect(page.locator("#messages")).to_contain_text("Refunds are accepted for 30 days.")
    page.screenshot(path=str(tmp_path / "sessions.png"), full_page=True)

    # Settings per project.
    page.get_by_role("link", name="Memory control").click()
    page.locator("#settings-file").fill("report.grid")
    page.locator("#settings-load").click()
    expect(page.locator("#settings-fields")).to_be_enabled()
    page.locator("#settings-chunk").fill("300")
    page.locator("#settings-k").fill("7")
    page.locator("#settings-enabled").uncheck()
    page.locator("#settings-save").click()
    expect(page.locator("#settings-result")).to_contain_text("Saved")
    saved = server.call("GET", f"{team}/projects/report.grid/settings")
    assert (saved["enabled"], saved["chunk_size"], saved["retrieval_k"]) == (False, 300, 7)
    page.locator("#settings-chunk").fill("-5")
    page.locator("#settings-save").click()
    expect(page.locator("#settings-error")).not_to_be_empty()

    # Regenerate a file: the job's progress shows until it finishes.
    page.get_by_role("link", name="Knowledge map").click()
    page.locator("#tab-file").click()
    page.locator("#map-file").fill("report.grid")
    page.locator("#map-file").press("Enter")
    expect(page.locator('.group[data-group="DATA_TABLE"] .node')).to_have_count(1)
    # Generation is off for the file (saved above): the reason shows beside the button.
    page.locator("#regenerate").click()
    expect(page.locator("#regen-error")).to_contain_text("turned off")
    server.call("PUT", f"{team}/projects/report.grid/settings", {"enabled": True})
    page.locator("#regenerate").click()
    expect(page.locator("#regen-status")).to_contain_text("done", timeout=TIMEOUT_MS)
    expect(page.locator("#regen-error")).to_be_empty()
    expect(page.locator('.group[data-group="DATA_TABLE"] .node')).to_have_count(1)

    # Clear the file's memory behind a typed confirmation; a wrong id never enables the button.
    page.get_by_role("link", name="Memory control").click()
    page.locator("#clear-project-id").fill("report.grid")
    page.get_by_role("button", name="Clear project memory").click()
    page.locator("#confirm-input").fill("report.gri")
    expect(page.locator("#confirm-ok")).to_be_disabled()
    page.locator("#confirm-input").fill("report.grid")
    page.locator("#confirm-ok").click()
    expect(page.locator("#clear-project-result")).to_contain_text("Removed")
    left = server.call("GET", f"{team}/memories?file_id=report.grid")["items"]
    assert [m for m in left if m.get("project_id") == "report.grid"] == []


def test_a_proposal_on_a_hand_edited_summary_is_accepted_in_the_detail_panel(
    server: Server, page: Any, tmp_path: Path
) -> None:
    """Issue 25: a regenerate after a hand edit keeps the edit; the detail panel shows the proposal to decide."""
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import expect

    team = "/v1/teams/acme"

    def run(path: str, body: dict[str, Any]) -> None:
        accepted = server.call("POST", f"{team}/memories/{path}", body, expect=202)
        deadline = time.monotonic() + 120
        while server.call("GET", f"/v1/jobs/{accepted['job_id']}")["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline, f"the {path} job did not finish"
            time.sleep(0.3)

    entities = [{"entity_type": "DATA_TABLE", "entity_id": "visits", "content": "Table visits: bar, date, rating."}]
    run("generate", {"file_id": "ramen.grid", "entities": entities})
    items = server.call("GET", f"{team}/memories?file_id=ramen.grid")["items"]
    summary = next(m for m in items if m.get("entity_id") == "visits")
    hand = "Table1 lists ramen bar visits, checked by hand."
    server.call("PATCH", f"{team}/memories/{summary['id']}", {"content": hand})
    run("regenerate", {"file_id": "ramen.grid"})
    pending = server.call("GET", f"{team}/proposals")["items"]
    assert [m["id"] for m in pending] == [summary["id"]] and pending[0]["content"] == hand

    _sign_in(page, server)
    page.get_by_role("link", name="Knowledge map").click()
    page.locator("#tab-file").click()
    page.locator("#map-file").fill("ramen.grid")
    page.locator("#map-file").press("Enter")
    page.locator(f'.node[data-id="{summary["id"]}"]').click()
    expect(page.locator("#detail-content")).to_have_text(hand)
    expect(page.locator("#detail-author")).to_have_text("user")
    expect(page.locator("#proposal-content")).to_have_text(summary["content"])
    page.screenshot(path=str(tmp_path / "proposal.png"), full_page=True)
    bad = [v["id"] for v in Axe().run(page).response["violations"] if v["impact"] in ("critical", "serious")]
    assert bad == []
    page.locator("#accept-proposal").click()
    expect(page.locator("#detail-content")).to_have_text(summary["content"])
    expect(page.locator("#proposal")).to_have_count(0)
    after = server.call("GET", f"{team}/memories/{summary['id']}")
    assert after["version"] == 3 and after["author"] == "llm" and after["proposal"] is None
    assert server.call("GET", f"{team}/proposals")["items"] == []


# -- search by role and by conversation (issue 10, section 3) ---------------------------------------------
XSS_TITLE = 'Lisbon <img src=x onerror="window.__xss=1"> trip'
XSS_REPLY = "Booked: Hotel Avenida, three nights from 12 May. <script>window.__xss=2</script><b>bold</b>"
TRIP = [  # a titled session, said in May 2023 (imported history)
    ("user", "Find me a hotel near Rossio station in Lisbon for May.", "2023-05-02T09:00:00+00:00"),
    (
        "assistant",
        "The Hotel Avenida is two minutes from Rossio station and has a rooftop bar.",
        "2023-05-02T09:01:00+00:00",
    ),
    ("user", "Book the Hotel Avenida for three nights, starting on the twelfth.", "2023-05-09T18:30:00+00:00"),
    ("assistant", XSS_REPLY, "2023-05-09T18:31:00+00:00"),
]
GARDEN = [  # an untitled session
    ("user", "My sister recommends a hotel in Porto with a garden courtyard.", "2024-02-10T20:00:00+00:00"),
    ("assistant", "The Garden Hotel in Porto has a courtyard and costs 90 euros a night.", "2024-02-10T20:01:00+00:00"),
    ("user", "Do they have parking there?", "2024-02-10T20:02:00+00:00"),
    ("assistant", "Yes, the hotel has free parking for guests.", "2024-02-10T20:03:00+00:00"),
    ("tool", "Availability lookup: the Garden Hotel has two rooms free.", "2024-02-10T20:04:00+00:00"),
]


@pytest.fixture
def chat_server(tmp_path: Path, funes_home: Path, local_embedder: Any) -> Iterator[Server]:
    """`funes serve` over a store with two conversations of user and assistant messages, and one team memory."""
    import funes

    db = tmp_path / "chat.db"
    out = _cli(funes_home, "--db", str(db), "keys", "create", "--team", "acme", "--role", "admin", "--json")
    mem = funes.open(str(db), embedder=local_embedder)
    try:
        trip = mem.session("trip-lisbon", tenant="acme", title=XSS_TITLE)
        for role, content, at in TRIP:
            trip.add_message(role, content, at=at)
        garden = mem.session("garden-porto", tenant="acme")
        for role, content, at in GARDEN:
            garden.add_message(role, content, at=at, tool_call_id="call_rooms" if role == "tool" else None)
        mem.remember("Our team's hotel budget is 120 euros a night.", tenant="acme", scope="team", title="Hotel budget")
    finally:
        mem.close()
    srv = Server(funes_home, db, json.loads(out)["key"])
    try:
        yield srv
    finally:
        srv.stop()


def _said(role: str) -> set[str]:
    return {content for r, content, _ in TRIP + GARDEN if r == role}


def test_search_filters_by_role_groups_by_conversation_and_shows_record_text_as_text(
    chat_server: Server, page: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    search = "/v1/teams/acme/memories/search?q=hotel"
    everything = chat_server.call("GET", f"{search}&limit=20")
    assert any(h["memory"]["kind"] != "message" for h in everything["hits"]), "the team memory should match too"
    _sign_in(page, chat_server)
    page.get_by_role("link", name="Search").click()
    page.locator("#search-q").fill("hotel")
    page.locator("#search-q").press("Enter")
    results = page.locator("#search-results")
    items = results.locator(".hits > .hit-item")
    expect(items).to_have_count(len(everything["hits"]))
    expect(results.locator(".hit", has_text="Hotel budget")).to_have_count(1)

    # A chat message shows the turns around it; record text (XSS-shaped) is shown as text, never run.
    booked = items.filter(has=page.locator(".hit", has_text="Booked: Hotel Avenida"))
    expect(booked).to_have_count(1)
    expect(booked.locator(".hit-snippet")).to_contain_text("<script>window.__xss=2</script><b>bold</b>")
    expect(booked.locator(".turns-before .turn")).to_contain_text("Book the Hotel Avenida for three nights")
    expect(booked.locator(".turns-before .turn-role")).to_have_text("user")
    assert booked.get_attribute("data-role") == "assistant"

    # Role filter: only what the user said.
    page.locator("#search-role-user").check()
    users = chat_server.call("GET", f"{search}&limit=20&role=user")["hits"]
    assert users and {h["memory"]["content"] for h in users} <= _said("user")
    expect(items).to_have_count(len(users))
    expect(results.locator('.hits > .hit-item[data-role="user"]')).to_have_count(len(users))
    for content in _said("assistant"):
        expect(results.locator(".hit-snippet", has_text=content[:30])).to_have_count(0)
    expect(results.locator(".hit", has_text="Hotel budget")).to_have_count(0)
    assert "role=user" in page.url

    # Both roles checked is every chat message (the team memory has no role).
    page.locator("#search-role-assistant").check()
    both = chat_server.call("GET", f"{search}&limit=20&role=user,assistant")["hits"]
    expect(items).to_have_count(len(both))
    expect(results.locator('.hits > .hit-item[data-role="assistant"]')).not_to_have_count(0)
    page.locator("#search-role-user").uncheck()
    page.locator("#search-role-assistant").uncheck()
    # Tool output is a role of its own.
    page.locator("#search-role-tool").check()
    tools = chat_server.call("GET", f"{search}&limit=20&role=tool")["hits"]
    assert [h["memory"]["content"] for h in tools] == list(_said("tool"))
    expect(items).to_have_count(1)
    expect(results.locator('.hits > .hit-item[data-role="tool"]')).to_have_count(1)
    page.locator("#search-role-tool").uncheck()
    expect(items).to_have_count(len(everything["hits"]))

    # Group by conversation: one block per session, title (as text) or id, its dates and its hits.
    page.locator("#search-group").check()
    grouped = chat_server.call("GET", f"{search}&limit=10&group_by=session")
    assert {g["session_id"] for g in grouped["groups"]} == {"trip-lisbon", "garden-porto"}
    blocks = results.locator(".session-group")
    expect(blocks).to_have_count(2)
    for g in grouped["groups"]:
        block = results.locator(f'.session-group[data-session="{g["session_id"]}"]')
        expect(block.locator(".hits > .hit-item")).to_have_count(len(g["hits"]))
        expect(block.locator(".session-count")).to_have_text(
            f"{len(g['hits'])} matching message{'' if len(g['hits']) == 1 else 's'}"
        )
    trip = results.locator('.session-group[data-session="trip-lisbon"]')
    expect(trip.locator(".session-title")).to_have_text(XSS_TITLE)
    expect(trip.locator(".session-id")).to_have_text("trip-lisbon")
    expect(trip.locator(".session-when")).to_contain_text("2023")
    # Inside a block the hits and their turns read in the order they were said, each turn once.
    said = trip.locator(".hit-snippet, .turn-text").all_inner_texts()
    order_said = [c for _, c, _ in TRIP]
    assert len(said) == len(set(said)) and set(said) <= set(order_said), said
    assert said == sorted(said, key=order_said.index)
    garden = results.locator('.session-group[data-session="garden-porto"]')
    expect(garden.locator(".session-title")).to_have_text("garden-porto")
    expect(garden.locator(".session-when")).to_contain_text("2024")
    expect(garden.locator(".turns .turn").first).to_be_visible()
    expect(results.locator(".hit", has_text="Hotel budget")).to_have_count(0)
    order = [page.locator(".session-group").nth(i).get_attribute("data-session") for i in range(2)]
    assert order == [g["session_id"] for g in grouped["groups"]]
    page.screenshot(path=str(tmp_path / "search-grouped.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 800})
    _no_horizontal_overflow(page)
    page.screenshot(path=str(tmp_path / "search-grouped-phone.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 800})

    # Grouped and filtered by role; the state is in the address, so a reload keeps it.
    page.locator("#search-role-assistant").check()
    assistant_groups = chat_server.call("GET", f"{search}&limit=10&group_by=session&role=assistant")["groups"]
    expect(blocks).to_have_count(len(assistant_groups))
    expect(results.locator('.hit-item[data-role="user"]')).to_have_count(0)
    assert "group=session" in page.url and "role=assistant" in page.url
    page.reload()
    page.locator("#team-name").wait_for()
    expect(page.locator("#search-q")).to_have_value("hotel")
    expect(page.locator("#search-group")).to_be_checked()
    expect(page.locator("#search-role-assistant")).to_be_checked()
    expect(page.locator("#search-role-user")).not_to_be_checked()
    expect(blocks).to_have_count(len(assistant_groups))
    expect(page.locator('#nav a[data-view="search"]')).to_have_attribute("aria-current", "page")

    # Nothing relevant: explicit search still answers, every hit marked as a weak match (issue 28);
    # at the context floor nothing comes back.
    off_topic = "quantum chromodynamics lecture notes"
    url = f"/v1/teams/acme/memories/search?q={urllib.parse.quote(off_topic)}"
    weak = chat_server.call("GET", url)["hits"]
    assert weak and all(h["weak"] for h in weak)
    assert chat_server.call("GET", url + "&min_relevance=0.005")["hits"] == []
    page.locator("#search-q").fill(off_topic)
    page.locator("#search-q").press("Enter")
    expect(results.locator(".weak").first).to_have_text("weak match")

    # No record text ever became markup.
    assert page.evaluate("window.__xss") is None
    expect(page.locator("#search-results img, #search-results script, #search-results b")).to_have_count(0)
    _no_horizontal_overflow(page)


def test_the_ui_sends_back_the_furthest_position_a_write_answered_with(server: Server, page: Any) -> None:
    # Behind a load balancer with a read replica, a response that wrote carries Funes-Position
    # (tests/test_pg_replica.py); this SQLite server sends none, so the test adds it to the answers.
    handed = iter(["0/3A2F1C8", "1/10", "0/FF"])  # the third is older than the second: it must not win
    sent: list[str | None] = []

    def answer(route: Any) -> None:
        reply = route.fetch()
        extra = {"funes-position": next(handed)} if route.request.method == "POST" else {}
        route.fulfill(response=reply, headers={**reply.headers, **extra})

    _sign_in(page, server)
    page.route("**/v1/teams/acme/memories", answer)
    page.on("request", lambda r: sent.append(r.headers.get("funes-read-after")) if "/v1/" in r.url else None)
    for n in range(3):
        page.evaluate(
            """async (n) => {
                const { api } = await import("./api.js");
                await api("POST", "teams/acme/memories", { body: { content: `position note ${n}` } });
                await api("GET", "me");
            }""",
            n,
        )
    # Each request carries the furthest position handed out before it; the first POST had none yet.
    assert sent == [None, "0/3A2F1C8", "0/3A2F1C8", "1/10", "1/10", "1/10"], sent


@pytest.mark.parametrize(("require", "outcome"), [(False, "1 skipped"), (True, "1 error")])
def test_without_chromium_the_browser_tests_skip_with_the_reason_unless_ci_requires_them(
    require: bool, outcome: str
) -> None:
    """Quickstart 2 on a machine without Debian's chromium passes, saying why; in CI it fails."""
    env = {k: v for k, v in os.environ.items() if k != "FUNES_REQUIRE_BROWSER"}
    env["FUNES_TEST_CHROMIUM"] = "/nonexistent/chromium"
    if require:
        env["FUNES_REQUIRE_BROWSER"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"{__file__}::test_team_view_groups_by_topic_and_file_view_by_entity_type",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert outcome in done.stdout, done.stdout[-2000:]
    assert "apt-get install -y chromium" in done.stdout
    assert done.returncode == (1 if require else 0)
