// Memory control: stats, clearing session or project memory (typed confirmation), per-project settings.

import { api, teamPath } from "./api.js";
import { changed } from "./detail.js";
import { bytes, confirmDialog, field, h, replace, showError } from "./dom.js";

const SIZE_KEYS = /bytes|size/i;

const LABELS = {
  records: "Records",
  size_bytes: "Database size",
  db_size_bytes: "Database size",
  storage_bytes: "Storage",
  content_bytes: "Stored text",
  by_scope: "By tier (scope)",
  by_tier: "By tier",
  by_kind: "By kind",
  by_type: "By memory type",
  by_source_type: "By source type",
  pending_vectors: "Waiting for vectors",
  jobs: "Background jobs",
};

function label(key) {
  if (LABELS[key]) return LABELS[key];
  const words = key.replace(/^by_/, "by ").replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function fmt(key, v) {
  return SIZE_KEYS.test(key) ? bytes(v) : Number(v).toLocaleString();
}

// What the stats answer says twice (the API keeps both names for its callers) or only as raw parts.
const SAME_AS = { db_size_bytes: "size_bytes", by_scope: "by_tier" };
const RAW = new Set(["storage"]); // its parts are the cards and tables shown already

/** Stats as headline numbers and one small table per breakdown, each said once, in words. */
export function statsView(stats) {
  const cards = [];
  const tables = [];
  const data = stats || {};
  for (const [k, v] of Object.entries(data)) {
    if (k.startsWith("embedder")) continue; // model identity, not a count
    if (RAW.has(k) || (SAME_AS[k] && SAME_AS[k] in data)) continue;
    if (typeof v === "number") cards.push(h("div", { class: "stat", dataset: { key: k } }, h("span", { class: "stat-value" }, fmt(k, v)), h("span", { class: "stat-label" }, label(k))));
    else if (v && typeof v === "object" && !Array.isArray(v)) {
      const rows = Object.entries(v).filter(([, n]) => typeof n === "number");
      if (!rows.length) continue;
      tables.push(
        h(
          "table",
          { class: "breakdown", dataset: { key: k } },
          h("caption", {}, label(k)),
          h("tbody", {}, rows.map(([name, n]) => h("tr", {}, h("th", { scope: "row" }, name.includes("_") ? label(name) : name), h("td", {}, fmt(name, n))))),
        ),
      );
    }
  }
  return [h("div", { class: "stats" }, cards), h("div", { class: "breakdowns" }, tables)];
}

function counts(result) {
  if (!result || typeof result !== "object") return "Done.";
  const parts = Object.entries(result)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => `${label(k)}: ${v}`);
  return parts.length ? `Removed: ${parts.join(", ")}.` : "Done.";
}

function clearForm({ id, title, what, inputLabel, key, placeholder, onDone }) {
  const input = h("input", { id: `${id}-id`, placeholder, list: `${id}-options` });
  const options = h("datalist", { id: `${id}-options` });
  const err = h("p", { class: "error", role: "alert", id: `${id}-error` });
  const out = h("p", { class: "muted", id: `${id}-result`, "aria-live": "polite" });
  const form = h(
    "form",
    {
      class: "card stack",
      id,
      "aria-labelledby": `${id}-title`,
      onsubmit: async (ev) => {
        ev.preventDefault();
        showError(err, null);
        out.textContent = "";
        const value = input.value.trim();
        if (!value) return showError(err, new Error(`Enter the ${inputLabel.toLowerCase()} to clear.`));
        const ok = await confirmDialog({
          title,
          text: `This deletes ${what} of “${value}”. It cannot be undone.`,
          typed: value,
          okLabel: "Clear",
        });
        if (!ok) return;
        try {
          const result = await api("POST", teamPath("clear"), { body: { [key]: value, confirm: value } });
          out.textContent = counts(result);
          changed({ cleared: value });
          onDone && onDone();
        } catch (e) {
          showError(err, e);
        }
      },
    },
    h("h3", { id: `${id}-title` }, title),
    h("p", { class: "muted" }, `Deletes ${what}. You will be asked to type the id to confirm.`),
    field(inputLabel, input),
    options,
    h("button", { type: "submit", class: "danger" }, title),
    err,
    out,
  );
  return { form, options };
}

function settingsForm() {
  const file = h("input", { id: "settings-file", placeholder: "project id" });
  const enabled = h("input", { id: "settings-enabled", type: "checkbox" });
  const chunk = h("input", { id: "settings-chunk", type: "number", min: 1, step: 1 });
  const k = h("input", { id: "settings-k", type: "number", min: 1, step: 1 });
  const fields = h(
    "fieldset",
    { disabled: true, id: "settings-fields" },
    h("legend", {}, "Settings"),
    h("div", { class: "field check" }, enabled, h("label", { for: enabled.id }, "Memory enabled for this project")),
    field("Chunk size (tokens)", chunk),
    field("Retrieval k (results per query)", k),
    h("button", { type: "submit", id: "settings-save" }, "Save settings"),
  );
  const err = h("p", { class: "error", role: "alert", id: "settings-error" });
  const out = h("p", { class: "muted", id: "settings-result", "aria-live": "polite" });
  let loadedFor = "";
  const path = () => teamPath(`projects/${encodeURIComponent(loadedFor)}/settings`);
  async function loadSettings() {
    showError(err, null);
    out.textContent = "";
    const id = file.value.trim();
    if (!id) return showError(err, new Error("Enter a project id, then load its settings."));
    try {
      loadedFor = id;
      const s = await api("GET", path());
      enabled.checked = s.enabled !== false;
      chunk.value = s.chunk_size ?? "";
      k.value = s.retrieval_k ?? "";
      fields.disabled = false;
    } catch (e) {
      fields.disabled = true;
      showError(err, e);
    }
  }
  return h(
    "form",
    {
      class: "card stack",
      id: "settings",
      novalidate: true, // the server validates; its message shows next to the button
      "aria-labelledby": "settings-title",
      onsubmit: async (ev) => {
        ev.preventDefault();
        showError(err, null);
        if (ev.submitter && ev.submitter.id === "settings-load") return loadSettings();
        try {
          const body = { enabled: enabled.checked, chunk_size: Number(chunk.value), retrieval_k: Number(k.value) };
          const s = await api("PUT", path(), { body });
          chunk.value = s.chunk_size ?? chunk.value;
          k.value = s.retrieval_k ?? k.value;
          out.textContent = `Saved settings for ${loadedFor}.`;
        } catch (e) {
          showError(err, e);
        }
      },
    },
    h("h3", { id: "settings-title" }, "Project settings"),
    h("div", { class: "row wrap end-align" }, field("Project", file), h("button", { type: "submit", class: "secondary", id: "settings-load", formnovalidate: true }, "Load")),
    fields,
    err,
    out,
  );
}

/** Render the memory-control view into `root`. */
export function renderControl(root) {
  const statsBox = h("div", { id: "stats", "aria-live": "polite" });
  const statsErr = h("p", { class: "error", role: "alert", id: "stats-error" });
  async function loadStats() {
    showError(statsErr, null);
    try {
      replace(statsBox, statsView(await api("GET", teamPath("stats"))));
    } catch (e) {
      showError(statsErr, e);
    }
  }
  const session = clearForm({
    id: "clear-session",
    title: "Clear session memory",
    what: "the messages and session-scoped memories",
    inputLabel: "Session id",
    key: "session_id",
    placeholder: "session id",
    onDone: loadStats,
  });
  const project = clearForm({
    id: "clear-project",
    title: "Clear project memory",
    what: "every memory and document of the project",
    inputLabel: "Project id",
    key: "file_id",
    placeholder: "project id",
    onDone: loadStats,
  });
  api("GET", teamPath("sessions"))
    .then((d) => replace(session.options, (d.items || []).map((s) => h("option", { value: s.id }))))
    .catch(() => {});
  replace(
    root,
    h("div", { class: "view-head" }, h("h2", {}, "Memory control"), h("button", { class: "secondary", onclick: loadStats, id: "stats-refresh" }, "Refresh stats")),
    h("section", { class: "card", "aria-labelledby": "stats-title" }, h("h3", { id: "stats-title" }, "Stats"), statsErr, statsBox),
    h("div", { class: "grid2" }, session.form, project.form),
    settingsForm(),
  );
  loadStats();
  return loadStats;
}
