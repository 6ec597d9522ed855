// Documents: upload (drop or pick), watch indexing, list, re-index and remove.

import { api, teamPath, waitForJob } from "./api.js";
import { confirmDialog, empty, field, h, replace, showError, when } from "./dom.js";

let pollTimer = null;

function statusCell(doc) {
  const status = doc.status || "queued";
  const bits = [h("span", { class: `badge status status-${status}` }, status)];
  if (status === "indexing") {
    const p = doc.progress;
    let frac = null;
    if (typeof p === "number") frac = p > 1 ? p / 100 : p;
    else if (p && typeof p === "object") {
      if (typeof p.fraction === "number") frac = p.fraction;
      else if (p.total) frac = (p.done || p.current || 0) / p.total;
    }
    if (frac !== null) {
      bits.push(h("progress", { max: 1, value: Math.max(0, Math.min(1, frac)), "aria-label": `Indexing ${doc.name}` }), ` ${(frac * 100).toFixed(0)}%`);
    } else bits.push(h("progress", { "aria-label": `Indexing ${doc.name}` }));
  }
  if (status === "failed" && doc.error) bits.push(h("span", { class: "error-inline" }, ` ${doc.error}`));
  if (doc.note) bits.push(h("span", { class: "error-inline block" }, doc.note));
  return bits;
}

/**
 * One row per document. The API lists uploads whose job is not done (id = job id) beside the
 * documents; a re-index is such a job too. A job for a name that already has a document shows as
 * that document's state instead of a second row; a failed job whose document records the same
 * failure is dropped, and a failed re-index of an indexed document shows as a note on it.
 */
export function mergeUploads(items) {
  const docs = items.filter((d) => !d.job_id).map((d) => ({ ...d }));
  const byName = new Map();
  for (const d of docs) if (!byName.has(d.name)) byName.set(d.name, d);
  const uploads = [];
  for (const u of items.filter((d) => d.job_id)) {
    const doc = byName.get(u.name);
    if (!doc) uploads.push(u);
    else if (u.status === "queued" || u.status === "indexing") Object.assign(doc, { status: u.status, progress: u.progress });
    else if (u.status === "failed" && doc.status !== "failed" && (u.created_at || "") > (doc.updated_at || "")) {
      doc.note = `Last re-index failed: ${u.error || "unknown error"}`;
    }
  }
  return [...uploads, ...docs];
}

/** Render the documents view into `root`. */
export function renderDocuments(root) {
  // The drop zone is the control people use; the hidden picker still needs a name for assistive technology.
  const picker = h("input", {
    type: "file",
    id: "doc-file",
    multiple: true,
    class: "visually-hidden",
    tabindex: -1,
    "aria-label": "Choose documents to upload",
  });
  const fileId = h("input", { id: "doc-file-id", placeholder: "optional" });
  const scope = h(
    "select",
    { id: "doc-scope" },
    h("option", { value: "" }, "Default"),
    h("option", { value: "team" }, "Team"),
    h("option", { value: "project" }, "Project"),
  );
  const uploadError = h("p", { class: "error", role: "alert", id: "upload-error" });
  const uploadStatus = h("p", { class: "muted", id: "upload-status", "aria-live": "polite" });
  const listError = h("p", { class: "error", role: "alert", id: "docs-error" });
  const list = h("div", { id: "docs-list" });
  const drop = h(
    "div",
    {
      class: "dropzone",
      id: "dropzone",
      tabindex: 0,
      role: "button",
      "aria-label": "Upload documents: drop files here or press Enter to choose",
      onclick: () => picker.click(),
      onkeydown: (ev) => {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          picker.click();
        }
      },
      ondragover: (ev) => {
        ev.preventDefault();
        drop.classList.add("over");
      },
      ondragleave: () => drop.classList.remove("over"),
      ondrop: (ev) => {
        ev.preventDefault();
        drop.classList.remove("over");
        upload([...ev.dataTransfer.files]);
      },
    },
    h("strong", {}, "Drop files here"),
    h("span", {}, " or press to choose (PDF, spreadsheets, text, Markdown)"),
  );
  picker.addEventListener("change", () => {
    upload([...picker.files]);
    picker.value = "";
  });

  async function upload(files) {
    showError(uploadError, null);
    for (const file of files) {
      const form = new FormData();
      form.append("file", file, file.name);
      if (scope.value) form.append("scope", scope.value);
      if (fileId.value.trim()) form.append("file_id", fileId.value.trim());
      uploadStatus.textContent = `Uploading ${file.name}…`;
      try {
        await api("POST", teamPath("documents"), { form });
        uploadStatus.textContent = `${file.name} accepted; indexing runs in the background.`;
      } catch (e) {
        uploadStatus.textContent = "";
        showError(uploadError, e);
      }
    }
    await load();
  }

  async function act(doc, what, errEl) {
    showError(errEl, null);
    try {
      if (what === "reindex") {
        const accepted = await api("POST", teamPath(`documents/${encodeURIComponent(doc.id)}/reindex`));
        const cell = errEl.closest("tr") && errEl.closest("tr").querySelector(".doc-status");
        if (accepted && accepted.job_id) {
          const job = await waitForJob(accepted.job_id, (j) => {
            const status = j.status === "running" ? "indexing" : j.status === "done" ? "indexed" : j.status;
            if (cell && document.body.contains(cell)) replace(cell, statusCell({ ...doc, status, progress: null }));
          });
          if (job.status === "failed") {
            showError(errEl, new Error(`Re-indexing failed: ${job.last_error || "unknown error"}`));
            return; // keep the reason beside the row's buttons
          }
        }
      } else {
        const ok = await confirmDialog({
          title: "Remove this document?",
          text: `${doc.name} and its indexed passages will be removed.`,
          okLabel: "Remove",
        });
        if (!ok) return;
        await api("DELETE", teamPath(`documents/${encodeURIComponent(doc.id)}`));
      }
      await load();
    } catch (e) {
      showError(errEl, e);
    }
  }

  function docRow(doc) {
    const err = h("span", { class: "error", role: "alert" });
    const settled = doc.status === "indexed" || doc.status === "failed";
    return h(
      "tr",
      { dataset: { id: doc.id, status: doc.status } },
      h("th", { scope: "row" }, h("span", { class: "doc-name" }, doc.name), h("small", { class: "muted block" }, doc.uri && doc.uri !== doc.name ? doc.uri : "")),
      h("td", { class: "doc-status" }, statusCell(doc)),
      h("td", {}, doc.chunks ?? doc.chunk_count ?? "—"),
      h("td", {}, when(doc.updated_at || doc.indexed_at || doc.created_at)),
      h(
        "td",
        {},
        h(
          "div",
          { class: "row wrap" },
          // A document still on its way in has nothing to re-index or remove yet.
          settled ? h("button", { class: "secondary", "aria-label": `Re-index ${doc.name}`, onclick: () => act(doc, "reindex", err) }, "Re-index") : null,
          settled ? h("button", { class: "danger", "aria-label": `Remove ${doc.name}`, onclick: () => act(doc, "remove", err) }, "Remove") : null,
        ),
        err,
      ),
    );
  }

  async function load() {
    clearTimeout(pollTimer);
    try {
      const data = await api("GET", teamPath("documents"));
      showError(listError, null);
      const items = mergeUploads(data.items || []);
      if (!items.length) {
        replace(list, empty("No documents yet.", "Drop a PDF, spreadsheet or text file above; its passages become searchable once indexed."));
      } else {
        replace(
          list,
          h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              { class: "docs" },
              h("caption", { class: "visually-hidden" }, "Documents"),
              h("thead", {}, h("tr", {}, ["Name", "Status", "Passages", "Updated", "Actions"].map((t) => h("th", { scope: "col" }, t)))),
              h("tbody", {}, items.map(docRow)),
            ),
          ),
        );
      }
      if (items.some((d) => d.status === "queued" || d.status === "indexing") && document.body.contains(list)) {
        pollTimer = setTimeout(load, 800);
      }
    } catch (e) {
      showError(listError, e);
    }
  }

  replace(
    root,
    h("div", { class: "view-head" }, h("h2", {}, "Documents")),
    drop,
    picker,
    h("div", { class: "row wrap" }, field("Scope", scope), field("Project id", fileId, "Ties the document to a project.")),
    uploadStatus,
    uploadError,
    listError,
    list,
  );
  load();
  return load;
}
