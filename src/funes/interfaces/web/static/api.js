// The one way the UI reaches Funes: the REST API under /v1, with the key from sessionStorage.

const KEY_NAME = "funes.apiKey";

/** An API error carrying the server's {code, message, hint}. */
export class ApiError extends Error {
  constructor(status, code, message, hint) {
    super(message);
    this.status = status;
    this.code = code;
    this.hint = hint || "";
  }
  /** The message and hint as one line for display. */
  get display() {
    return this.hint ? `${this.message} ${this.hint}` : this.message;
  }
}

export function getKey() {
  return sessionStorage.getItem(KEY_NAME) || "";
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY_NAME, key);
  else sessionStorage.removeItem(KEY_NAME);
}

/** The API root: the server that served this page. */
const ROOT = location.pathname.replace(/\/ui(\/.*)?$/, "") + "/v1/";

function url(path, query) {
  const u = new URL(path.replace(/^\//, ""), location.origin + ROOT);
  if (query) {
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== "") u.searchParams.set(k, String(v));
    }
  }
  return u.toString();
}

// Read-your-writes behind a load balancer with a read replica (docs/postgres.md): the furthest
// Funes-Position a write answered with goes back on every request as Funes-Read-After.
let position = "";

function positionValue(p) {
  const [high, low] = p.split("/");
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

function notePosition(given) {
  if (!given || !/^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}$/.test(given)) return;
  if (!position || positionValue(given) > positionValue(position)) position = given;
}

/** Call the API; returns parsed JSON (null for 204) or throws ApiError. */
export async function api(method, path, { query, body, form } = {}) {
  const headers = { Accept: "application/json" };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (position) headers["Funes-Read-After"] = position;
  let payload;
  if (form) payload = form;
  else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(url(path, query), { method, headers, body: payload });
  } catch (exc) {
    throw new ApiError(0, "network", "The server could not be reached.", "Check that `funes serve` is running.");
  }
  notePosition(resp.headers.get("Funes-Position"));
  if (resp.status === 204) return null;
  const text = await resp.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { raw: text };
    }
  }
  if (!resp.ok) {
    const err = (data && data.error) || {};
    let message = err.message;
    if (!message && data && data.detail) message = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    throw new ApiError(resp.status, err.code || `http_${resp.status}`, message || `Request failed (${resp.status}).`, err.hint);
  }
  return data;
}

let team = "";

export function setTeam(t) {
  team = t;
}

export function getTeam() {
  return team;
}

/** A path under the current team. */
export function teamPath(rest) {
  return `teams/${encodeURIComponent(team)}/${rest.replace(/^\//, "")}`;
}

/** Poll a job until it finishes; calls onUpdate with each Job. */
export async function waitForJob(jobId, onUpdate, { interval = 700, maxPolls = 900 } = {}) {
  for (let i = 0; i < maxPolls; i++) {
    const job = await api("GET", `jobs/${encodeURIComponent(jobId)}`);
    onUpdate(job);
    if (job.status === "done" || job.status === "failed") return job;
    await new Promise((r) => setTimeout(r, interval));
  }
  throw new ApiError(0, "timeout", "The job is still running.", "Reload the page later to see its result.");
}
