// Sessions: the list, a session's messages, and its token usage as a bar per context section.

import { api, teamPath } from "./api.js";
import { empty, field, h, replace, showError, when } from "./dom.js";

const SECTION_COLORS = ["#3566d6", "#2f9e6e", "#c7821b", "#9a4fc4", "#cf4a4a", "#2b9bb0", "#7a7f87"];

/** Find {sections, used, window} in a usage dict of any of the shapes the API returns. */
export function usageParts(u) {
  if (!u) return null;
  const pick = (o) => (o && typeof o === "object" ? o : null);
  for (const c of [pick(u), pick(u.context), pick(u.report), pick(u.last), pick(u.usage)]) {
    if (!c) continue;
    const window = c.window ?? c.context_window;
    const raw = c.sections || c.per_section || null;
    const sections = raw
      ? Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v && typeof v === "object" ? v.tokens ?? v.used ?? 0 : v) || 0]))
      : null;
    let used = c.used ?? c.context_used ?? c.total_tokens;
    if (used === undefined && sections) used = Object.values(sections).reduce((a, b) => a + Number(b || 0), 0);
    if (window) return { window: Number(window), used: Number(used || 0), sections: sections || null };
  }
  return null;
}

/** A stacked bar: used out of window, one segment per section, with a legend. */
export function usageBar(parts, label) {
  if (!parts) return empty("No token usage recorded yet.", "Usage appears once a model call is recorded for this session or a context is built.");
  const { window, used, sections } = parts;
  const pct = (n) => `${Math.min(100, (100 * n) / window).toFixed(2)}%`;
  const entries = sections ? Object.entries(sections).filter(([, v]) => Number(v) > 0) : [["used", used]];
  return h(
    "figure",
    { class: "usage" },
    h(
      "div",
      {
        class: "bar",
        role: "img",
        "aria-label": `${label}: ${used.toLocaleString()} of ${window.toLocaleString()} tokens (${((100 * used) / window).toFixed(1)}%)`,
      },
      entries.map(([name, n], i) =>
        h("span", { class: "seg", style: `width:${pct(Number(n))};background:${SECTION_COLORS[i % SECTION_COLORS.length]}`, title: `${name}: ${n} tokens` }),
      ),
    ),
    h("figcaption", {}, h("strong", {}, `${used.toLocaleString()} / ${window.toLocaleString()} tokens`), ` (${((100 * used) / window).toFixed(1)}% of the context window)`),
    h(
      "ul",
      { class: "legend" },
      entries.map(([name, n], i) =>
        h("li", {}, h("span", { class: "swatch", style: `background:${SECTION_COLORS[i % SECTION_COLORS.length]}` }), `${name}: ${Number(n).toLocaleString()}`),
      ),
    ),
  );
}

/** Render the sessions view into `root`. */
export function renderSessions(root, selected) {
  const list = h("div", { id: "sessions-list" });
  const pane = h("div", { id: "session-pane", "aria-live": "polite" });
  const err = h("p", { class: "error", role: "alert", id: "sessions-error" });

  async function openSession(id) {
    const usageBox = h("div", { id: "usage-box" });
    const ctxBox = h("div", { id: "context-box" });
    const msgs = h("div", { id: "messages" });
    const query = h("input", { id: "context-query", placeholder: "optional: the next question" });
    const ctxErr = h("p", { class: "error", role: "alert" });
    const usageErr = h("p", { class: "error", role: "alert" });
    let ctxForm = null;
    replace(
      pane,
      h("h3", {}, `Session ${id}`),
      h("section", {}, h("h4", {}, "Last recorded call"), usageErr, usageBox),
      h(
        "section",
        {},
        h("h4", {}, "Context for the next call"),
        (ctxForm = h(
          "form",
          {
            class: "row wrap",
            onsubmit: async (ev) => {
              ev.preventDefault();
              showError(ctxErr, null);
              try {
                const body = query.value.trim() ? { query: query.value.trim() } : {};
                const data = await api("POST", teamPath(`sessions/${encodeURIComponent(id)}/context`), { body });
                replace(ctxBox, usageBar(usageParts(data.usage || data.report || data), "Context"));
              } catch (e) {
                showError(ctxErr, e);
              }
            },
          },
          field("Query", query),
          h("button", { type: "submit", id: "build-context" }, "Measure context"),
        )),
        ctxErr,
        ctxBox,
      ),
      h("section", {}, h("h4", {}, "Messages"), msgs),
    );
    ctxForm.requestSubmit(); // show the context bar without a click
    try {
      const usage = await api("GET", teamPath(`sessions/${encodeURIComponent(id)}/usage`));
      const totals = usage.totals;
      replace(
        usageBox,
        usageBar(usageParts(usage), "Last call"),
        totals && usage.calls ? h("p", { class: "muted" }, `${usage.calls ?? 0} calls · ${Number(totals.total_tokens || 0).toLocaleString()} tokens in total`) : null,
      );
    } catch (e) {
      showError(usageErr, e);
    }
    try {
      const data = await api("GET", teamPath(`sessions/${encodeURIComponent(id)}/messages`), { query: { limit: 50 } });
      const items = data.items || [];
      replace(
        msgs,
        items.length
          ? h("ol", { class: "messages" }, items.map((m) => h("li", { class: `msg msg-${m.role}` }, h("strong", {}, m.role), " ", h("small", { class: "muted" }, when(m.created_at || m.at)), h("p", {}, m.content))))
          : empty("No messages.", "Messages posted to this session appear here."),
      );
    } catch (e) {
      replace(msgs, h("p", { class: "error", role: "alert" }, e.display || e.message));
    }
  }

  async function load() {
    showError(err, null);
    try {
      const data = await api("GET", teamPath("sessions"));
      const items = data.items || [];
      if (!items.length) {
        replace(list, empty("No sessions yet.", "Sessions appear when an agent posts messages (POST /v1/teams/TEAM/sessions/ID/messages)."));
        return;
      }
      replace(
        list,
        h(
          "ul",
          { class: "nodes" },
          items.map((s) =>
            h(
              "li",
              {},
              h(
                "button",
                { class: "node", dataset: { session: s.id }, onclick: () => openSession(s.id) },
                h("span", { class: "node-title" }, s.title || s.id),
                h("small", { class: "muted" }, `${s.message_count ?? 0} messages · ${when(s.last_activity)}`),
              ),
            ),
          ),
        ),
      );
      const first = selected || items[0].id;
      openSession(first);
    } catch (e) {
      showError(err, e);
    }
  }

  replace(root, h("div", { class: "view-head" }, h("h2", {}, "Sessions and token usage")), err, h("div", { class: "split" }, list, pane));
  load();
  return load;
}
