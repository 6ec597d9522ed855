// Search as you type, with filters; each hit shows its attribution, relevance and why it matched.
// Chat messages show the turns around them; "group by conversation" shows one block per session.
// The filters live in the hash (#/search?q=...&role=user&group=session), so a search can be reloaded or shared.

import { api, teamPath } from "./api.js";
import { openDetail } from "./detail.js";
import { debounce, empty, field, h, replace, scopeBadge, showError, titleOf, typeBadge, when } from "./dom.js";

/** The message roles the role filter offers: every role a stored message can have (funes.context.ROLES; the system message is never stored). */
const ROLES = [
  ["user", "User"],
  ["assistant", "Assistant"],
  ["tool", "Tool"],
];
const ROLE_NAMES = new Set(ROLES.map(([r]) => r));
const LIMIT = 20; // hits per search
const GROUP_LIMIT = 10; // conversations per grouped search (the API's limit counts groups)

const state = { q: "", memory_type: "", scope: "", source_type: "", roles: [], group: false };

/** The search state as hash parameters (empty ones left out). */
function toParams(st) {
  const p = new URLSearchParams();
  if (st.q) p.set("q", st.q);
  if (st.memory_type) p.set("type", st.memory_type);
  if (st.scope) p.set("scope", st.scope);
  if (st.source_type) p.set("source", st.source_type);
  if (st.roles.length) p.set("role", st.roles.join(","));
  if (st.group) p.set("group", "session");
  return p;
}

/** Read the search state from the hash (#/search?...); false when the hash carries none. */
function fromHash() {
  const at = location.hash.indexOf("?");
  if (at < 0) return false;
  const p = new URLSearchParams(location.hash.slice(at + 1));
  state.q = p.get("q") || "";
  state.memory_type = p.get("type") || "";
  state.scope = p.get("scope") || "";
  state.source_type = p.get("source") || "";
  state.roles = (p.get("role") || "").split(",").filter((r) => ROLE_NAMES.has(r));
  state.group = p.get("group") === "session";
  return true;
}

/** Keep the hash in step with the state, without a history entry per keystroke or a re-render. */
function toHash() {
  const query = toParams(state).toString();
  const hash = query ? `#/search?${query}` : "#/search";
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

function options(values) {
  return values.map(([value, label]) => h("option", { value }, label));
}

/** Why a hit ranked where it did, in words. */
export function why(ex) {
  if (!ex) return "";
  const parts = [];
  if (ex.keyword_rank !== null && ex.keyword_rank !== undefined) parts.push(`keyword match #${ex.keyword_rank}`);
  if (ex.vector_similarity !== null && ex.vector_similarity !== undefined)
    parts.push(`meaning similarity ${Number(ex.vector_similarity).toFixed(2)}`);
  if (ex.vector_rank !== null && ex.vector_rank !== undefined) parts.push(`semantic rank #${ex.vector_rank}`);
  if (ex.passage) {
    // A long record matched by a few of its sentences (a passage window, issue 28): say which.
    const [first, last] = ex.passage.sentences;
    const span = first === last ? `sentence ${first}` : `sentences ${first}–${last}`;
    const text = ex.passage.text.length > 120 ? `${ex.passage.text.slice(0, 120)}…` : ex.passage.text;
    parts.push(`${span} matched best: “${text}”`);
  }
  for (const [k, v] of Object.entries(ex.boosts || {})) {
    if (typeof v === "number" && v !== 0 && v !== 1) parts.push(`${k.replace(/_/g, " ")} ×${v.toFixed(2)}`);
  }
  if (typeof ex.score === "number") parts.push(`fused score ${ex.score.toFixed(3)}`);
  return parts.length ? parts.join(" · ") : "ranked by relevance";
}

/** The part of a text around the first query word it contains (the start when none). */
export function snippet(text, query, size = 280) {
  const t = (text || "").replace(/\s+/g, " ").trim();
  if (t.length <= size) return t;
  const lower = t.toLowerCase();
  const words = query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 3);
  const at = Math.min(...words.map((w) => lower.indexOf(w)).filter((i) => i >= 0), Infinity);
  if (!Number.isFinite(at)) return `${t.slice(0, size)}…`;
  const start = Math.max(0, at - Math.floor(size / 3));
  return `${start ? "…" : ""}${t.slice(start, start + size)}${start + size < t.length ? "…" : ""}`;
}

/** Text with the query's words wrapped in <mark> (built as nodes, never parsed as HTML). */
function highlight(text, query) {
  const words = query.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 3);
  if (!words.length) return [text];
  const re = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "gi");
  return text.split(re).map((part, i) => (i % 2 ? h("mark", {}, part) : part));
}

/** A chat message's role, from its locator; "" for other records. */
function roleOf(m) {
  const loc = (m.source && m.source.locator) || {};
  return m.kind === "message" && typeof loc.role === "string" ? loc.role : "";
}

/** The turns before and after a message hit, oldest first (all before it when its place is unknown). */
function splitTurns(m, turns) {
  const seq = m.source && m.source.locator ? m.source.locator.seq : undefined;
  const ordered = (turns || []).slice().sort((a, b) => a.seq - b.seq);
  if (!Number.isInteger(seq)) return [ordered, []];
  return [ordered.filter((t) => t.seq < seq), ordered.filter((t) => t.seq > seq)];
}

/** The turns around a hit, de-emphasised: role, time and the start of the text. */
function turnList(turns, where, query) {
  if (!turns.length) return null;
  return h(
    "ol",
    { class: `turns turns-${where}`, "aria-label": where === "before" ? "Turns before" : "Turns after" },
    turns.map((t) =>
      h(
        "li",
        { class: `turn turn-${t.role}`, dataset: { seq: t.seq } },
        h("span", { class: "turn-role" }, t.role),
        " ",
        h("span", { class: "turn-text" }, snippet(t.content, query, 220)),
      ),
    ),
  );
}

/** One hit; `turns` overrides its own [before, after] turns (a grouped view shares them between hits). */
function hit(hitData, query, turns) {
  const m = hitData.memory;
  const rel = Number(hitData.relevance || 0);
  const role = roleOf(m);
  const [before, after] = turns || splitTurns(m, hitData.context);
  return h(
    "li",
    { class: "hit-item", dataset: role ? { role } : {} },
    turns && turns.gap ? h("span", { class: "turn-gap muted", "aria-label": "Turns left out" }, "⋯") : null,
    turnList(before, "before", query),
    h(
      "button",
      { class: "hit", dataset: { id: m.id }, onclick: () => openDetail(m.id) },
      h(
        "span",
        { class: "row spread" },
        h("span", { class: "node-title" }, titleOf(m)),
        h("span", { class: "badges" }, role ? h("span", { class: `badge role role-${role}` }, role) : null, scopeBadge(m.scope), typeBadge(m)),
      ),
      h("span", { class: "hit-snippet" }, highlight(snippet(m.content, query), query)),
      h(
        "span",
        { class: "hit-meta" },
        h("span", { class: "attribution" }, hitData.attribution || m.attribution),
        h("span", { class: "relevance", title: "Calibrated chance this answers the query" }, `relevance ${(rel * 100).toFixed(0)}%`),
        hitData.weak ? h("span", { class: "weak muted", title: "Under the floor automatic context uses: likely not what was asked" }, "weak match") : null,
      ),
      h("span", { class: "why" }, `Why: ${why(hitData.explanation)}`),
    ),
    turnList(after, "after", query),
  );
}

/** When a conversation's hits were said: one time, or first – last. */
function span(g) {
  if (!g.first_at) return "";
  const first = when(g.first_at);
  const last = g.last_at ? when(g.last_at) : first;
  return first === last ? first : `${first} – ${last}`;
}

/** One conversation of a grouped search: its title or id, when, how many hits, and the hits in order. */
function group(g, query) {
  const hits = g.hits || [];
  const n = hits.length;
  return h(
    "li",
    { class: "session-group", dataset: { session: g.session_id } },
    h(
      "div",
      { class: "session-head" },
      h("h3", { class: "session-title" }, g.title || g.session_id),
      h(
        "p",
        { class: "session-meta muted" },
        g.title ? h("span", { class: "session-id" }, g.session_id) : null,
        h("span", { class: "session-when" }, span(g)),
        h("span", { class: "session-count" }, `${n} matching message${n === 1 ? "" : "s"}`),
        h("span", { class: "relevance" }, `best relevance ${(Number(g.relevance || 0) * 100).toFixed(0)}%`),
      ),
    ),
    h("ol", { class: "hits" }, inConversation(hits).map(([x, turns]) => hit(x, query, turns))),
  );
}

function seqOf(m) {
  const seq = m.source && m.source.locator ? m.source.locator.seq : undefined;
  return Number.isInteger(seq) ? seq : null;
}

/**
 * A conversation's hits in the order they were said, each turn shown once: a turn that is itself a hit,
 * or already shown beside an earlier hit, is not repeated. Pairs of [hit, [before, after]] (with `gap`
 * set when turns were skipped before it); best first with their own turns when a place is unknown.
 */
function inConversation(hits) {
  if (hits.some((x) => seqOf(x.memory) === null)) return hits.map((x) => [x, null]);
  const ordered = hits.slice().sort((a, b) => seqOf(a.memory) - seqOf(b.memory));
  const hitSeqs = new Set(ordered.map((x) => seqOf(x.memory)));
  const shown = new Set();
  let last = null;
  return ordered.map((x) => {
    const [before, after] = splitTurns(x.memory, x.context);
    const fresh = (t) => !hitSeqs.has(t.seq) && !shown.has(t.seq);
    const b = before.filter(fresh);
    const a = after.filter(fresh);
    const turns = [b, a];
    const first = b.length ? b[0].seq : seqOf(x.memory);
    turns.gap = last !== null && first > last + 1;
    for (const t of [...b, ...a]) shown.add(t.seq);
    last = Math.max(seqOf(x.memory), ...a.map((t) => t.seq));
    return [x, turns];
  });
}

function noResults(st) {
  const narrowed = st.roles.length || st.group || st.memory_type || st.scope || st.source_type;
  return empty(
    `No relevant memories for “${st.q}”.`,
    narrowed
      ? "Try other words or clear the filters: a role filter or grouping by conversation keeps only chat messages."
      : "Try other words, or upload the document that holds the answer.",
  );
}

/** Render the search view into `root`. */
export function renderSearch(root) {
  fromHash();
  const q = h("input", { id: "search-q", type: "search", placeholder: "Search memories and documents", value: state.q, autocomplete: "off" });
  const type = h("select", { id: "search-type" }, options([["", "Any type"], ["fact", "Fact"], ["preference", "Preference"], ["decision", "Decision"], ["context", "Context"], ["conversation", "Conversation"]]));
  const scope = h("select", { id: "search-scope" }, options([["", "Any scope"], ["project", "Project"], ["team", "Team"], ["session", "Session"]]));
  const source = h("select", { id: "search-source" }, options([
      ["", "Any source"],
      ["documents", "Documents (PDF, text, Markdown)"],
      ["pdf", "PDF"],
      ["sheets", "Spreadsheets"],
      ["markdown", "Markdown"],
      ["text", "Text"],
      ["chat", "Chat"],
      ["user", "Stated by a person"],
      ["agent", "Written by an agent"],
      ["import", "Imported"],
    ]));
  type.value = state.memory_type;
  scope.value = state.scope;
  source.value = state.source_type;
  const roleBoxes = ROLES.map(([value]) => h("input", { type: "checkbox", id: `search-role-${value}`, value, checked: state.roles.includes(value) }));
  const roles = h(
    "fieldset",
    { class: "checks", id: "search-roles" },
    h("legend", {}, "Said by"),
    ROLES.map(([, label], i) => h("span", { class: "field check" }, roleBoxes[i], h("label", { for: roleBoxes[i].id }, label))),
  );
  const groupBox = h("input", { type: "checkbox", id: "search-group", checked: state.group });
  const grouping = h(
    "div",
    { class: "field check group-toggle" },
    groupBox,
    h("label", { for: groupBox.id }, "Group by conversation"),
  );
  const results = h("div", { id: "search-results", "aria-live": "polite" });
  const err = h("p", { class: "error", role: "alert", id: "search-error" });
  let seq = 0;

  async function run() {
    if (!q.isConnected) return; // another view replaced this one before a debounced search ran
    state.q = q.value.trim();
    state.memory_type = type.value;
    state.scope = scope.value;
    state.source_type = source.value;
    state.roles = roleBoxes.filter((b) => b.checked).map((b) => b.value);
    state.group = groupBox.checked;
    toHash();
    showError(err, null);
    if (!state.q) {
      replace(results, empty("Type to search.", "Results appear as you type, best first, with where each came from and why it matched."));
      return;
    }
    const mine = ++seq;
    const st = { ...state, roles: state.roles.slice() };
    try {
      const data = await api("GET", teamPath("memories/search"), {
        query: {
          q: st.q,
          limit: st.group ? GROUP_LIMIT : LIMIT,
          memory_type: st.memory_type,
          scope: st.scope,
          source_type: st.source_type,
          role: st.roles.join(","),
          group_by: st.group ? "session" : "",
        },
      });
      if (mine !== seq) return;
      const hits = data.hits || [];
      const groups = data.groups || [];
      let body;
      if (st.group) {
        body = groups.length
          ? [
              h("p", { class: "muted", id: "search-summary" }, `${groups.length} conversation${groups.length === 1 ? "" : "s"}, best first; in each, the messages in the order they were said.`),
              h("ol", { class: "session-groups" }, groups.map((g) => group(g, st.q))),
            ]
          : noResults(st);
      } else {
        body = hits.length ? h("ol", { class: "hits" }, hits.map((x) => hit(x, st.q))) : noResults(st);
      }
      replace(results, data.degraded ? h("p", { class: "notice" }, "Keyword-only results: the embedding model is unavailable right now.") : null, body);
    } catch (e) {
      if (mine === seq) showError(err, e);
    }
  }
  const later = debounce(run, 250);
  q.addEventListener("input", later);
  q.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      ev.preventDefault();
      run();
    }
  });
  for (const s of [type, scope, source, groupBox, ...roleBoxes]) s.addEventListener("change", run);

  replace(
    root,
    h("div", { class: "view-head" }, h("h2", {}, "Search")),
    h(
      "form",
      { class: "search-bar", role: "search", onsubmit: (ev) => (ev.preventDefault(), run()) },
      field("Query", q),
      h("div", { class: "row wrap filters" }, field("Type", type), field("Scope", scope), field("Source type", source), roles, grouping),
      h("small", { class: "muted", id: "search-filter-hint" }, "A role filter and grouping by conversation keep only chat messages; no role checked means everyone."),
    ),
    err,
    results,
  );
  run();
  q.focus();
  return run;
}
