// A map subject's view in a dashboard panel (kind "map", docs/protocol.md, "Keyed subjects:
// maps"): one row per key, sorted by key, each row changed in place when its key changes, a
// removed key's row taken out; nothing else is drawn again. Object values get one column per
// top-level member (up to MAP_COLUMNS), any other value one column of compact JSON. A classic
// script put in line before dashboard.js, whose panels make one `MapTable` per map subject (a
// global, as this file declares it); `tsc -p web/dashboard` checks both files together.

const MAP_ROWS = 1000;     // rows shown: the first keys in order (the count says how many there are)
const MAP_COLUMNS = 8;     // members shown as columns (past them, one value column)

/**
 * The table of one map: `set` and `remove` as its keys change. Lifetime: its panel's.
 */
class MapTable {
  /** @param {string} label what the table is, for assistive technology */
  constructor(label) {
    this.head = document.createElement("tr");
    this.body = document.createElement("tbody");
    this.note = document.createElement("div");
    this.note.className = "map-note";
    this.note.hidden = true;
    const table = document.createElement("table");
    table.setAttribute("aria-label", label);
    table.createTHead().append(this.head);
    table.append(this.body);
    this.node = document.createElement("div");
    this.node.className = "table-wrap view map-view";
    this.node.append(table, this.note);
    /** @type {string[]} every key the map holds, sorted */
    this.keys = [];
    /** @type {Map<string, unknown>} key -> its value */
    this.values = new Map();
    /** @type {Map<string, HTMLTableRowElement>} the rows shown (the first MAP_ROWS keys) */
    this.rows = new Map();
    /** @type {string[] | null} the members shown as columns; null: one value column */
    this.columns = [];
    this.drawHead();
  }

  get size() {
    return this.keys.length;
  }

  /**
   * The index in sorted `keys` where `key` is or would go.
   * @param {string[]} keys
   * @param {string} key
   */
  static sortedIndex(keys, key) {
    let low = 0, high = keys.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (keys[middle] < key) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * @param {unknown} value
   * @returns {value is Record<string, unknown>}
   */
  static isRecord(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
  }

  /**
   * Sets a cell's text and class, each only when it changes.
   * @param {HTMLTableCellElement} cell
   * @param {string} text
   * @param {string} className
   */
  static setCell(cell, text, className) {
    if (cell.textContent !== text) cell.textContent = text;
    if (cell.className !== className) cell.className = className;
  }

  /**
   * Sets `key`'s value: its row changed in place, or a new row in its place in key order.
   * @param {string} key
   * @param {unknown} value
   */
  set(key, value) {
    const known = this.values.has(key);
    this.values.set(key, value);
    this.fit(value);
    if (known) {
      const row = this.rows.get(key);
      if (row) this.fill(row, value);
      return;
    }
    const at = MapTable.sortedIndex(this.keys, key);
    this.keys.splice(at, 0, key);
    if (at < MAP_ROWS) {
      const next = this.keys[at + 1];
      this.body.insertBefore(this.row(key), (next !== undefined && this.rows.get(next)) || null);
      if (this.keys.length > MAP_ROWS) this.hide(this.keys[MAP_ROWS]);
    }
    this.drawNote();
  }

  /**
   * Takes `key` out: its row goes (and the first key not shown until then comes in at the end).
   * @param {string} key
   */
  remove(key) {
    if (!this.values.delete(key)) return;
    this.keys.splice(MapTable.sortedIndex(this.keys, key), 1);
    if (this.rows.has(key)) {
      this.hide(key);
      if (this.keys.length >= MAP_ROWS) this.body.append(this.row(this.keys[MAP_ROWS - 1]));
    }
    this.drawNote();
  }

  /** @param {string} key */
  hide(key) {
    this.rows.get(key)?.remove();
    this.rows.delete(key);
  }

  /**
   * A new row for `key`, filled, kept in `rows`.
   * @param {string} key
   */
  row(key) {
    const row = document.createElement("tr");
    row.dataset.key = key;
    const cell = row.insertCell();
    cell.className = "key";
    cell.textContent = key;
    for (let i = this.columns ? this.columns.length : 1; i > 0; i--) row.insertCell();
    this.fill(row, this.values.get(key));
    this.rows.set(key, row);
    return row;
  }

  /**
   * Writes `value` into `row`'s cells, touching only those whose text changes.
   * @param {HTMLTableRowElement} row
   * @param {unknown} value
   */
  fill(row, value) {
    if (!this.columns) {
      MapTable.setCell(row.cells[1], JSON.stringify(value) ?? "", "value");
      return;
    }
    /** @type {Record<string, unknown>} */
    const record = MapTable.isRecord(value) ? value : {};
    this.columns.forEach((member, i) => {
      const field = record[member];
      // A member as it is when a string, else as compact JSON; a missing one empty.
      const text = field === undefined ? "" : typeof field === "string" ? field : JSON.stringify(field);
      MapTable.setCell(row.cells[i + 1], text, typeof field === "number" ? "member num" : "member");
    });
  }

  /**
   * Columns that fit `value`: a member not seen before gets one (an empty cell in every row);
   * a value that is no object, or one member too many, turns the table into one value column.
   * @param {unknown} value
   */
  fit(value) {
    const columns = this.columns;
    if (!columns) return;
    if (!MapTable.isRecord(value)) { this.toValueColumn(); return; }
    for (const member of Object.keys(value)) {
      if (columns.includes(member)) continue;
      if (columns.length >= MAP_COLUMNS) { this.toValueColumn(); return; }
      columns.push(member);
      this.head.append(this.headCell(member, "member"));
      for (const row of this.rows.values()) row.insertCell();
    }
  }

  /** One value column from now on, for every row shown (the rows stay, their cells change). */
  toValueColumn() {
    this.columns = null;
    this.drawHead();
    for (const [key, row] of this.rows) {
      while (row.cells.length > 2) row.deleteCell(-1);
      if (row.cells.length < 2) row.insertCell();
      this.fill(row, this.values.get(key));
    }
  }

  drawHead() {
    const columns = this.columns ? this.columns.map((member) => this.headCell(member, "member"))
      : [this.headCell("value", "value")];
    this.head.replaceChildren(this.headCell("key", "key"), ...columns);
  }

  /**
   * @param {string} text
   * @param {string} className
   */
  headCell(text, className) {
    const cell = document.createElement("th");
    cell.textContent = text;
    cell.className = className;
    cell.scope = "col";
    return cell;
  }

  drawNote() {
    this.note.hidden = this.keys.length <= MAP_ROWS;
    if (!this.note.hidden) this.note.textContent = `the first ${MAP_ROWS} of ${this.keys.length} keys, in key order`;
  }
}
