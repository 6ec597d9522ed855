// Small DOM helpers: build elements without innerHTML, so stored text is never parsed as markup.

/** Create an element: h("button", {class: "x", onclick: fn}, "text", child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** Replace an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Show an error next to the action that failed (an aria-live region), or clear it. */
export function showError(el, err) {
  if (!el) return;
  el.textContent = err ? (err.display || err.message || String(err)) : "";
}

/** A labelled form control. */
export function field(label, control, hint) {
  if (!control.id) control.id = `f-${Math.random().toString(36).slice(2, 9)}`;
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hint ? h("small", {}, hint) : null);
}

/** An empty state that says what to do. */
export function empty(title, ...what) {
  return h("div", { class: "empty" }, h("p", { class: "empty-title" }, title), h("p", {}, ...what));
}

/** A short human date-time, or an em dash. */
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** Bytes as KB/MB. */
export function bytes(n) {
  if (n === null || n === undefined || Number.isNaN(Number(n))) return "—";
  const units = ["B", "KB", "MB", "GB"];
  let v = Number(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** Debounce a function. */
export function debounce(fn, ms) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

const SCOPE_LABEL = { project: "project", team: "team", session: "session" };

/** The scope badge: file / team / session. */
export function scopeBadge(scope) {
  const label = SCOPE_LABEL[scope] || scope || "?";
  return h("span", { class: `badge scope scope-${label}`, title: `Scope: ${label}` }, label);
}

export const ENTITY_LABELS = {
  FILE: "File",
  CODE_CELL: "Code cell",
  DATA_TABLE: "Data table",
  SHEET_TABLE: "Sheet table",
  CONNECTION: "Connection",
  INSIGHT: "Insight",
};

/** What kind of thing a memory is: its entity type, else insight/document chunk/memory type. */
export function typeOf(m) {
  if (m.entity_type) return ENTITY_LABELS[m.entity_type] || m.entity_type;
  if (m.kind === "insight") return "Insight";
  if (m.kind === "document_chunk") return m.source && m.source.type ? `${m.source.type} chunk` : "Document chunk";
  if (m.kind === "message") return "Message";
  return m.memory_type || m.kind || "memory";
}

/** The type badge. */
export function typeBadge(m) {
  return h("span", { class: "badge type" }, typeOf(m));
}

/** A memory's display title: its title, else the start of its content. */
export function titleOf(m) {
  // A Markdown heading is a title, not text: its "#" markers never show (a note's first heading names it).
  if (m.title) return m.title.replace(/^#{1,6}\s+/, "").trim() || m.id;
  const raw = (m.content || "").trim();
  const heading = raw.match(/^#{1,6}\s+(.+)$/m);
  const text = (heading && raw.startsWith("#") ? heading[1] : raw).replace(/\s+/g, " ").trim();
  return text.length > 80 ? `${text.slice(0, 77)}…` : text || m.id;
}

/** A typed-confirmation or plain confirmation dialog; resolves true when confirmed. */
export function confirmDialog({ title, text, typed, okLabel = "Confirm" }) {
  const dlg = document.getElementById("confirm-dialog");
  const input = document.getElementById("confirm-input");
  const ok = document.getElementById("confirm-ok");
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-typed").hidden = !typed;
  document.getElementById("confirm-label").textContent = typed ? `Type “${typed}” to confirm` : "";
  ok.textContent = okLabel;
  input.value = "";
  ok.disabled = Boolean(typed);
  input.oninput = () => {
    ok.disabled = typed ? input.value !== typed : false;
  };
  return new Promise((resolve) => {
    dlg.addEventListener(
      "close",
      () => resolve(dlg.returnValue === "ok" && (!typed || input.value === typed)),
      { once: true },
    );
    dlg.returnValue = "";
    dlg.showModal();
    (typed ? input : ok).focus();
  });
}
