// Boot: find out whether keys are required, sign in, learn the team, then route between views.

import { api, ApiError, getKey, getTeam, setKey, setTeam } from "./api.js";
import { renderControl } from "./control.js";
import { closeDetail } from "./detail.js";
import { renderDocuments } from "./documents.js";
import { h, replace, showError } from "./dom.js";
import { renderMap } from "./map.js";
import { renderSearch } from "./search.js";
import { renderSessions } from "./sessions.js";

const VIEWS = {
  map: renderMap,
  search: renderSearch,
  documents: renderDocuments,
  sessions: renderSessions,
  control: renderControl,
};
let refresh = null;
let authRequired = false;

function $(id) {
  return document.getElementById(id);
}

function route() {
  const name = (location.hash.replace(/^#\/?/, "").split(/[/?]/)[0] || "map").toLowerCase();
  const view = VIEWS[name] ? name : "map";
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  closeDetail();
  document.title = `Funes · ${document.querySelector(`#nav a[data-view="${view}"]`).textContent}`;
  refresh = VIEWS[view]($("view"));
}

function showLogin(message) {
  $("workspace").hidden = true;
  $("nav").hidden = true;
  $("login").hidden = false;
  showError($("login-error"), message ? { message } : null);
  $("login-key").focus();
}

function signOut() {
  setKey("");
  replace($("who"));
  showLogin("");
}

async function start() {
  showError($("boot-error"), null);
  try {
    const health = await api("GET", "health");
    authRequired = Boolean(health.auth);
    if (authRequired && !getKey()) return showLogin("");
    const me = await api("GET", "me");
    setTeam(me.team);
    replace(
      $("who"),
      h("span", {}, "Team ", h("strong", { id: "team-name" }, me.team), me.role ? ` · ${me.role}` : ""),
      authRequired ? h("button", { class: "secondary small", id: "sign-out", onclick: signOut }, "Sign out") : null,
    );
    $("login").hidden = true;
    $("nav").hidden = false;
    $("workspace").hidden = false;
    route();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      setKey("");
      return showLogin(getTeam() ? "Your key is no longer valid; enter another." : err.display);
    }
    showError($("boot-error"), err);
  }
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  setKey($("login-key").value.trim());
  $("login-key").value = "";
  start();
});

window.addEventListener("hashchange", route);
window.addEventListener("funes:changed", () => {
  if (refresh) refresh();
});
document.addEventListener("keydown", (ev) => {
  if (ev.key === "Escape" && !$("detail").hidden && !$("confirm-dialog").open) closeDetail();
});

start();
