// The knowledge map: a project's memories grouped by entity type, the team's grouped by topic, or all of
// them drawn as a map (placed by meaning, linked to their nearest neighbours; drawn here, no CDN).

import { api, teamPath, waitForJob } from "./api.js";
import { openDetail } from "./detail.js";
import { empty, ENTITY_LABELS, field, h, replace, scopeBadge, showError, titleOf, typeBadge } from "./dom.js";

const GROUP_ORDER = ["FILE", "CODE_CELL", "DATA_TABLE", "SHEET_TABLE", "CONNECTION", "INSIGHT"];
const GROUP_TITLES = {
  FILE: "Files",
  CODE_CELL: "Code cells",
  DATA_TABLE: "Data tables",
  SHEET_TABLE: "Sheet tables",
  CONNECTION: "Connections",
  INSIGHT: "Insights",
  DOCUMENT: "Document passages",
  OTHER: "Other memories",
};
const MAX_ITEMS = 1000;

const state = { mode: "team", file: "" };

/** Every memory matching a filter, following cursors (up to MAX_ITEMS). */
export async function listAll(query) {
  const items = [];
  let cursor = null;
  do {
    const page = await api("GET", teamPath("memories"), { query: { ...query, limit: 200, cursor } });
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && items.length < MAX_ITEMS);
  return items;
}

function entityGroup(m) {
  if (m.entity_type && GROUP_TITLES[m.entity_type]) return m.entity_type;
  if (m.kind === "insight" || m.entity_type === "INSIGHT") return "INSIGHT";
  if (m.kind === "document_chunk") return "DOCUMENT";
  return "OTHER";
}

function groupBy(items, keyOf) {
  const groups = new Map();
  for (const m of items) {
    const k = keyOf(m);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(m);
  }
  return groups;
}

function node(m) {
  return h(
    "li",
    {},
    h(
      "button",
      { class: "node", dataset: { id: m.id }, onclick: () => openDetail(m.id) },
      h("span", { class: "node-title" }, titleOf(m)),
      h("span", { class: "badges" }, scopeBadge(m.scope), typeBadge(m), m.pinned ? h("span", { class: "badge pin" }, "pinned") : null),
    ),
  );
}

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#4a6fa5", "#c0504d", "#9bbb59", "#8064a2", "#f79646", "#4bacc6", "#7f7f7f", "#2c7a51"];

function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function colourOf(topic, topics) {
  return topic ? PALETTE[topics.indexOf(topic) % PALETTE.length] : "#9aa3ad";
}

/** Memories as points placed by meaning, lines to their nearest neighbours; a point opens its detail. */
function atlas(data) {
  const W = 1000;
  const H = 620;
  const at = new Map(data.nodes.map((n) => [n.id, [n.x * W, n.y * H]]));
  const topics = [...new Set(data.nodes.map((n) => n.topic).filter(Boolean))].sort();
  const lines = data.links.map((l) => {
    const [x1, y1] = at.get(l.source);
    const [x2, y2] = at.get(l.target);
    return svg("line", { x1, y1, x2, y2, class: "atlas-link", "stroke-width": 0.5 + 2.5 * Math.max(0, l.similarity - 0.5) * 2 });
  });
  const points = data.nodes.map((n) => {
    const [cx, cy] = at.get(n.id);
    const name = titleOf(n);
    return svg(
      "g",
      {
        class: "atlas-node",
        tabindex: 0,
        role: "button",
        "aria-label": `${name}${n.topic ? ` (topic ${n.topic})` : ""}`,
        "data-id": n.id,
        transform: `translate(${cx.toFixed(1)},${cy.toFixed(1)})`,
      },
      svg("circle", { r: 7, fill: colourOf(n.topic, topics) }),
      svg("text", { x: 10, y: 4, class: "atlas-label" }, name.length > 40 ? `${name.slice(0, 37)}…` : name),
      svg("title", {}, name),
    );
  });
  for (const p of points) {
    p.addEventListener("click", () => openDetail(p.getAttribute("data-id")));
    p.addEventListener("keydown", (ev) => (ev.key === "Enter" || ev.key === " ") && (ev.preventDefault(), openDetail(p.getAttribute("data-id"))));
  }
  const legend = topics.length
    ? h("p", { class: "muted atlas-legend" }, topics.map((t) => h("span", {}, h("span", { class: "swatch", style: `background:${colourOf(t, topics)}` }), ` ${t} `)))
    : null;
  return [
    h("p", { class: "muted" }, `${data.nodes.length} memories placed by meaning; a line joins a memory to a near neighbour.${data.unplaced ? ` ${data.unplaced} wait for their vectors.` : ""}`),
    svg("svg", { id: "atlas", viewBox: `-20 -20 ${W + 260} ${H + 40}`, role: "group", "aria-label": "Memories placed by meaning" }, svg("g", {}, lines), svg("g", {}, points)),
    legend,
  ];
}

function groupSection(title, items, id) {
  return h(
    "section",
    { class: "group", "aria-label": `${title} (${items.length})`, dataset: { group: id } },
    h("h3", {}, title, " ", h("span", { class: "count" }, String(items.length))),
    h("ul", { class: "nodes" }, items.map(node)),
  );
}

/** Render the knowledge map view into `root`. */
export function renderMap(root) {
  const body = h("div", { id: "map-body", class: "map-body", "aria-live": "polite" });
  const fileInput = h("input", { id: "map-file", list: "map-files", placeholder: "project id", value: state.file });
  const files = h("datalist", { id: "map-files" });
  const listError = h("p", { class: "error", role: "alert", id: "map-error" });
  const regenError = h("p", { class: "error", role: "alert", id: "regen-error" });
  const jobStatus = h("p", { class: "job-status", id: "regen-status", "aria-live": "polite" });
  const regen = h("button", { id: "regenerate", class: "secondary", type: "button" }, "Regenerate");
  const teamTab = h("button", { role: "tab", id: "tab-team", "aria-controls": "map-body" }, "Team view");
  const fileTab = h("button", { role: "tab", id: "tab-file", "aria-controls": "map-body" }, "Project view");
  const atlasTab = h("button", { role: "tab", id: "tab-atlas", "aria-controls": "map-body" }, "Map");
  const tabs = [teamTab, fileTab, atlasTab];
  const modes = ["team", "file", "atlas"];
  const fileBar = h(
    "form",
    { class: "row wrap file-bar", onsubmit: (ev) => (ev.preventDefault(), (state.file = fileInput.value.trim()), load()) },
    field("Project", fileInput),
    files,
    h("button", { type: "submit" }, "Show"),
    regen,
  );

  function setMode(mode) {
    state.mode = mode;
    tabs.forEach((tab, i) => tab.setAttribute("aria-selected", String(mode === modes[i])));
    fileBar.hidden = mode !== "file";
    load();
  }
  tabs.forEach((tab, i) => (tab.onclick = () => setMode(modes[i])));
  // Arrow keys move between the tabs (the ARIA tabs pattern).
  const tabKeys = (ev) => {
    if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
    ev.preventDefault();
    const step = ev.key === "ArrowRight" ? 1 : tabs.length - 1;
    const next = tabs[(modes.indexOf(state.mode) + step) % tabs.length];
    next.focus();
    next.click();
  };
  tabs.forEach((tab) => tab.addEventListener("keydown", tabKeys));

  regen.onclick = async () => {
    showError(regenError, null);
    const file = fileInput.value.trim();
    if (!file) return showError(regenError, new Error("Choose a project first, then regenerate its memories."));
    regen.disabled = true;
    try {
      const accepted = await api("POST", teamPath("memories/regenerate"), { body: { file_id: file } });
      const show = (status, detail) =>
        replace(
          jobStatus,
          status === "done" || status === "failed" ? null : h("progress", { "aria-label": `Regenerating ${file}` }),
          ` Regenerating ${file}: ${status}${detail ? ` (${detail})` : ""}`,
        );
      show(accepted.status || "queued", accepted.coalesced ? "joined a request already queued" : "");
      const job = await waitForJob(accepted.job_id, (j) => {
        const r = j.result && typeof j.result === "object" ? j.result : null;
        const detail = r ? Object.entries(r).filter(([, v]) => typeof v === "number").map(([k, v]) => `${k.replace(/_/g, " ")} ${v}`).join(", ") : "";
        show(j.status, detail);
      });
      if (job.status === "failed") showError(regenError, new Error(`Regeneration failed: ${job.last_error || "unknown error"}`));
      await load();
    } catch (e) {
      showError(regenError, e);
    } finally {
      regen.disabled = false;
    }
  };

  async function loadFiles() {
    try {
      const items = await listAll({ scope: "project" });
      const ids = [...new Set(items.map((m) => m.project_id).filter(Boolean))].sort();
      replace(files, ids.map((id) => h("option", { value: id })));
      if (!state.file && ids.length) {
        state.file = ids[0];
        fileInput.value = ids[0];
      }
      return ids;
    } catch {
      return [];
    }
  }

  async function load() {
    showError(listError, null);
    replace(body, h("p", { class: "muted" }, "Loading…"));
    try {
      if (state.mode === "atlas") {
        const data = await api("GET", teamPath("map"), { query: { limit: 500 } });
        if (!data.nodes.length) {
          replace(body, empty("Nothing to draw yet.", "Memories appear here placed by meaning once they have vectors; document passages and messages have their own pages."));
          return;
        }
        replace(body, atlas(data));
        return;
      }
      if (state.mode === "team") {
        const all = await listAll({ scope: "team" });
        // Document passages and chat messages have their own pages; the map shows knowledge.
        const items = all.filter((m) => m.kind !== "document_chunk" && m.kind !== "message");
        const passages = all.length - items.length;
        const note = passages
          ? h("p", { class: "muted", id: "map-hidden" }, `${passages} document passages and messages are not shown here; find them with Search or on the Documents page.`)
          : null;
        if (!items.length) {
          replace(body, empty("No team memories yet.", "Team-wide knowledge shows up here grouped by topic. Add one with ", h("code", {}, "funes add --scope team"), " or ask an agent to remember something for the team."), note);
          return;
        }
        const groups = groupBy(items, (m) => m.topic || "");
        const names = [...groups.keys()].sort((a, b) => (a === "") - (b === "") || a.localeCompare(b));
        replace(body, names.map((t) => groupSection(t || "No topic", groups.get(t), `topic:${t}`)), note);
      } else {
        if (!state.file) await loadFiles();
        if (!state.file) {
          replace(body, empty("No project memories yet.", "Memories of a project appear here grouped by entity type. Generate them through the API, or type a project id above."));
          return;
        }
        // Only the file's own memories, should the API also list what the file can see.
        const items = (await listAll({ file_id: state.file })).filter((m) => m.project_id === state.file);
        if (!items.length) {
          replace(body, empty(`No memories for “${state.file}”.`, "Check the project id, or press Regenerate to rebuild them from the project's current state."));
          return;
        }
        const groups = groupBy(items, entityGroup);
        const keys = [...GROUP_ORDER, "DOCUMENT", "OTHER"].filter((k) => groups.has(k));
        replace(body, keys.map((k) => groupSection(GROUP_TITLES[k] || ENTITY_LABELS[k] || k, groups.get(k), k)));
      }
    } catch (e) {
      replace(body);
      showError(listError, e);
    }
  }

  replace(
    root,
    h("div", { class: "view-head" }, h("h2", {}, "Knowledge map")),
    h("div", { role: "tablist", class: "tabs", "aria-label": "Map view" }, tabs),
    fileBar,
    regenError,
    jobStatus,
    listError,
    body,
  );
  loadFiles();
  setMode(state.mode);
  return load;
}
