// The dashboard's script, inlined into the page runneld serves at `GET /` as a module. It talks
// to runneld through the JavaScript client runneld serves (`/runnel.js`, clients/js/runnel.js):
// one connection over `GET /ws`, which reconnects and resumes every panel's subscription from
// its last position, reporting what it could not resume as gaps. JSDoc types are checked by
// `tsc -p web/dashboard` (no build step: the browser runs this file as written).
import { connect, Gap, RunnelError } from "/runnel.js";
// `MapTable`, a map subject's view, is map-table.js's, a classic script put in line before this one.

// ---- Limits -------------------------------------------------------------------------------
const MAX_LOG = 1000;          // log lines kept per panel
const MAX_POINTS = 10000;      // chart points kept per series
const MAX_ROWS = 500;          // table rows (source subjects) per panel
const WINDOW_MS = 60000;       // a live chart's time window
const LIST_EVERY_MS = 1500;    // subjects list refresh
const TOKEN_KEY = "runnel.token";
// `?token_url=URL`: a page inside a web app gets its tokens from the app (short-lived JWTs its
// backend mints for the user): fetched, with the app's cookies, for every connection and again
// before each one expires (the client's token function). No token is asked for or kept then.
const TOKEN_URL = new URLSearchParams(location.search).get("token_url");
const COLORS = ["#0b5cad", "#c2410c", "#146c2e", "#7e22ce", "#a4161a", "#0e7490", "#854d0e", "#be185d"];

// ---- The line protocol's shapes, as far as the page reads them ------------------------------
/** @typedef {import("/runnel.js").Client} Client */
/**
 * One subject of a `list` reply.
 * @typedef {object} SubjectEntry
 * @property {string} subject
 * @property {string} kind
 * @property {number} [capacity]
 * @property {number} [keys] a map's keys now
 * @property {boolean} [durable]
 * @property {boolean} [terminated]
 * @property {number} subscribers
 * @property {number} published
 * @property {string} [pos]
 */
/**
 * A stage of a `sub` request's `ops`.
 * @typedef {{ op: "filter" | "map", expr: string } | { op: "throttle", seconds: number }} Stage
 */
/** @typedef {{ code?: string, message?: string, stage?: number }} PanelError */

/**
 * The element with this id, which the page's markup has, of this type.
 * @template {HTMLElement} T
 * @param {string} id
 * @param {{ new (): T }} type
 * @returns {T}
 */
function byId(id, type) {
  const node = document.getElementById(id);
  if (!(node instanceof type)) throw new Error(`#${id} is missing or not a ${type.name}`);
  return node;
}
/**
 * A new element: attributes (`text` sets its text, a function is a listener of the event its
 * key names after `on`), then its children.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, string | number | ((event: Event) => void)>} [attrs]
 * @param {...(Node | string)} children
 * @returns {HTMLElementTagNameMap[K]}
 */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = String(value);
    else if (typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, String(value));
  }
  for (const child of children) node.append(child);
  return node;
}
/** @param {number} ms */
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
/** @param {string} subject */
const isPattern = (subject) => subject.split(".").some((token) => token === "*" || token === ">");

// ---- The connection: the client of /runnel.js, made again when a token is given -------------
/** @type {Client | null} connected, or reconnecting by itself; null before, or after it gave up */
let client = null;
let attempt = 0;          // failed first connections in a row
let needsToken = false;

/**
 * @param {string} state
 * @param {string} text
 */
function setConnState(state, text) {
  const badge = byId("conn-state", HTMLElement);
  badge.dataset.state = state;
  badge.textContent = text;
}

/** A token from `TOKEN_URL`: its answer's text. */
async function fetchToken() {
  const url = /** @type {string} */ (TOKEN_URL);
  const response = await fetch(url, { credentials: "include", cache: "no-store" });
  if (!response.ok) throw new RunnelError("unauthorized", `${url} answered ${response.status}`);
  return (await response.text()).trim();
}

/**
 * Connects with `token` (none: without authenticating; a function: the app's, `TOKEN_URL`). A
 * refused token asks for another; a failed first connection is tried again, with backoff; once
 * connected, the client reconnects by itself.
 * @param {string | (() => Promise<string>) | null} token
 */
async function open(token) {
  setConnState("connecting", attempt ? `reconnecting (attempt ${attempt + 1})…` : "connecting…");
  try {
    adopt(await connect(location.origin, { token: token ?? undefined, backoff: [0.25, 5], onDisconnect, onReconnect }));
  } catch (error) {
    if (error instanceof RunnelError && error.code === "unauthorized") {
      const whose = typeof token === "function" ? "the app's token was refused: " : "the saved token was refused: ";
      askForToken(token ? whose + error.message : undefined);
      return;
    }
    const delay = Math.min(5000, 250 * 2 ** attempt) * (0.8 + Math.random() * 0.4);
    attempt += 1;
    setConnState("disconnected", `disconnected; retrying in ${(delay / 1000).toFixed(1)} s`);
    window.setTimeout(() => open(token), delay);
  }
}

/**
 * The client to use from now on: the panels subscribe through it.
 * @param {Client} made
 */
function adopt(made) {
  const before = client;
  client = made;
  attempt = 0;
  for (const panel of panels) panel.detach();
  before?.close();
  setConnState("connected", "connected");
  for (const panel of panels) panel.subscribe();
  refreshSubjects();
}

/** @param {RunnelError} reason */
function onDisconnect(reason) {
  for (const panel of panels) panel.disconnected();
  if (reason.code === "unauthorized" && !TOKEN_URL) {
    // The client does not reconnect with a token the server no longer takes (the app's tokens
    // are fetched again for the reconnect).
    client = null;
    askForToken(reason.message);
  } else if (reason.code === "connection_lost") {
    setConnState("disconnected", "disconnected; reconnecting…");
  } else {
    setConnState("disconnected", `closed by the server: ${reason.code}; reconnecting…`);
  }
}

function onReconnect() {
  setConnState("connected", "connected");
  for (const panel of panels) panel.reconnected();
}

// ---- Auth: asked for on an `unauthorized`, kept in sessionStorage only --------------------
/** @param {string} [why] */
function askForToken(why) {
  const form = byId("token-form", HTMLFormElement);
  byId("token-status", HTMLElement).textContent = why || "";
  setConnState("token", "a token is needed");
  if (needsToken) return;
  needsToken = true;
  form.hidden = false;
  byId("token-input", HTMLInputElement).focus();
}

byId("token-form", HTMLFormElement).addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = byId("token-input", HTMLInputElement).value;
  try {
    const made = await connect(location.origin, { token, backoff: [0.25, 5], onDisconnect, onReconnect });
    sessionStorage.setItem(TOKEN_KEY, token);
    needsToken = false;
    byId("token-form", HTMLFormElement).hidden = true;
    byId("token-input", HTMLInputElement).value = "";
    adopt(made);
  } catch (error) {
    byId("token-status", HTMLElement).textContent = error instanceof RunnelError ? error.message || error.code : String(error);
  }
});

// ---- Subjects list ---------------------------------------------------------------------------
/** @type {Map<string, { published: number, at: number }>} subject -> its count when last listed */
const lastCounts = new Map();

function refreshSubjects() {
  if (!client || !client.connected) return;
  refreshCluster(client);
  const prefix = byId("prefix", HTMLInputElement).value.trim();
  client.request("list", prefix ? { prefix } : {}).then(
    (reply) => renderSubjects(/** @type {SubjectEntry[]} */ (reply.subjects ?? [])),
    (/** @type {unknown} */ error) => {
      byId("subjects-status", HTMLElement).textContent = error instanceof RunnelError ? error.message : String(error);
      byId("subjects-status", HTMLElement).className = "status bad";
    });
}

/**
 * The kind `list` gives `subject`, or null: not listed (it does not exist yet, or the token may
 * not see it), or `list` failed.
 * @param {Client} from
 * @param {string} subject
 */
async function kindOf(from, subject) {
  try {
    const reply = await from.request("list", { prefix: subject });
    const entry = /** @type {SubjectEntry[]} */ (reply.subjects ?? []).find((listed) => listed.subject === subject);
    return entry ? entry.kind : null;
  } catch {
    return null;
  }
}

/**
 * The node this page is connected to and its link to the cluster, from `stats.cluster` (absent
 * standalone; a token that may not read stats shows nothing either).
 * @param {Client} from
 */
function refreshCluster(from) {
  const badge = byId("cluster-state", HTMLElement);
  from.request("stats").then((stats) => {
    const cluster = /** @type {{ node: string, link: string, nodes: number } | undefined} */ (stats.cluster);
    badge.hidden = !cluster;
    if (!cluster) return;
    badge.dataset.state = cluster.link;
    badge.textContent = `node ${cluster.node} · link ${cluster.link} · ${cluster.nodes} node${cluster.nodes === 1 ? "" : "s"}`;
  }, () => { badge.hidden = true; });
}

/** @param {SubjectEntry[]} subjects */
function renderSubjects(subjects) {
  const now = performance.now();
  const rows = [];
  for (const entry of subjects.slice(0, 500)) {
    const before = lastCounts.get(entry.subject);
    let rate = "";
    if (before && now > before.at) rate = ((entry.published - before.published) * 1000 / (now - before.at)).toFixed(1);
    lastCounts.set(entry.subject, { published: entry.published, at: now });
    const kind = entry.kind + (entry.capacity !== undefined ? ` ${entry.capacity}` : "")
      + (entry.keys !== undefined ? ` (${entry.keys} key${entry.keys === 1 ? "" : "s"})` : "") + (entry.durable ? " durable" : "");
    const pick = el("button", { class: "subject-link", type: "button", title: "use in a new panel and the publish box",
      onclick: () => { byId("new-subject", HTMLInputElement).value = entry.subject; byId("pub-subject", HTMLInputElement).value = entry.subject; byId("new-filter", HTMLInputElement).focus(); } });
    // Long names wrap after their dots.
    entry.subject.split(".").forEach((token, i) => { if (i) pick.append(".", el("wbr")); pick.append(token); });
    rows.push(el("tr", {}, el("td", {}, pick), el("td", { text: kind + (entry.terminated ? ", ended" : "") }),
      el("td", { class: "num", text: entry.subscribers }), el("td", { class: "num", text: entry.published }),
      el("td", { class: "num", text: rate }),
      el("td", { class: "num", text: entry.pos ? "#" + splitPos(entry.pos)[1] : "", title: entry.pos || "" })));
  }
  byId("subjects", HTMLTableElement).tBodies[0].replaceChildren(...rows);
  const status = byId("subjects-status", HTMLElement);
  status.className = "status";
  status.textContent = subjects.length > 500 ? `first 500 of ${subjects.length}` : `${subjects.length} subjects`;
}

byId("prefix", HTMLInputElement).addEventListener("input", () => refreshSubjects());
setInterval(refreshSubjects, LIST_EVERY_MS);

// ---- Publish box ---------------------------------------------------------------------------------
byId("publish-form", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  const subject = byId("pub-subject", HTMLInputElement).value.trim();
  const text = byId("pub-value", HTMLTextAreaElement).value;
  /** @type {unknown} */
  let value;
  let note = "";
  try { value = JSON.parse(text); } catch { value = text; note = " (as a string)"; }
  const status = byId("pub-status", HTMLElement);
  if (!client || !client.connected) { status.className = "status bad"; status.textContent = "not connected"; return; }
  client.publish(subject, value, { reply: true }).then((receivers) => {
    status.className = "status";
    status.textContent = `published${note}: reached ${receivers} subscription(s)`;
  }, (/** @type {unknown} */ error) => {
    status.className = "status bad";
    status.textContent = error instanceof RunnelError ? error.message : String(error);
  });
});

// ---- Panels ------------------------------------------------------------------------------------------
/**
 * What a panel shows, as kept in the URL: its subject (or pattern), the stages' expressions
 * and throttle as typed, its view, and a chart's time range (none: live).
 * @typedef {{ subject: string, filter: string, map: string, throttle: string, view: "chart" | "table" | "log", range?: RangeKey }} PanelSpec
 */
/** @typedef {"15m" | "1h" | "24h"} RangeKey */
/** @typedef {{ t: number, v: number }} Point */
/** @typedef {{ value: unknown, pos: string | undefined, t: number, count: number, gapBefore?: boolean }} Row */
/**
 * A log line: a value (`source`, `pos`, `value`) or a gap marker (`gap`).
 * @typedef {{ t: number, source?: string, pos?: string, value?: unknown, gap?: string }} LogEntry
 */

/** @type {Panel[]} */
const panels = [];
let nextPanelId = 1;

/** @param {string} text */
function shellQuote(text) {
  return /^[A-Za-z0-9_.\/:=+,@-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'";
}

/** @type {PanelSpec["view"][]} the views a panel can have (any other is shown as a log) */
const VIEWS = ["chart", "table", "log"];
/**
 * A chart's time ranges besides live: the key kept in the URL (and given to `runnel sub
 * --since`), its label, its length.
 * @type {Record<RangeKey, { label: string, ms: number }>}
 */
const RANGES = { "15m": { label: "last 15 min", ms: 15 * 60000 }, "1h": { label: "last 1 h", ms: 3600000 },
  "24h": { label: "last 24 h", ms: 86400000 } };
/** @type {RangeKey[]} */
const RANGE_KEYS = ["15m", "1h", "24h"];

/**
 * A panel: one subscription (resubscribed after a reconnect, resumed from its last position
 * when it can) and its view; a map subject's panel shows the map's table (`MapTable`), kept by
 * the client's map subscription. Lifetime: from `addPanel` until `removePanel` or a new URL state.
 */
class Panel {
  /** @param {{ subject: string, filter?: string, map?: string, throttle?: string, view?: string, range?: string }} spec */
  constructor(spec) {
    this.id = nextPanelId++;
    /** @type {PanelSpec} */
    this.spec = { subject: spec.subject, filter: spec.filter || "", map: spec.map || "",
      throttle: spec.throttle || "", view: VIEWS.find((view) => view === spec.view) ?? "log" };
    // Only a chart has a range; live keeps no key, so a live panel's URL is as before.
    const range = this.spec.view === "chart" ? RANGE_KEYS.find((key) => key === spec.range) : undefined;
    if (range) this.spec.range = range;
    /** the chart's range in ms (0: live): its x-axis, and the `since` of a first `sub` */
    this.rangeMs = range ? RANGES[range].ms : 0;
    this.pattern = isPattern(this.spec.subject);
    /** @type {import("/runnel.js").Subscription | import("/runnel.js").MapSubscription | null} */
    this.subscription = null;
    this.generation = 0;      // one more per subscription: callbacks of an older one are ignored
    /** @type {string | null} "EPOCH:SEQ" of the newest value shown (single subjects) */
    this.lastPos = null;
    this.count = 0;           // values shown
    this.skipped = 0;         // non-numeric values a chart could not draw
    /** @type {{ t: number, message: string }[]} gap markers */
    this.gaps = [];
    /** @type {LogEntry[]} newest last */
    this.log = [];
    /** @type {LogEntry[]} entries not yet drawn */
    this.logFresh = [];
    /** @type {Map<string, Point[]>} chart: source subject -> its points */
    this.series = new Map();
    /** @type {Map<string, Row>} table: source subject -> its latest value */
    this.rows = new Map();
    this.state = "waiting for the connection";
    /** @type {PanelError | null} */
    this.error = null;
    this.wasLive = false;     // a subscription of this panel has been live before
    this.dirty = true;
    /** @type {MapTable | null} the map's table, once `list` said the subject is a map */
    this.mapTable = null;
    /** @type {import("/runnel.js").MapSubscription | null} the subscription whose table it shows (kept once ended) */
    this.mapSource = null;
    this.mapReady = false;    // mapSource has been synced: its table is the map's
    this.mapReconcile = false; // it was synced again: rows of keys its table lacks go
    /** @type {Set<string>} a map's keys changed since the last frame */
    this.changedKeys = new Set();
    this.conflated = 0;       // a map's changes the server replaced by later ones while the page lagged

    // The panel's elements.
    const { subject, filter, map, throttle, view } = this.spec;
    const rangeLabel = range ? RANGES[range].label : "";
    const title = `${subject} · ${view}` + (range ? ` · ${rangeLabel}` : "");
    const exprs = [filter && `filter ${filter}`, map && `map ${map}`, throttle !== "" && `throttle ${throttle}s`]
      .filter(Boolean).join(" | ");
    this.stateNode = el("span", { class: "state" });
    this.countNode = el("span", { class: "count", text: "0 values" });
    this.errorNode = el("div", { class: "panel-error", role: "alert", hidden: "" });
    this.gapNode = el("div", { class: "gap-note", hidden: "" });
    // A range whose start the server no longer holds (`resumed: false` to its `since`).
    this.rangeNote = el("div", { class: "gap-note range-note", hidden: "",
      text: "⚠ the server no longer holds the start of this range" });
    this.commandNode = el("input", { class: "command", readonly: "", hidden: "", "aria-label": "runnel sub command line" });
    const copy = el("button", { type: "button", class: "quiet copy", text: "Copy command",
      title: "copy the equivalent runnel sub command line", onclick: () => this.copyCommand() });
    this.removeNode = el("button", { type: "button", class: "quiet remove", text: "Remove",
      "aria-label": `remove panel ${title}`, onclick: () => removePanel(this) });
    this.titleNode = el("h3", { text: title });
    /** @type {HTMLCanvasElement | null} */
    this.canvas = null;
    /** @type {HTMLTableSectionElement | null} */
    this.tbody = null;
    /** @type {HTMLElement} */
    let viewNode;
    if (view === "chart") {
      this.canvas = el("canvas", { class: "chart view", role: "img",
        "aria-label": `line chart of ${subject}` + (range ? `, ${rangeLabel}` : "") });
      viewNode = this.canvas;
    } else if (view === "table") {
      this.tbody = el("tbody");
      const head = el("tr", {}, el("th", { text: "subject" }), el("th", { text: "latest value" }),
        el("th", { class: "num", text: "count" }), el("th", { text: "at" }));
      if (!this.pattern) head.append(el("th", { text: "position" }));
      viewNode = el("div", { class: "table-wrap view" }, el("table", {}, el("thead", {}, head), this.tbody));
    } else {
      viewNode = el("ol", { class: "log view", "aria-label": `values of ${subject}, newest first` });
    }
    this.viewNode = viewNode;
    this.node = el("article", { class: "panel", "data-subject": subject, "data-view": view, "data-range": range ?? "live" },
      el("div", { class: "panel-head" }, this.titleNode, el("div", { class: "tools" }, copy, this.removeNode)),
      el("div", { class: "exprs", text: exprs || "no stages" }),
      el("div", { class: "meta" }, this.stateNode, this.countNode),
      this.errorNode, this.gapNode, this.rangeNote, this.commandNode, this.viewNode);
  }

  /** The `sub` request's stages. */
  ops() {
    /** @type {Stage[]} */
    const stages = [];
    const { filter, map, throttle } = this.spec;
    if (filter) stages.push({ op: "filter", expr: filter });
    if (map) stages.push({ op: "map", expr: map });
    if (throttle !== "") stages.push({ op: "throttle", seconds: Number(throttle) });
    return stages;
  }

  command() {
    const { subject, filter, map, throttle } = this.spec;
    // A map's table as the CLI prints it, when no stage shapes it (`runnel map` takes none).
    if (this.mapTable && !filter && !map && throttle === "") return `runnel map ${shellQuote(subject)} --conflate`;
    const parts = ["runnel", "sub", shellQuote(subject)];
    if (filter) parts.push("--filter", shellQuote(filter));
    if (map) parts.push("--map", shellQuote(map));
    if (throttle !== "") parts.push("--throttle", shellQuote(String(throttle)));
    if (this.pattern) parts.push("--subject");
    if (this.spec.range) parts.push("--since", this.spec.range, "--ts");
    // The panel conflates (its `sub` carries `conflate`): the command does as it does.
    parts.push("--conflate");
    return parts.join(" ");
  }


  copyCommand() {
    const text = this.command();
    this.commandNode.value = text;
    this.commandNode.hidden = false;
    this.commandNode.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).catch(() => document.execCommand && document.execCommand("copy"));
    } else if (document.execCommand) {
      document.execCommand("copy");
    }
  }

  /**
   * Subscribes through the client, from the newest position shown (a panel made again by a new
   * client, after a token was given); the client resumes it after its own reconnects. It
   * conflates: a page that lags is sent the latest value, and a gap for those it replaced.
   * A chart with a range starts at now − range (`since`, with each value's server time, `ts`)
   * while it has shown nothing yet; the client too sends `since` again only until a value came,
   * then `from`, so a reconnect goes on from the last value rather than replaying the range.
   */
  async subscribe() {
    if (!client) return;
    const using = client;
    const generation = ++this.generation;
    this.state = "subscribing";
    this.markDirty();
    // A map (as `list` says; a subject that does not exist yet is none) is shown as its table.
    if (!this.mapTable && !this.pattern && await kindOf(using, this.spec.subject) === "map") this.showAsMap();
    if (this.generation !== generation) return;
    if (this.mapTable) {
      await this.subscribeMap(using, generation);
      return;
    }
    const from = this.pattern ? null : this.lastPos;
    const since = !from && this.rangeMs ? Date.now() - this.rangeMs : undefined;
    try {
      const options = { ops: this.ops(), conflate: true, ...(from ? { from } : {}),
        ...(since !== undefined ? { since } : {}), ...(this.rangeMs ? { ts: true } : {}) };
      const subscription = await using.subscribe(this.spec.subject, options,
        (event) => { if (this.generation === generation) this.onEvent(event); },
        (error) => { if (this.generation === generation) this.onEnd(error); });
      if (this.generation !== generation) {
        subscription.unsubscribe();
        return;
      }
      this.subscription = subscription;
      this.error = null;
      this.state = "live";
      if (!from && since === undefined && this.wasLive) {
        // A pattern (or a subject with no value shown yet) cannot resume: say so. (A range's
        // `since` replays what is held, and says what is not.)
        this.addGap("gap: values published while disconnected were not resumed");
      }
      this.wasLive = true;
    } catch (error) {
      if (this.generation !== generation) return;
      this.refused(error);
    }
    this.markDirty();
  }

  /**
   * Subscribes to the map through the client's map subscription, which keeps its table and,
   * after the client's reconnects, resumes it from its position (or, when the server cannot,
   * rebuilds it apart and swaps it in whole at `synced`): the panel applies the changes it
   * reports to its rows. It conflates: a page that lags gets each key's latest change.
   * @param {Client} using
   * @param {number} generation
   */
  async subscribeMap(using, generation) {
    // Until this subscription is synced its table is not the map's: the rows shown stay.
    this.mapSource = null;
    this.mapReady = false;
    try {
      const subscription = await using.subscribeMap(this.spec.subject, { ops: this.ops(), conflate: true },
        (event) => { if (this.generation === generation) this.onMapEvent(event); },
        (error) => { if (this.generation === generation) this.onEnd(error); });
      if (this.generation !== generation) {
        subscription.unsubscribe();
        return;
      }
      this.subscription = subscription;
      this.mapSource = subscription;
      this.error = null;
      this.state = subscription.synced ? "live" : "syncing";
    } catch (error) {
      if (this.generation !== generation) return;
      this.refused(error);
    }
    this.markDirty();
  }

  /**
   * The subject is a map: the panel shows its table, whatever view it was made with, and the
   * URL keeps it as a table panel.
   */
  showAsMap() {
    const table = new MapTable(`keys and values of ${this.spec.subject}`);
    this.viewNode.replaceWith(table.node);
    this.viewNode = table.node;
    this.mapTable = table;
    this.canvas = null;
    this.tbody = null;
    this.rangeMs = 0;
    const { subject, filter, map, throttle, view, range } = this.spec;
    Object.assign(this.node.dataset, { kind: "map", view: "table", range: "live" });
    this.titleNode.textContent = `${subject} · map`;
    this.removeNode.setAttribute("aria-label", `remove panel ${subject} · map`);
    if (view !== "table" || range) {
      this.spec = { subject, filter, map, throttle, view: "table" };
      saveState();
    }
  }

  /**
   * The server refused the `sub` (or the client could not send it): the panel says why.
   * @param {unknown} error
   */
  refused(error) {
    const refusal = error instanceof RunnelError ? error : new RunnelError("error", String(error));
    this.error = { code: refusal.code, message: refusal.message, stage: refusal.stage ?? undefined };
    this.state = refusal.code === "unauthorized" ? "waiting for a token" : "refused";
    if (refusal.code === "unauthorized") askForToken(refusal.message);
  }

  /** Forgets the subscription, whose client is going (its callbacks are ignored from now on). */
  detach() {
    this.generation += 1;
    this.subscription = null;
    this.state = "disconnected";
    this.markDirty();
  }

  /** The client lost its connection; it resumes the subscription when it is back. */
  disconnected() {
    if (this.state !== "live" && this.state !== "syncing") return;
    this.state = "disconnected";
    this.markDirty();
  }

  reconnected() {
    if (this.state !== "disconnected" || !this.subscription || this.subscription.ended) return;
    // A map's is live again at its `synced` (its changes missed applied, or its table rebuilt).
    this.state = this.mapSource && !this.mapSource.synced ? "syncing" : "live";
    this.markDirty();
  }

  unsubscribe() {
    const subscription = this.subscription;
    this.detach();
    subscription?.unsubscribe();
  }

  /** @param {string} message */
  addGap(message) {
    const t = Date.now();
    this.gaps.push({ t, message });
    this.pushLog({ t, gap: message });
    for (const rows of this.rows.values()) rows.gapBefore = true;
    this.markDirty();
  }

  /** @param {import("/runnel.js").RunnelEvent} event a value, or a gap the client reports */
  onEvent(event) {
    if (event instanceof Gap) {
      if (event.reason === "dropped") {
        // Replaced while the page lagged (conflation), or, in a cluster, missed: count null
        // when the server does not know how many.
        const count = event.count === null ? "some" : event.count;
        this.addGap(`gap: the server skipped ${count} value(s) (this page lagged, or another node's were missed)`);
      } else if (event.reason === "not_resumed" && this.rangeMs && !this.lastPos) {
        // The answer to a `since` (no value shown yet): values of the range were let go.
        this.rangeNote.hidden = false;
      } else if (event.reason === "not_resumed" && this.lastPos) {
        this.addGap("gap: values may have been missed while disconnected (could not resume after " + this.lastPos + ")");
      } else {
        this.addGap(event.reason === "overflow" ? `gap: ${event.count} value(s) not shown`
          : "gap: values published while disconnected were not resumed");
      }
      return;
    }
    if (event.pos && !this.pattern) this.lastPos = event.pos;
    // A chart with a range plots each value at its server time; a live one, when it came.
    const t = this.rangeMs && event.ts !== null ? event.ts : Date.now();
    this.accept(event.subject, event.value, event.pos ?? undefined, t);
  }

  /**
   * A map subscription's event: a change the client has made to its table (the row's key is
   * redrawn at the next frame), `synced`, or a gap. Whatever a gap skipped, the table is right:
   * conflation's replaced changes are only counted; a reconnect that could not resume has the
   * client rebuild the table, its differences then coming as changes.
   * @param {import("/runnel.js").MapEvent} event
   */
  onMapEvent(event) {
    if (event.type === "synced") {
      this.mapReady = true;
      this.mapReconcile = true;
      this.state = "live";
    } else if (event.type === "gap") {
      if (event.reason === "dropped") this.conflated += event.count ?? 0;
    } else if (event.key !== null) {
      this.changedKeys.add(event.key);
      if (this.mapReady) this.count += 1;  // a change to a synced table (not a first snapshot's key)
    }
    this.markDirty();
  }

  /** @param {RunnelError | null} error what ended the subscription, or null: it completed */
  onEnd(error) {
    this.subscription = null;
    this.state = error ? "ended with an error" : "completed";
    if (error) this.error = { code: error.code, message: error.message, stage: error.stage ?? undefined };
    this.markDirty();
  }

  /**
   * @param {string} source
   * @param {unknown} value
   * @param {string | undefined} pos
   * @param {number} t when, in ms since the epoch
   */
  accept(source, value, pos, t) {
    this.count += 1;
    const view = this.spec.view;
    if (view === "chart") {
      if (typeof value !== "number") { this.skipped += 1; }
      else {
        let points = this.series.get(source);
        if (!points) {
          if (this.series.size >= COLORS.length) { this.skipped += 1; this.markDirty(); return; }
          points = [];
          this.series.set(source, points);
        }
        points.push({ t, v: value });
        if (points.length > MAX_POINTS * 1.2) points.splice(0, points.length - MAX_POINTS);
      }
    } else if (view === "table") {
      const row = this.rows.get(source);
      if (row) { row.value = value; row.pos = pos; row.t = t; row.count += 1; }
      else if (this.rows.size < MAX_ROWS) this.rows.set(source, { value, pos, t, count: 1 });
    } else {
      this.pushLog({ t, source, pos, value });
    }
    this.markDirty();
  }

  /** @param {LogEntry} entry */
  pushLog(entry) {
    this.log.push(entry);
    this.logFresh.push(entry);
    if (this.log.length > MAX_LOG * 1.2) this.log.splice(0, this.log.length - MAX_LOG);
    if (this.logFresh.length > MAX_LOG) this.logFresh.splice(0, this.logFresh.length - MAX_LOG);
  }

  markDirty() {
    this.dirty = true;
    scheduleRender();
  }

  render() {
    this.dirty = false;
    this.stateNode.textContent = this.state;
    this.stateNode.dataset.state = this.state;
    this.countNode.textContent = `${this.count} values` + (this.skipped ? `, ${this.skipped} not drawn (not numbers, or past ${COLORS.length} series)` : "");
    if (this.error) {
      const { code, message, stage } = this.error;
      const op = stage !== undefined ? this.ops()[stage] : undefined;
      const where = stage !== undefined && !/\bstage\b/.test(message ?? "") ? ` (stage ${stage}: ${op ? op.op : "?"})` : "";
      this.errorNode.replaceChildren(el("div", { text: `${code}: ${message}${where}` }));
      // The server names the byte where an expression went wrong: point at it.
      const at = /\(at byte (\d+)\)/.exec(message ?? "");
      if (op && "expr" in op && typeof op.expr === "string" && at) {
        const column = charIndexOfByte(op.expr, Number(at[1]));
        this.errorNode.append(el("pre", { class: "caret", text: op.expr + "\n" + " ".repeat(column) + "^" }));
      }
      this.errorNode.hidden = false;
    } else {
      this.errorNode.hidden = true;
    }
    if (this.gaps.length) {
      const last = this.gaps[this.gaps.length - 1];
      this.gapNode.textContent = `⚠ ${this.gaps.length} gap(s); last at ${clock(last.t)}: ${last.message}`;
      this.gapNode.hidden = false;
    }
    if (this.spec.view === "chart") {
      this.drawChart();
      // What the chart holds, for tests and the curious: its points and the oldest one's time.
      if (this.canvas) {
        let points = 0, oldest = Infinity;
        for (const series of this.series.values()) {
          points += series.length;
          if (series.length) oldest = Math.min(oldest, series[0].t);
        }
        this.canvas.dataset.points = String(points);
        this.canvas.dataset.oldest = oldest === Infinity ? "" : String(oldest);
      }
    } else if (this.mapTable) this.drawMap(this.mapTable);
    else if (this.spec.view === "table") this.drawTable();
    else this.drawLog();
  }

  /**
   * Brings the rows of the keys changed since the last frame to the client's table: each row
   * changed in place, added in its place, or taken out; no other row is touched.
   * @param {MapTable} view
   */
  drawMap(view) {
    const source = this.mapSource;
    if (source && this.mapReady) {
      const table = source.table;
      if (this.mapReconcile) {
        // Synced again (a new subscription's first table, or a rebuilt one): keys it lacks go.
        this.mapReconcile = false;
        for (const key of view.keys) if (!table.has(key)) this.changedKeys.add(key);
      }
      for (const key of this.changedKeys) {
        if (table.has(key)) view.set(key, table.get(key));
        else view.remove(key);
      }
      this.changedKeys.clear();
    }
    const size = view.size;
    this.countNode.textContent = `${size} key${size === 1 ? "" : "s"} · ${this.count} change${this.count === 1 ? "" : "s"}`
      + (this.conflated ? ` · ${this.conflated} replaced by later ones while this page lagged` : "");
  }

  drawLog() {
    if (!this.logFresh.length) return;
    const fragment = document.createDocumentFragment();
    for (let i = this.logFresh.length - 1; i >= 0; i--) {
      const entry = this.logFresh[i];
      if (entry.gap) {
        fragment.append(el("li", { class: "gap", text: `${clock(entry.t)} ${entry.gap}` }));
        continue;
      }
      const item = el("li", { class: "log-entry" }, el("span", { class: "when", text: clock(entry.t) }));
      if (this.pattern) item.append(el("span", { class: "src", text: entry.source ?? "" }));
      if (entry.pos) item.append(el("span", { class: "pos", text: entry.pos }));
      item.append(el("span", { class: "value", text: JSON.stringify(entry.value) }));
      fragment.append(item);
    }
    this.logFresh = [];
    this.viewNode.prepend(fragment);
    while (this.viewNode.childElementCount > MAX_LOG) this.viewNode.lastElementChild?.remove();
  }

  drawTable() {
    if (!this.tbody) return;
    const keys = [...this.rows.keys()].sort();
    const rows = keys.map((key) => {
      const row = /** @type {Row} */ (this.rows.get(key));
      const line = el("tr", {}, el("td", { text: key }), el("td", { class: "value", text: JSON.stringify(row.value) }),
        el("td", { class: "num", text: row.count }), el("td", { text: clock(row.t) }));
      if (!this.pattern) line.append(el("td", { text: row.pos || "" }));
      return line;
    });
    this.tbody.replaceChildren(...rows);
  }

  drawChart() {
    const canvas = this.canvas;
    if (!canvas) return;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (!width || !height) return;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    // A range's window is the range; a live one grows with the data from 10 s to WINDOW_MS.
    const now = Date.now();
    const keep = this.rangeMs || WINDOW_MS;
    let oldest = now;
    for (const points of this.series.values()) if (points.length) oldest = Math.min(oldest, points[0].t);
    const span = this.rangeMs || Math.min(WINDOW_MS, Math.max(10000, Math.ceil((now - oldest) / 10000) * 10000));
    const start = now - span;
    let low = Infinity, high = -Infinity;
    for (const points of this.series.values()) {
      // Forget what has left the window, in batches.
      let first = 0;
      while (first < points.length && points[first].t < now - keep) first++;
      if (first > 256 || first === points.length) points.splice(0, first), first = 0;
      for (let i = 0; i < points.length; i++) {
        if (points[i].t < start) continue;
        const v = points[i].v;
        if (v < low) low = v;
        if (v > high) high = v;
      }
    }
    const left = 56, right = 8, top = 8, bottom = 22;
    const plotW = width - left - right, plotH = height - top - bottom;
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#4d5560";
    ctx.strokeStyle = "#d5d9df";
    ctx.lineWidth = 1;
    ctx.strokeRect(left + .5, top + .5, plotW, plotH);
    /** @type {[number, string, CanvasTextAlign][]} */
    const labels = [[0, `-${ago(span)}`, "left"], [0.5, `-${ago(span / 2)}`, "center"], [1, "now", "right"]];
    for (const [fraction, label, align] of labels) {
      ctx.textAlign = align;
      ctx.fillText(label, left + fraction * plotW, height - 6);
    }
    ctx.textAlign = "center";
    if (low === Infinity) {
      ctx.fillText("waiting for numeric values…", left + plotW / 2, top + plotH / 2);
      this.drawGaps(ctx, start, span, left, top, plotW, plotH);
      return;
    }
    if (low === high) { low -= 1; high += 1; }
    const range = high - low;
    low -= range * 0.05; high += range * 0.05;
    const yOf = (/** @type {number} */ v) => top + plotH - ((v - low) / (high - low)) * plotH;
    const xOf = (/** @type {number} */ t) => left + ((t - start) / span) * plotW;
    ctx.textAlign = "right";
    for (const fraction of [0, 0.5, 1]) {
      const v = low + (high - low) * fraction, y = yOf(v);
      ctx.fillStyle = "#4d5560";
      ctx.fillText(formatNumber(v), left - 4, y + 4);
      ctx.beginPath(); ctx.moveTo(left, Math.round(y) + .5); ctx.lineTo(left + plotW, Math.round(y) + .5); ctx.stroke();
    }
    this.drawGaps(ctx, start, span, left, top, plotW, plotH);
    let index = 0;
    ctx.lineWidth = 1.5;
    ctx.textAlign = "left";
    for (const [source, points] of this.series) {
      const color = COLORS[index % COLORS.length];
      ctx.strokeStyle = color;
      ctx.beginPath();
      // One pixel column at a time: its first, lowest and highest point (dense data stays cheap).
      let column = -1, started = false;
      for (const point of points) {
        if (point.t < start) continue;
        const x = xOf(point.t), y = yOf(point.v), c = Math.floor(x);
        if (!started) { ctx.moveTo(x, y); started = true; column = c; continue; }
        if (c === column) { ctx.lineTo(c + .5, y); continue; }
        column = c;
        ctx.lineTo(x, y);
      }
      ctx.stroke();
      const last = points[points.length - 1];
      if (last) {
        ctx.fillStyle = color;
        const label = (this.series.size > 1 || this.pattern ? source + ": " : "") + formatNumber(last.v);
        ctx.fillText(label, left + 6, top + 14 + index * 14);
      }
      index++;
    }
  }

  /**
   * The gap markers in the window: dashed red lines.
   * @param {CanvasRenderingContext2D} ctx
   * @param {number} start the window's start (ms since the epoch)
   * @param {number} span its length (ms)
   * @param {number} left
   * @param {number} top
   * @param {number} plotW
   * @param {number} plotH
   */
  drawGaps(ctx, start, span, left, top, plotW, plotH) {
    ctx.save();
    ctx.strokeStyle = "#a4161a";
    ctx.setLineDash([4, 3]);
    for (const gap of this.gaps) {
      if (gap.t < start) continue;
      const x = Math.round(left + ((gap.t - start) / span) * plotW) + .5;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + plotH); ctx.stroke();
    }
    ctx.restore();
  }
}

/**
 * The index in `text` of the character at UTF-8 byte offset `byte`.
 * @param {string} text
 * @param {number} byte
 */
function charIndexOfByte(text, byte) {
  const encoder = new TextEncoder();
  let bytes = 0, index = 0;
  for (const character of text) {
    if (bytes >= byte) break;
    bytes += encoder.encode(character).length;
    index += 1;
  }
  return index;
}

/**
 * "EPOCH:SEQ" as its epoch and its sequence number.
 * @param {string} pos
 * @returns {[string, number]}
 */
function splitPos(pos) {
  const colon = pos.lastIndexOf(":");
  return [pos.slice(0, colon), Number(pos.slice(colon + 1))];
}

/**
 * A length of time as the chart's axis says it: seconds up to 2 min, minutes up to 2 h, hours.
 * @param {number} ms
 */
function ago(ms) {
  if (ms < 120000) return `${ms / 1000} s`;
  if (ms < 7200000) return `${ms / 60000} min`;
  return `${ms / 3600000} h`;
}

/** @param {number} v */
function formatNumber(v) {
  if (Number.isInteger(v)) return String(v);
  const magnitude = Math.abs(v);
  return magnitude >= 1000 || magnitude < 0.01 ? v.toPrecision(4) : v.toFixed(2);
}

// Render at most once per animation frame: events only mark panels dirty.
let frameRequested = false;
function scheduleRender() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    for (const panel of panels) if (panel.dirty) panel.render();
  });
}
// Charts scroll with time even when no value arrives.
setInterval(() => { for (const panel of panels) if (panel.spec.view === "chart" && panel.series.size) panel.markDirty(); }, 500);

/**
 * @param {ConstructorParameters<typeof Panel>[0]} spec
 * @param {boolean} [save] whether the URL keeps the new state
 */
function addPanel(spec, save = true) {
  const panel = new Panel(spec);
  panels.push(panel);
  byId("panels", HTMLElement).append(panel.node);
  panel.subscribe();
  if (save) saveState();
  panel.markDirty();
  return panel;
}

/** @param {Panel} panel */
function removePanel(panel) {
  panel.unsubscribe();
  panel.node.remove();
  panels.splice(panels.indexOf(panel), 1);
  saveState();
  byId("new-subject", HTMLInputElement).focus();
}

byId("new-panel", HTMLFormElement).addEventListener("submit", (event) => {
  event.preventDefault();
  const subject = byId("new-subject", HTMLInputElement).value.trim();
  if (!subject) return;
  const view = byId("new-view", HTMLSelectElement).value;
  const range = view === "chart" ? byId("new-range", HTMLSelectElement).value : "";
  addPanel({ subject, filter: byId("new-filter", HTMLInputElement).value.trim(), map: byId("new-map", HTMLInputElement).value.trim(),
    throttle: byId("new-throttle", HTMLInputElement).value.trim(), view, ...(range !== "live" && range ? { range } : {}) });
});
// A range is a chart's: the choice is off for the other views (also as the browser restored the form).
function syncRange() {
  byId("new-range", HTMLSelectElement).disabled = byId("new-view", HTMLSelectElement).value !== "chart";
}
byId("new-view", HTMLSelectElement).addEventListener("change", syncRange);
syncRange();

// ---- The page's state in the URL: #{"panels":[...]} (JSON, percent-encoded) ----------------
let savedHash = "";
function saveState() {
  /** @type {{ panels: PanelSpec[], prefix?: string }} */
  const state = { panels: panels.map((panel) => panel.spec) };
  const prefix = byId("prefix", HTMLInputElement).value.trim();
  if (prefix) state.prefix = prefix;
  savedHash = "#" + encodeURIComponent(JSON.stringify(state));
  history.replaceState(null, "", savedHash);
}

function restoreState() {
  if (!location.hash || location.hash.length < 2) return;
  let state;
  try { state = JSON.parse(decodeURIComponent(location.hash.slice(1))); } catch { return; }
  for (const panel of [...panels]) { panel.unsubscribe(); panel.node.remove(); }
  panels.length = 0;
  if (typeof state.prefix === "string") byId("prefix", HTMLInputElement).value = state.prefix;
  for (const spec of Array.isArray(state.panels) ? state.panels : []) {
    if (spec && typeof spec.subject === "string" && spec.subject) addPanel(spec, false);
  }
  savedHash = location.hash;
}

window.addEventListener("hashchange", () => { if (location.hash !== savedHash) restoreState(); });
byId("prefix", HTMLInputElement).addEventListener("change", saveState);

restoreState();
open(TOKEN_URL ? fetchToken : sessionStorage.getItem(TOKEN_KEY));
