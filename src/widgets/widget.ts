// A Jupyter widget model on the kernel side, speaking the widget protocol 2.1 (what ipywidgets 8 and
// the widget manager of jupyterlab_widgets 3 speak): each widget is a comm with target
// "jupyter.widget", opened with its full state; the front end's views render it. Changes travel both
// ways as `update` messages; the kernel answers each front-end update with an `echo_update` (so several
// views of one model agree) and runs its `observe` callbacks. Nothing here is GradLab's own front-end
// code: JupyterLab 4 and Notebook 7 render these with the @jupyter-widgets models they already ship.

import { commHost, type CommLike } from "./comm.ts";

export const PROTOCOL_VERSION = "2.1.0";
const CONTROL_PROTOCOL_VERSION = "1.0.0";
export const WIDGET_VIEW_MIME = "application/vnd.jupyter.widget-view+json";
const DISPLAY = Symbol.for("Jupyter.display");
const REF = "IPY_MODEL_";

export type State = Record<string, unknown>;

/** The front-end classes that render a model: module, name and semver of its model and view. */
export interface ModelClass {
  _model_module: string;
  _model_name: string;
  _model_module_version: string;
  _view_module: string;
  _view_name: string | null;
  _view_module_version: string;
}

/** What an observer receives, as traitlets gives it to an ipywidgets observer. */
export interface Change<T = unknown> {
  name: string;
  old: T;
  new: T;
  owner: Widget;
  type: "change";
}
type Observer = (change: Change<any>) => void;

/** Every open widget by model id (ipywidgets keeps the same registry): the control comm sends their
 *  states to a front end that reconnects, and front-end references ("IPY_MODEL_<id>") resolve here. */
const live = new Map<string, Widget>();

/** Python's type name for a value, for error messages in traitlets' words. */
export function pyType(v: unknown): string {
  if (v === null || v === undefined) return "NoneType";
  if (typeof v === "boolean") return "bool";
  if (typeof v === "number") return Number.isInteger(v) ? "int" : "float";
  if (typeof v === "string") return "str";
  if (Array.isArray(v)) return "list";
  if (v instanceof Widget) return v.constructor.name;
  return typeof v === "function" ? "function" : "dict";
}

const same = (a: unknown, b: unknown): boolean => a === b || JSON.stringify(serialize(a)) === JSON.stringify(serialize(b));

function serialize(v: unknown): unknown {
  if (v instanceof Widget) return REF + v.model_id;
  if (Array.isArray(v)) return v.map(serialize);
  return v;
}
function deserialize(v: unknown): unknown {
  if (typeof v === "string" && v.startsWith(REF)) return live.get(v.slice(REF.length)) ?? v;
  if (Array.isArray(v)) return v.map(deserialize);
  return v;
}

let controlRegistered = false;
/** The "jupyter.widget.control" target: a front end that (re)connects asks for every widget's state
 *  in one message instead of one request_state per comm (protocol 2.1; the front end falls back to
 *  the slower path when the kernel closes this comm, as it does before any widget exists). */
function registerControl(): void {
  const host = commHost();
  if (!host || controlRegistered) return;
  controlRegistered = true;
  host.registerTarget("jupyter.widget.control", (comm, open) => {
    const version = String((open.metadata as { version?: unknown } | null)?.version ?? "");
    if (version.split(".")[0] !== CONTROL_PROTOCOL_VERSION.split(".")[0]) {
      comm.close();
      throw new Error(`Incompatible widget control protocol versions: received version '${version}', expected version '${CONTROL_PROTOCOL_VERSION}'`);
    }
    comm.onMsg((data) => {
      if (data?.method !== "request_states") throw new Error(`Unknown front-end to back-end widget control msg with method "${data?.method}"`);
      const states: State = {};
      for (const w of live.values()) {
        const s = w.get_state();
        states[w.model_id] = { model_name: s._model_name, model_module: s._model_module, model_module_version: s._model_module_version, state: s };
      }
      comm.send({ method: "update_states", states, buffer_paths: [] });
    });
  });
}

export abstract class Widget {
  readonly model_id: string;
  private readonly values: State;
  private readonly defaults: State;
  private comm: CommLike | null = null;
  private observers: Array<{ fn: Observer; names: Set<string> | null }> = [];
  private customHandlers: Array<(content: any, buffers: Buffer[]) => void> = [];
  /** values the front end just sent: setting one of them sends nothing back */
  private lock: State = {};
  /** inside hold_sync: the keys whose update waits for the end */
  private held: Set<string> | null = null;
  private closed = false;

  /**
   * `model` names the front-end classes, `defaults` every synchronised attribute with its default (the
   * keys ipywidgets sends), `options` the user's values, `internal` private attributes a subclass
   * computed (a Dropdown's labels). Opens the comm with the full state.
   */
  constructor(model: ModelClass, defaults: State, options: State = {}, internal: State = {}) {
    if (options === null || typeof options !== "object" || Array.isArray(options)) {
      throw new TypeError(`${this.constructor.name}() takes an options object, not ${pyType(options)}`);
    }
    this.defaults = { ...model, _view_count: null, ...defaults };
    this.values = { ...this.defaults };
    for (const k of Object.keys(options)) {
      if (!(k in this.defaults) || k.startsWith("_")) throw new TypeError(`${this.constructor.name}() got an unexpected keyword argument '${k}'`);
    }
    // in the defaults' order, so that bounds are set before the value they bound
    for (const k of Object.keys(this.defaults)) if (options[k] !== undefined) this.values[k] = this.validate(k, options[k], this.values);
    Object.assign(this.values, internal);
    for (const k of Object.keys(this.defaults)) {
      if (k.startsWith("_") || k in this) continue;
      Object.defineProperty(this, k, { get: () => this.get(k), set: (v) => this.set(k, v), enumerable: true, configurable: true });
    }
    const host = commHost();
    if (host) {
      registerControl();
      this.comm = host.open("jupyter.widget", { state: this.get_state(), buffer_paths: [] }, { version: PROTOCOL_VERSION });
      this.model_id = this.comm.comm_id;
      this.comm.onMsg((data, msg) => this.onMessage(data, msg.buffers));
      this.comm.onClose(() => this.forget());
    } else {
      this.model_id = globalThis.crypto.randomUUID().replace(/-/g, ""); // Web Crypto: Node 20 and browsers alike
    }
    live.set(this.model_id, this);
  }

  /** Checks (and coerces) a value before it is set; subclasses add their traits' rules. */
  protected validate(key: string, value: unknown, _state: State): unknown {
    const d = this.defaults[key];
    const ok =
      d === null
        ? true
        : typeof d === "number"
          ? typeof value === "number" && Number.isFinite(value)
          : typeof d === "string" || typeof d === "boolean"
            ? typeof value === typeof d
            : Array.isArray(d)
              ? Array.isArray(value)
              : true;
    if (!ok) throw this.traitError(key, typeof d === "number" ? "a number" : `a ${pyType(d)}`, value);
    return value;
  }
  protected traitError(key: string, expected: string, value: unknown): TypeError {
    const shown = typeof value === "string" ? `'${value}'` : (JSON.stringify(serialize(value)) ?? String(value));
    return new TypeError(
      `The '${key}' trait of ${/^[AEIOU]/.test(this.constructor.name) ? "an" : "a"} ${this.constructor.name} instance expected ${expected}, not the ${pyType(value)} ${shown}.`,
    );
  }

  get(key: string): unknown {
    return this.values[key];
  }

  /** Sets one attribute: validated, sent to the front end (unless it just came from there), then
   *  observers run (ipywidgets sends before it notifies). */
  set(key: string, value: unknown): void {
    if (!(key in this.defaults)) throw new TypeError(`${this.constructor.name} has no attribute '${key}'`);
    const v = this.validate(key, value, this.values);
    const old = this.values[key];
    if (same(old, v)) return;
    this.values[key] = v;
    if (!(key in this.lock && same(this.lock[key], v))) {
      if (this.held) this.held.add(key);
      else this.sendState([key]);
    }
    this.notify({ name: key, old, new: v, owner: this, type: "change" });
  }

  /** Runs fn with updates held back, then sends them as one message. */
  hold_sync<T>(fn: () => T): T {
    if (this.held) return fn();
    const held = (this.held = new Set());
    try {
      return fn();
    } finally {
      this.held = null;
      if (held.size) this.sendState([...held]);
    }
  }

  /** observe(fn, "value") or observe(fn, ["min", "max"]); no names: every attribute. */
  observe<T = unknown>(fn: (change: Change<T>) => void, names?: string | string[]): this {
    if (typeof fn !== "function") throw new TypeError("observe(handler, names) needs a function as its handler");
    const list = names === undefined ? null : Array.isArray(names) ? names : [names];
    for (const n of list ?? [])
      if (!(n in this.defaults) && !this.derived().includes(n)) throw new TypeError(`${this.constructor.name} has no attribute '${n}' to observe`);
    this.observers.push({ fn: fn as Observer, names: list ? new Set(list) : null });
    return this;
  }
  unobserve(fn: (change: Change<any>) => void, names?: string | string[]): this {
    const list = names === undefined ? null : Array.isArray(names) ? names : [names];
    this.observers = this.observers.filter((o) => o.fn !== fn || (list !== null && !list.some((n) => o.names?.has(n))));
    return this;
  }
  /** Attributes computed from synchronised ones (a Dropdown's value from its index) that may be observed. */
  protected derived(): string[] {
    return [];
  }
  protected notify(c: Change): void {
    for (const o of [...this.observers]) if (!o.names || o.names.has(c.name)) o.fn(c);
  }

  /** Custom messages from the front end (a Button's click arrives as one). */
  on_msg(fn: (content: any, buffers: Buffer[]) => void): this {
    this.customHandlers.push(fn);
    return this;
  }
  /** Sends a custom message to the front-end model. */
  send(content: unknown): void {
    this.comm?.send({ method: "custom", content });
  }

  /** The synchronised state as the protocol carries it (widget references as "IPY_MODEL_<id>"). */
  get_state(): State {
    const out: State = {};
    for (const [k, v] of Object.entries(this.values)) out[k] = serialize(v);
    return out;
  }

  get comm_live(): boolean {
    return !!this.comm && !this.closed;
  }

  /** Closes the comm: the front end removes every view of this widget. */
  close(): void {
    if (this.closed) return;
    const comm = this.comm;
    this.forget();
    comm?.close();
  }
  private forget(): void {
    this.closed = true;
    this.comm = null;
    live.delete(this.model_id);
  }

  private sendState(keys: string[]): void {
    if (!this.comm || this.closed) return;
    const state: State = {};
    for (const k of keys) state[k] = serialize(this.values[k]);
    this.comm.send({ method: "update", state, buffer_paths: [] });
  }

  private onMessage(data: any, buffers: Buffer[]): void {
    const method = data?.method;
    if (method === "update") this.fromFrontEnd(data.state);
    else if (method === "request_state") this.comm?.send({ method: "update", state: this.get_state(), buffer_paths: [] });
    else if (method === "custom") for (const h of [...this.customHandlers]) h(data.content, buffers);
    else throw new Error(`Unknown front-end to back-end widget msg with method "${method}"`);
  }

  /** An update from a view: echoed at once (protocol 2.1), then applied with the sent values locked,
   *  so only what validation or an observer changes goes back as an update. */
  private fromFrontEnd(state: unknown): void {
    if (!state || typeof state !== "object") return;
    const incoming: State = {};
    for (const [k, v] of Object.entries(state)) if (k in this.defaults) incoming[k] = deserialize(v);
    if (!Object.keys(incoming).length) return;
    const echo: State = {};
    for (const k of Object.keys(incoming)) echo[k] = (state as State)[k];
    this.comm?.send({ method: "echo_update", state: echo, buffer_paths: [] });
    const prev = this.lock;
    this.lock = { ...prev, ...incoming };
    try {
      this.hold_sync(() => {
        for (const [k, v] of Object.entries(incoming)) this.set(k, v);
      });
    } finally {
      this.lock = prev;
    }
  }

  /** Python's repr of the widget: its class and the attributes that differ from their defaults. */
  toString(): string {
    // as ipywidgets: sorted, defaults left out, a value widget's value first and always
    const parts: string[] = "value" in this.values ? [`value=${reprValue(this.values.value)}`] : [];
    for (const k of Object.keys(this.values).sort()) {
      const v = this.values[k];
      if (k.startsWith("_") || k === "value" || k === "layout" || k === "style" || same(v, this.defaults[k])) continue;
      parts.push(`${k}=${reprValue(v)}`);
    }
    const s = `${this.constructor.name}(${parts.join(", ")})`;
    return s.length > 110 ? `${s.slice(0, 110)}…` : s;
  }

  /** The display bundle: a view of this model, with its repr for front ends without widgets. */
  [DISPLAY](): Record<string, unknown> {
    const b: Record<string, unknown> = { "text/plain": this.toString() };
    if (this.values._view_name !== null && this.comm_live) b[WIDGET_VIEW_MIME] = { version_major: 2, version_minor: 0, model_id: this.model_id };
    return b;
  }
}

function reprValue(v: unknown): string {
  if (typeof v === "string") return `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'").replace(/\n/g, "\\n")}'`;
  if (typeof v === "boolean") return v ? "True" : "False";
  if (v === null || v === undefined) return "None";
  if (Array.isArray(v)) return `(${v.map(reprValue).join(", ")}${v.length === 1 ? "," : ""})`;
  if (v instanceof Widget) return v.toString();
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** Widgets open in this process (ipywidgets' Widget.widgets). */
export function openWidgets(): Widget[] {
  return [...live.values()];
}
