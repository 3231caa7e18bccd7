"use strict";

// ---- Limits -------------------------------------------------------------------------------
const MAX_LOG = 1000;          // log lines kept per panel
const MAX_POINTS = 10000;      // chart points kept per series
const MAX_ROWS = 500;          // table rows (source subjects) per panel
const WINDOW_MS = 60000;       // the chart's time window
const LIST_EVERY_MS = 1500;    // subjects list refresh
const TOKEN_KEY = "runnel.token";
const COLORS = ["#0b5cad", "#c2410c", "#146c2e", "#7e22ce", "#a4161a", "#0e7490", "#854d0e", "#be185d"];

const byId = (id) => document.getElementById(id);
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}
const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false });
const isPattern = (subject) => subject.split(".").some((token) => token === "*" || token === ">");

// ---- The connection: one WebSocket to /ws, requests matched to replies by ref ----------------
const conn = { ws: null, open: false, attempt: 0, nextRef: 1, pending: new Map(), timer: null, needsToken: false };
const sids = new Map(); // sid -> panel

function setConnState(state, text) {
  const badge = byId("conn-state");
  badge.dataset.state = state;
  badge.textContent = text;
}

function connect() {
  clearTimeout(conn.timer);
  setConnState("connecting", conn.attempt ? `reconnecting (attempt ${conn.attempt + 1})…` : "connecting…");
  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
  conn.ws = ws;
  ws.onopen = () => {
    conn.open = true;
    conn.attempt = 0;
    setConnState("connected", "connected");
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) {
      request({ op: "auth", token }, (reply) => {
        if (!reply.ok) askForToken("the saved token was refused: " + reply.message);
      });
    }
    startSession();
  };
  ws.onmessage = (message) => {
    let line;
    try { line = JSON.parse(message.data); } catch { return; }
    handleLine(line);
  };
  ws.onclose = () => {
    if (conn.ws !== ws) return;
    conn.ws = null;
    conn.open = false;
    conn.pending.clear();
    for (const panel of panels) panel.detach();
    const delay = Math.min(5000, 250 * 2 ** conn.attempt) * (0.8 + Math.random() * 0.4);
    conn.attempt += 1;
    setConnState("disconnected", `disconnected; retrying in ${(delay / 1000).toFixed(1)} s`);
    conn.timer = setTimeout(connect, delay);
  };
}

function request(body, onReply) {
  if (!conn.open) return false;
  const ref = conn.nextRef++;
  if (onReply) conn.pending.set(ref, onReply);
  conn.ws.send(JSON.stringify({ ...body, ref }));
  return true;
}

function handleLine(line) {
  if ("ok" in line) {
    const onReply = conn.pending.get(line.ref);
    conn.pending.delete(line.ref);
    if (!line.ok && line.code === "unauthorized") askForToken();
    if (onReply) onReply(line);
    return;
  }
  if (line.ev === "closing") {
    setConnState("disconnected", "closed by the server: " + line.code);
    return;
  }
  const panel = sids.get(line.sid);
  if (panel) panel.onEvent(line);
}

function startSession() {
  for (const panel of panels) panel.subscribe();
  refreshSubjects();
}

// ---- Auth: asked for on the first `unauthorized`, kept in sessionStorage only --------------
function askForToken(why) {
  if (conn.needsToken) return;
  conn.needsToken = true;
  const form = byId("token-form");
  form.hidden = false;
  byId("token-status").textContent = why || "";
  setConnState("token", "a token is needed");
  byId("token-input").focus();
}

byId("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = byId("token-input").value;
  request({ op: "auth", token }, (reply) => {
    if (reply.ok) {
      sessionStorage.setItem(TOKEN_KEY, token);
      conn.needsToken = false;
      byId("token-form").hidden = true;
      byId("token-input").value = "";
      setConnState("connected", "connected");
      startSession();
    } else {
      byId("token-status").textContent = reply.message;
    }
  });
});

// ---- Subjects list ---------------------------------------------------------------------------
const lastCounts = new Map(); // subject -> { published, at }

function refreshSubjects() {
  const prefix = byId("prefix").value.trim();
  const body = { op: "list" };
  if (prefix) body.prefix = prefix;
  request(body, (reply) => {
    if (!reply.ok) {
      byId("subjects-status").textContent = reply.message;
      byId("subjects-status").className = "status bad";
      return;
    }
    renderSubjects(reply.subjects);
  });
}

function renderSubjects(subjects) {
  const now = performance.now();
  const rows = [];
  for (const entry of subjects.slice(0, 500)) {
    const before = lastCounts.get(entry.subject);
    let rate = "";
    if (before && now > before.at) rate = ((entry.published - before.published) * 1000 / (now - before.at)).toFixed(1);
    lastCounts.set(entry.subject, { published: entry.published, at: now });
    const kind = entry.kind + (entry.capacity !== undefined ? ` ${entry.capacity}` : "") + (entry.durable ? " durable" : "");
    const pick = el("button", { class: "subject-link", type: "button", title: "use in a new panel and the publish box",
      onclick: () => { byId("new-subject").value = entry.subject; byId("pub-subject").value = entry.subject; byId("new-filter").focus(); } });
    // Long names wrap after their dots.
    entry.subject.split(".").forEach((token, i) => { if (i) pick.append(".", el("wbr")); pick.append(token); });
    rows.push(el("tr", {}, el("td", {}, pick), el("td", { text: kind + (entry.terminated ? ", ended" : "") }),
      el("td", { class: "num", text: entry.subscribers }), el("td", { class: "num", text: entry.published }),
      el("td", { class: "num", text: rate }),
      el("td", { class: "num", text: entry.pos ? "#" + splitPos(entry.pos)[1] : "", title: entry.pos || "" })));
  }
  byId("subjects").tBodies[0].replaceChildren(...rows);
  const status = byId("subjects-status");
  status.className = "status";
  status.textContent = subjects.length > 500 ? `first 500 of ${subjects.length}` : `${subjects.length} subjects`;
}

byId("prefix").addEventListener("input", () => refreshSubjects());
setInterval(refreshSubjects, LIST_EVERY_MS);

// ---- Publish box ---------------------------------------------------------------------------------
byId("publish-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const subject = byId("pub-subject").value.trim();
  const text = byId("pub-value").value;
  let value, note = "";
  try { value = JSON.parse(text); } catch { value = text; note = " (as a string)"; }
  const status = byId("pub-status");
  const sent = request({ op: "pub", subject, value }, (reply) => {
    status.className = reply.ok ? "status" : "status bad";
    status.textContent = reply.ok ? `published${note}: reached ${reply.receivers} subscription(s)` : reply.message;
  });
  if (!sent) { status.className = "status bad"; status.textContent = "not connected"; }
});

// ---- Panels ------------------------------------------------------------------------------------------
const panels = [];
let nextPanelId = 1;

function shellQuote(text) {
  return /^[A-Za-z0-9_.\/:=+,@-]+$/.test(text) ? text : "'" + text.replace(/'/g, "'\\''") + "'";
}

class Panel {
  constructor(spec) {
    this.id = nextPanelId++;
    this.spec = { subject: spec.subject, filter: spec.filter || "", map: spec.map || "",
      throttle: spec.throttle || "", view: ["chart", "table", "log"].includes(spec.view) ? spec.view : "log" };
    this.pattern = isPattern(this.spec.subject);
    this.sid = null;
    this.generation = 0;
    this.lastPos = null;      // "EPOCH:SEQ" of the newest value shown (single subjects)
    this.count = 0;           // values shown
    this.skipped = 0;         // non-numeric values a chart could not draw
    this.gaps = [];           // times of gap markers
    this.log = [];            // newest last
    this.logFresh = [];       // entries not yet drawn
    this.series = new Map();  // chart: source subject -> [{t, v}]
    this.rows = new Map();    // table: source subject -> {value, pos, t, count}
    this.state = "waiting for the connection";
    this.error = null;
    this.ended = null;
    this.wasLive = false;     // a subscription of this panel has been live before
    this.build();
  }

  ops() {
    const stages = [];
    const { filter, map, throttle } = this.spec;
    if (filter) stages.push({ op: "filter", expr: filter });
    if (map) stages.push({ op: "map", expr: map });
    if (throttle !== "") stages.push({ op: "throttle", seconds: Number(throttle) });
    return stages;
  }

  command() {
    const { subject, filter, map, throttle } = this.spec;
    const parts = ["runnel", "sub", shellQuote(subject)];
    if (filter) parts.push("--filter", shellQuote(filter));
    if (map) parts.push("--map", shellQuote(map));
    if (throttle !== "") parts.push("--throttle", shellQuote(String(throttle)));
    if (this.pattern) parts.push("--subject");
    return parts.join(" ");
  }

  build() {
    const { subject, filter, map, throttle, view } = this.spec;
    const title = `${subject} · ${view}`;
    const exprs = [filter && `filter ${filter}`, map && `map ${map}`, throttle !== "" && `throttle ${throttle}s`]
      .filter(Boolean).join(" | ");
    this.stateNode = el("span", { class: "state" });
    this.countNode = el("span", { class: "count", text: "0 values" });
    this.errorNode = el("div", { class: "panel-error", role: "alert", hidden: "" });
    this.gapNode = el("div", { class: "gap-note", hidden: "" });
    this.commandNode = el("input", { class: "command", readonly: "", hidden: "", "aria-label": "runnel sub command line" });
    const copy = el("button", { type: "button", class: "quiet copy", text: "Copy command",
      title: "copy the equivalent runnel sub command line", onclick: () => this.copyCommand() });
    const remove = el("button", { type: "button", class: "quiet remove", text: "Remove",
      "aria-label": `remove panel ${title}`, onclick: () => removePanel(this) });
    if (view === "chart") {
      this.canvas = el("canvas", { class: "chart view", role: "img", "aria-label": `line chart of ${subject}` });
      this.viewNode = this.canvas;
    } else if (view === "table") {
      this.tbody = el("tbody");
      const head = el("tr", {}, el("th", { text: "subject" }), el("th", { text: "latest value" }),
        el("th", { class: "num", text: "count" }), el("th", { text: "at" }));
      if (!this.pattern) head.append(el("th", { text: "position" }));
      this.viewNode = el("div", { class: "table-wrap view" }, el("table", {}, el("thead", {}, head), this.tbody));
    } else {
      this.viewNode = el("ol", { class: "log view", "aria-label": `values of ${subject}, newest first` });
    }
    this.node = el("article", { class: "panel", "data-subject": subject, "data-view": view },
      el("div", { class: "panel-head" }, el("h3", { text: title }), el("div", { class: "tools" }, copy, remove)),
      el("div", { class: "exprs", text: exprs || "no stages" }),
      el("div", { class: "meta" }, this.stateNode, this.countNode),
      this.errorNode, this.gapNode, this.commandNode, this.viewNode);
    this.dirty = true;
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

  subscribe() {
    if (this.sid || !conn.open) return;
    const sid = `p${this.id}.${++this.generation}`;
    const body = { op: "sub", subject: this.spec.subject, sid };
    const ops = this.ops();
    if (ops.length) body.ops = ops;
    if (!this.pattern) body.positions = true;
    const from = this.pattern ? null : this.lastPos;
    if (from) body.from = from;
    this.sid = sid;
    sids.set(sid, this);
    this.state = "subscribing";
    this.markDirty();
    request(body, (reply) => {
      if (this.sid !== sid) return;
      if (!reply.ok) {
        sids.delete(sid);
        this.sid = null;
        this.error = reply;
        this.state = reply.code === "unauthorized" ? "waiting for a token" : "refused";
      } else {
        this.error = null;
        this.state = "live";
        if (from && reply.resumed === false) {
          this.addGap("gap: values may have been missed while disconnected (could not resume after " + from + ")");
        } else if (!from && this.wasLive) {
          // A pattern (or a subject with no value shown yet) cannot resume: say so.
          this.addGap("gap: values published while disconnected were not resumed");
        }
        this.wasLive = true;
      }
      this.markDirty();
    });
  }

  detach() {
    if (this.sid) sids.delete(this.sid);
    this.sid = null;
    this.state = "disconnected";
    this.markDirty();
  }

  unsubscribe() {
    if (this.sid && conn.open) request({ op: "unsub", sid: this.sid });
    this.detach();
  }

  addGap(message) {
    const t = Date.now();
    this.gaps.push({ t, message });
    this.pushLog({ t, gap: message });
    for (const rows of this.rows.values()) rows.gapBefore = true;
    this.markDirty();
  }

  onEvent(line) {
    if (line.ev === "next") {
      if (line.pos && this.lastPos) {
        // A value at or before the newest one shown (same epoch) is one already shown.
        const [epoch, seq] = splitPos(line.pos);
        const [lastEpoch, lastSeq] = splitPos(this.lastPos);
        if (epoch === lastEpoch && seq <= lastSeq) return;
      }
      if (line.pos) this.lastPos = line.pos;
      this.accept(line.subject || this.spec.subject, line.value, line.pos);
    } else if (line.ev === "dropped") {
      this.addGap(`gap: the server dropped ${line.count} value(s) (slow consumer)`);
    } else if (line.ev === "error" || line.ev === "completed") {
      sids.delete(line.sid);
      this.sid = null;
      this.state = line.ev === "completed" ? "completed" : "ended with an error";
      if (line.ev === "error") this.error = line;
      this.markDirty();
    }
  }

  accept(source, value, pos) {
    const t = Date.now();
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
      const where = stage !== undefined && !/\bstage\b/.test(message) ? ` (stage ${stage}: ${op ? op.op : "?"})` : "";
      this.errorNode.replaceChildren(el("div", { text: `${code}: ${message}${where}` }));
      // The server names the byte where an expression went wrong: point at it.
      const at = /\(at byte (\d+)\)/.exec(message);
      if (op && typeof op.expr === "string" && at) {
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
    if (this.spec.view === "chart") this.drawChart();
    else if (this.spec.view === "table") this.drawTable();
    else this.drawLog();
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
      if (this.pattern) item.append(el("span", { class: "src", text: entry.source }));
      if (entry.pos) item.append(el("span", { class: "pos", text: entry.pos }));
      item.append(el("span", { class: "value", text: JSON.stringify(entry.value) }));
      fragment.append(item);
    }
    this.logFresh = [];
    this.viewNode.prepend(fragment);
    while (this.viewNode.childElementCount > MAX_LOG) this.viewNode.lastElementChild.remove();
  }

  drawTable() {
    const keys = [...this.rows.keys()].sort();
    const rows = keys.map((key) => {
      const row = this.rows.get(key);
      const line = el("tr", {}, el("td", { text: key }), el("td", { class: "value", text: JSON.stringify(row.value) }),
        el("td", { class: "num", text: row.count }), el("td", { text: clock(row.t) }));
      if (!this.pattern) line.append(el("td", { text: row.pos || "" }));
      return line;
    });
    this.tbody.replaceChildren(...rows);
  }

  drawChart() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth, height = canvas.clientHeight;
    if (!width || !height) return;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
    }
    const ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    // The window grows with the data from 10 s to WINDOW_MS.
    const now = Date.now();
    let oldest = now;
    for (const points of this.series.values()) if (points.length) oldest = Math.min(oldest, points[0].t);
    const span = Math.min(WINDOW_MS, Math.max(10000, Math.ceil((now - oldest) / 10000) * 10000));
    const start = now - span;
    let low = Infinity, high = -Infinity;
    for (const points of this.series.values()) {
      // Forget what has left the window, in batches.
      let first = 0;
      while (first < points.length && points[first].t < now - WINDOW_MS) first++;
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
    for (const [fraction, label, align] of [[0, `-${span / 1000} s`, "left"], [0.5, `-${span / 2000} s`, "center"], [1, "now", "right"]]) {
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
    const yOf = (v) => top + plotH - ((v - low) / (high - low)) * plotH;
    const xOf = (t) => left + ((t - start) / span) * plotW;
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

// The index in `text` of the character at UTF-8 byte offset `byte`.
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

function splitPos(pos) {
  const colon = pos.lastIndexOf(":");
  return [pos.slice(0, colon), Number(pos.slice(colon + 1))];
}

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

function addPanel(spec, save = true) {
  const panel = new Panel(spec);
  panels.push(panel);
  byId("panels").append(panel.node);
  panel.subscribe();
  if (save) saveState();
  panel.markDirty();
  return panel;
}

function removePanel(panel) {
  panel.unsubscribe();
  panel.node.remove();
  panels.splice(panels.indexOf(panel), 1);
  saveState();
  byId("new-subject").focus();
}

byId("new-panel").addEventListener("submit", (event) => {
  event.preventDefault();
  const subject = byId("new-subject").value.trim();
  if (!subject) return;
  addPanel({ subject, filter: byId("new-filter").value.trim(), map: byId("new-map").value.trim(),
    throttle: byId("new-throttle").value.trim(), view: byId("new-view").value });
});

// ---- The page's state in the URL: #{"panels":[...]} (JSON, percent-encoded) ----------------
let savedHash = "";
function saveState() {
  const state = { panels: panels.map((panel) => panel.spec) };
  const prefix = byId("prefix").value.trim();
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
  if (typeof state.prefix === "string") byId("prefix").value = state.prefix;
  for (const spec of Array.isArray(state.panels) ? state.panels : []) {
    if (spec && typeof spec.subject === "string" && spec.subject) addPanel(spec, false);
  }
  savedHash = location.hash;
}

window.addEventListener("hashchange", () => { if (location.hash !== savedHash) restoreState(); });
byId("prefix").addEventListener("change", saveState);

restoreState();
connect();
