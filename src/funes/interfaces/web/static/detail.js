// The detail panel: one memory's fields, a machine's proposal on it, its version history, and the actions on it.

import { api, teamPath } from "./api.js";
import { confirmDialog, field, h, replace, scopeBadge, showError, titleOf, typeBadge, when } from "./dom.js";

const panel = () => document.getElementById("detail");
let current = null;
let opener = null; // the control that opened the panel gets focus back when it closes

/** Tell the views that memories changed (they refresh what they show). */
export function changed(detail) {
  window.dispatchEvent(new CustomEvent("funes:changed", { detail }));
}

export function closeDetail() {
  const el = panel();
  const wasOpen = !el.hidden;
  el.hidden = true;
  replace(el);
  current = null;
  document.getElementById("workspace").classList.remove("with-detail");
  if (wasOpen && opener) {
    const id = opener.dataset && opener.dataset.id;
    const again = id ? document.querySelector(`[data-id="${CSS.escape(id)}"]`) : null;
    const target = again || (document.body.contains(opener) ? opener : null);
    if (target) target.focus();
  }
  opener = null;
}

/** Open a memory by id in the detail panel. */
export async function openDetail(id, { focus = true } = {}) {
  const el = panel();
  if (el.hidden) opener = document.activeElement;
  el.hidden = false;
  document.getElementById("workspace").classList.add("with-detail");
  replace(el, h("p", { class: "muted" }, "Loading…"));
  try {
    current = await api("GET", teamPath(`memories/${encodeURIComponent(id)}`));
    render(current);
  } catch (err) {
    replace(el, header("Memory"), h("p", { class: "error", role: "alert" }, err.display || err.message));
  }
  if (focus) el.focus();
}

function header(title) {
  return h(
    "div",
    { class: "detail-head" },
    h("h2", { id: "detail-title" }, title),
    h("button", { class: "icon", "aria-label": "Close detail", onclick: closeDetail }, "×"),
  );
}

function row(label, value) {
  return [h("dt", {}, label), h("dd", {}, value === null || value === undefined || value === "" ? "—" : value)];
}

function render(m) {
  const el = panel();
  el.setAttribute("aria-labelledby", "detail-title");
  const actionError = h("p", { class: "error", role: "alert", id: "detail-error" });
  const summary = (m.metadata && m.metadata.summary) || m.summary;
  const source = m.source
    ? [m.source.type, m.source.uri].filter(Boolean).join(" · ")
    : "written directly";
  replace(
    el,
    header(titleOf(m)),
    h("div", { class: "badges" }, scopeBadge(m.scope), typeBadge(m), m.pinned ? h("span", { class: "badge pin" }, "pinned") : null),
    h(
      "div",
      { class: "row wrap actions" },
      h("button", { id: "edit-memory", onclick: () => renderEdit(m) }, "Edit"),
      h(
        "button",
        { id: "pin-memory", class: "secondary", "aria-pressed": m.pinned ? "true" : "false", onclick: () => togglePin(m, actionError) },
        m.pinned ? "Unpin" : "Pin",
      ),
      h("button", { id: "delete-memory", class: "danger", onclick: () => remove(m, actionError) }, "Delete"),
    ),
    actionError,
    summary ? h("section", {}, h("h3", {}, "Summary"), h("p", { class: "content" }, summary)) : null,
    h("section", {}, h("h3", {}, "Content"), h("p", { class: "content", id: "detail-content" }, m.content)),
    proposalSection(m),
    h(
      "dl",
      { class: "props" },
      row("Scope", m.scope === "project" ? `project ${m.project_id || ""}`.trim() : m.scope === "session" ? `session ${m.session_id || ""}` : m.scope),
      row("Topic", m.topic),
      row("Attribution", h("span", { id: "detail-attribution" }, m.attribution)),
      row("Written by", h("span", { id: "detail-author" }, m.author)),
      row("Valid since", when(m.valid_from)),
      row("Source", source),
      row("Entity", m.entity_type ? `${m.entity_type} ${m.entity_id || ""}` : null),
      row("Memory type", m.memory_type),
      row("Importance", m.importance === null || m.importance === undefined ? null : Number(m.importance).toFixed(2)),
      row("Pinned", m.pinned ? "yes" : "no"),
      row("Access count", String(m.access_count ?? 0)),
      row("Last accessed", when(m.last_accessed)),
      row("Version", String(m.version ?? 1)),
      row("Created", when(m.created_at)),
      row("Updated", when(m.updated_at)),
      row("Id", h("code", {}, m.id)),
    ),
    m.metadata && Object.keys(m.metadata).length
      ? h("details", { class: "metadata" }, h("summary", {}, "Metadata"), h("pre", {}, JSON.stringify(m.metadata, null, 2)))
      : null,
    historySection(m),
  );
}

// A machine's new text for a memory a person wrote or pinned: shown beside the current text, never applied alone.
function proposalSection(m) {
  const p = m.proposal;
  if (!p) return null;
  const err = h("p", { class: "error", role: "alert" });
  const decide = (verb) => async () => {
    showError(err, null);
    try {
      const updated = await api("POST", teamPath(`memories/${encodeURIComponent(m.id)}/proposal/${verb}`));
      current = updated;
      render(updated);
      document.getElementById("edit-memory").focus();
      changed({ id: m.id });
    } catch (e) {
      showError(err, e);
    }
  };
  return h(
    "section",
    { class: "proposal", id: "proposal", "aria-labelledby": "proposal-title" },
    h("h3", { id: "proposal-title" }, "Proposed change"),
    h(
      "p",
      { class: "muted" },
      `Suggested by ${p.author || "a machine process"}${p.reason ? ` (${p.reason})` : ""}, ${when(p.proposed_at)}. `,
      "Your text stays until you accept.",
    ),
    h("p", { class: "content", id: "proposal-content" }, p.content),
    h(
      "div",
      { class: "row" },
      h("button", { id: "accept-proposal", onclick: decide("accept") }, "Accept"),
      h("button", { id: "dismiss-proposal", class: "secondary", onclick: decide("dismiss") }, "Dismiss"),
    ),
    err,
  );
}

function historySection(m) {
  const list = h("div", { id: "history-list" });
  const det = h(
    "details",
    { class: "history", id: "history" },
    h("summary", {}, `Version history (version ${m.version ?? 1})`),
    list,
  );
  det.addEventListener("toggle", () => {
    if (det.open) loadHistory(m, list);
  });
  return det;
}

async function loadHistory(m, list) {
  replace(list, h("p", { class: "muted" }, "Loading…"));
  const err = h("p", { class: "error", role: "alert" });
  try {
    const data = await api("GET", teamPath(`memories/${encodeURIComponent(m.id)}/history`));
    const currentVersion = (data.current || m).version;
    const versions = (data.versions || []).filter((v) => !v.current && v.version !== currentVersion);
    if (!versions.length) {
      replace(list, h("p", { class: "muted" }, "No earlier versions. Editing the content keeps the old text here."));
      return;
    }
    replace(
      list,
      h(
        "ol",
        { class: "versions", reversed: true },
        versions
          .slice()
          .sort((a, b) => b.version - a.version)
          .map((v) =>
            h(
              "li",
              { class: "version", dataset: { version: v.version } },
              h("div", { class: "row spread" }, h("strong", {}, `Version ${v.version}`), h("small", {}, when(v.updated_at))),
              v.title ? h("p", { class: "muted" }, v.title) : null,
              h("p", { class: "content" }, v.summary || v.content),
              h(
                "button",
                {
                  class: "secondary",
                  "aria-label": `Restore version ${v.version}`,
                  onclick: () => restore(m, v.version, err),
                },
                "Restore",
              ),
            ),
          ),
      ),
      err,
    );
  } catch (e) {
    replace(list, err);
    showError(err, e);
  }
}

async function restore(m, version, errEl) {
  showError(errEl, null);
  try {
    const updated = await api("POST", teamPath(`memories/${encodeURIComponent(m.id)}/restore`), { body: { version } });
    current = updated;
    render(updated);
    document.getElementById("history").open = true;
    changed({ id: m.id });
  } catch (e) {
    showError(errEl, e);
  }
}

async function togglePin(m, errEl) {
  showError(errEl, null);
  try {
    const updated = await api("PATCH", teamPath(`memories/${encodeURIComponent(m.id)}`), { body: { pinned: !m.pinned } });
    render(updated);
    document.getElementById("pin-memory").focus();
    changed({ id: m.id });
  } catch (e) {
    showError(errEl, e);
  }
}

async function remove(m, errEl) {
  showError(errEl, null);
  const ok = await confirmDialog({
    title: "Delete this memory?",
    text: `“${titleOf(m)}” will be removed for everyone on the team. This cannot be undone.`,
    okLabel: "Delete",
  });
  if (!ok) return;
  try {
    await api("DELETE", teamPath(`memories/${encodeURIComponent(m.id)}`));
    closeDetail();
    changed({ id: m.id, deleted: true });
  } catch (e) {
    showError(errEl, e);
  }
}

function renderEdit(m) {
  const el = panel();
  const title = h("input", { id: "edit-title", value: m.title || "" });
  const content = h("textarea", { id: "edit-content", rows: 8, required: true });
  content.value = m.content;
  const err = h("p", { class: "error", role: "alert" });
  const form = h(
    "form",
    {
      class: "stack",
      onsubmit: async (ev) => {
        ev.preventDefault();
        showError(err, null);
        const body = {};
        if (title.value !== (m.title || "")) body.title = title.value;
        if (content.value !== m.content) body.content = content.value;
        if (!Object.keys(body).length) return render(m);
        try {
          const updated = await api("PATCH", teamPath(`memories/${encodeURIComponent(m.id)}`), { body });
          current = updated;
          render(updated);
          document.getElementById("edit-memory").focus();
          changed({ id: m.id });
        } catch (e) {
          showError(err, e);
        }
      },
    },
    field("Title", title),
    field("Content", content, "Saving re-embeds the memory and keeps the previous text in its history."),
    h(
      "div",
      { class: "row" },
      h("button", { type: "submit", id: "save-memory" }, "Save"),
      h("button", { type: "button", class: "secondary", onclick: () => render(m) }, "Cancel"),
    ),
    err,
  );
  replace(el, header(`Edit: ${titleOf(m)}`), form);
  title.focus();
}
