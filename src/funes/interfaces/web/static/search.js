// Search as you type, with filters; each hit shows its attribution, relevance and why it matched.

import { api, teamPath } from "./api.js";
import { openDetail } from "./detail.js";
import { debounce, empty, field, h, replace, scopeBadge, showError, titleOf, typeBadge } from "./dom.js";

const state = { q: "", memory_type: "", scope: "", source_type: "" };

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
  for (const [k, v] of Object.entries(ex.boosts || {})) {
    if (typeof v === "number" && v !== 0 && v !== 1) parts.push(`${k.replace(/_/g, " ")} ×${v.toFixed(2)}`);
  }
  return parts.length ? parts.join(" · ") : "ranked by combined score";
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

function hit(hitData, query) {
  const m = hitData.memory;
  const rel = Number(hitData.relevance || 0);
  return h(
    "li",
    {},
    h(
      "button",
      { class: "hit", dataset: { id: m.id }, onclick: () => openDetail(m.id) },
      h("span", { class: "row spread" }, h("span", { class: "node-title" }, titleOf(m)), h("span", { class: "badges" }, scopeBadge(m.scope), typeBadge(m))),
      h("span", { class: "hit-snippet" }, highlight(snippet(m.content, query), query)),
      h(
        "span",
        { class: "hit-meta" },
        h("span", { class: "attribution" }, hitData.attribution || m.attribution),
        h("span", { class: "relevance", title: "Calibrated chance this answers the query" }, `relevance ${(rel * 100).toFixed(0)}%`),
        h("span", { class: "score" }, `score ${Number(hitData.score).toFixed(3)}`),
      ),
      h("span", { class: "why" }, `Why: ${why(hitData.explanation)}`),
    ),
  );
}

/** Render the search view into `root`. */
export function renderSearch(root) {
  const q = h("input", { id: "search-q", type: "search", placeholder: "Search memories and documents", value: state.q, autocomplete: "off" });
  const type = h("select", { id: "search-type" }, options([["", "Any type"], ["fact", "Fact"], ["preference", "Preference"], ["decision", "Decision"], ["context", "Context"], ["conversation", "Conversation"]]));
  const scope = h("select", { id: "search-scope" }, options([["", "Any scope"], ["project", "File"], ["team", "Team"], ["session", "Session"]]));
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
  const results = h("div", { id: "search-results", "aria-live": "polite" });
  const err = h("p", { class: "error", role: "alert", id: "search-error" });
  let seq = 0;

  async function run() {
    state.q = q.value.trim();
    state.memory_type = type.value;
    state.scope = scope.value;
    state.source_type = source.value;
    showError(err, null);
    if (!state.q) {
      replace(results, empty("Type to search.", "Results appear as you type, best first, with where each came from and why it matched."));
      return;
    }
    const mine = ++seq;
    try {
      const data = await api("GET", teamPath("memories/search"), {
        query: { q: state.q, limit: 20, memory_type: state.memory_type, scope: state.scope, source_type: state.source_type },
      });
      if (mine !== seq) return;
      const hits = data.hits || [];
      replace(
        results,
        data.degraded ? h("p", { class: "notice" }, "Keyword-only results: the embedding model is unavailable right now.") : null,
        hits.length
          ? h("ol", { class: "hits" }, hits.map((x) => hit(x, state.q)))
          : empty(`Nothing found for “${state.q}”.`, "Try other words, clear the filters, or upload the document that holds the answer."),
      );
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
  for (const s of [type, scope, source]) s.addEventListener("change", run);

  replace(
    root,
    h("div", { class: "view-head" }, h("h2", {}, "Search")),
    h(
      "form",
      { class: "search-bar", role: "search", onsubmit: (ev) => (ev.preventDefault(), run()) },
      field("Query", q),
      h("div", { class: "row wrap filters" }, field("Type", type), field("Scope", scope), field("Source type", source)),
    ),
    err,
    results,
  );
  run();
  q.focus();
  return run;
}
