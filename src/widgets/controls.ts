// The standard controls, as the @jupyter-widgets/controls 2.0.0, @jupyter-widgets/base 2.0.0 and
// @jupyter-widgets/output 1.0.0 models of ipywidgets 8 define them: the same model and view names, the
// same synchronised attributes and defaults (test/fixtures/widgets/ipywidgets-states.json, generated
// from ipywidgets 8.1.9, is the reference test/widgets.test.ts compares with).

import { commHost } from "./comm.ts";
import { Widget, pyType, type ModelClass, type State } from "./widget.ts";

const BASE = "@jupyter-widgets/base";
const CONTROLS = "@jupyter-widgets/controls";
const OUTPUT = "@jupyter-widgets/output";
const V2 = "2.0.0";

const controls = (model: string, view: string | null): ModelClass => ({
  _model_module: CONTROLS,
  _model_name: model,
  _model_module_version: V2,
  _view_module: CONTROLS,
  _view_name: view,
  _view_module_version: V2,
});
const style = (model: string, module = CONTROLS): ModelClass => ({
  _model_module: module,
  _model_name: model,
  _model_module_version: V2,
  _view_module: BASE,
  _view_name: "StyleView",
  _view_module_version: V2,
});

const LAYOUT_KEYS = [
  "align_content",
  "align_items",
  "align_self",
  "border_bottom",
  "border_left",
  "border_right",
  "border_top",
  "bottom",
  "display",
  "flex",
  "flex_flow",
  "grid_area",
  "grid_auto_columns",
  "grid_auto_flow",
  "grid_auto_rows",
  "grid_column",
  "grid_gap",
  "grid_row",
  "grid_template_areas",
  "grid_template_columns",
  "grid_template_rows",
  "height",
  "justify_content",
  "justify_items",
  "left",
  "margin",
  "max_height",
  "max_width",
  "min_height",
  "min_width",
  "object_fit",
  "object_position",
  "order",
  "overflow",
  "padding",
  "right",
  "top",
  "visibility",
  "width",
] as const;
const nulls = (keys: readonly string[]): State => Object.fromEntries(keys.map((k) => [k, null]));

type CssValue = string | null;
export type LayoutOptions = Partial<Record<(typeof LAYOUT_KEYS)[number], CssValue>>;

/** CSS of a widget's box (width, height, margin, border, flex, grid, ...), strings as in CSS. */
export class Layout extends Widget {
  declare width: CssValue;
  declare height: CssValue;
  declare margin: CssValue;
  declare padding: CssValue;
  declare display: CssValue;
  declare overflow: CssValue;
  [key: string]: unknown;
  constructor(options: LayoutOptions = {}) {
    super(
      { _model_module: BASE, _model_name: "LayoutModel", _model_module_version: V2, _view_module: BASE, _view_name: "LayoutView", _view_module_version: V2 },
      nulls(LAYOUT_KEYS),
      options,
    );
  }
  protected validate(key: string, value: unknown): unknown {
    if (value !== null && typeof value !== "string") throw this.traitError(key, "a unicode string", value);
    return value;
  }
}

/** A style model: colours, fonts and the description's width, per kind of control. */
export class Style extends Widget {
  constructor(model: ModelClass, keys: State, options: State = {}) {
    super(model, keys, options);
  }
  protected validate(key: string, value: unknown): unknown {
    if (value !== null && typeof value !== "string") throw this.traitError(key, "a unicode string", value);
    return value;
  }
  [key: string]: unknown;
}

const FONT = ["font_family", "font_size", "font_style", "font_variant", "font_weight", "text_color", "text_decoration"];
const STYLES = {
  DescriptionStyleModel: { description_width: "" },
  SliderStyleModel: { description_width: "", handle_color: null },
  ButtonStyleModel: { button_color: null, ...nulls(FONT) },
  HTMLStyleModel: { background: null, description_width: "", font_size: null, text_color: null },
  LabelStyleModel: { background: null, description_width: "", ...nulls(FONT) },
} satisfies Record<string, State>;
type StyleName = keyof typeof STYLES;

interface DOMOptions {
  layout?: Layout | LayoutOptions;
  tooltip?: string | null;
  tabbable?: boolean | null;
  _dom_classes?: never;
}
interface DescribedOptions extends DOMOptions {
  description?: string;
  description_allow_html?: boolean;
  style?: Style | Record<string, CssValue>;
}

/** A widget with a view: its layout, CSS classes, tab order and tooltip. */
abstract class DOMWidget extends Widget {
  declare layout: Layout;
  declare tooltip: string | null;
  declare tabbable: boolean | null;
  constructor(model: ModelClass, defaults: State, options: State, styleName?: StyleName, internal: State = {}) {
    const { layout, style: st, ...rest } = options as DOMOptions & { style?: unknown };
    if (layout !== undefined && !(layout instanceof Layout) && (typeof layout !== "object" || layout === null)) {
      throw new TypeError(`The 'layout' trait of a ${new.target.name} instance expected a Layout, not the ${pyType(layout)}`);
    }
    const extra: State = { layout: layout instanceof Layout ? layout : new Layout(layout ?? {}) };
    if (styleName) extra.style = st instanceof Style ? st : new Style(style(styleName), STYLES[styleName], (st ?? {}) as State);
    else if (st !== undefined) throw new TypeError(`${new.target.name}() got an unexpected keyword argument 'style'`);
    super(model, { _dom_classes: [], tabbable: null, tooltip: null, ...extra, ...defaults }, rest, internal);
  }
  protected validate(key: string, value: unknown, state: State): unknown {
    if (key === "tooltip" && value !== null && typeof value !== "string") throw this.traitError(key, "a unicode string", value);
    if (key === "tabbable" && value !== null && typeof value !== "boolean") throw this.traitError(key, "a boolean", value);
    if ((key === "layout" && !(value instanceof Layout)) || (key === "style" && !(value instanceof Style))) {
      throw this.traitError(key, `a ${key === "layout" ? "Layout" : "Style"}`, value);
    }
    return super.validate(key, value, state);
  }
}

const DESCRIPTION = { description: "", description_allow_html: false };

interface BoundedIntOptions extends DescribedOptions {
  value?: number;
  min?: number;
  max?: number;
  step?: number;
  disabled?: boolean;
}

/** Integer value, min, max and step, the value kept inside [min, max] as ipywidgets keeps it. */
abstract class BoundedInt extends DOMWidget {
  declare value: number;
  declare min: number;
  declare max: number;
  declare step: number;
  declare disabled: boolean;
  declare description: string;
  declare style: Style;
  protected validate(key: string, value: unknown, state: State): unknown {
    if (key === "value" || key === "min" || key === "max" || key === "step") {
      if (typeof value !== "number" || !Number.isInteger(value)) throw this.traitError(key, "an int", value);
      if (key === "min" && value > (state.max as number)) throw new RangeError("setting min > max");
      if (key === "max" && value < (state.min as number)) throw new RangeError("setting max < min");
      if (key === "value") return Math.min(Math.max(value, state.min as number), state.max as number);
      return value;
    }
    return super.validate(key, value, state);
  }
  set(key: string, value: unknown): void {
    super.set(key, value);
    // moving a bound past the value moves the value (ipywidgets' _validate_min / _validate_max)
    if (key === "min" && this.value < this.min) super.set("value", this.min);
    if (key === "max" && this.value > this.max) super.set("value", this.max);
  }
}

export interface IntSliderOptions extends BoundedIntOptions {
  orientation?: "horizontal" | "vertical";
  readout?: boolean;
  readout_format?: string;
  continuous_update?: boolean;
  behavior?: "drag-tap" | "drag-snap" | "tap" | "drag" | "snap";
}

/** A slider over integers (ipywidgets.IntSlider). */
export class IntSlider extends BoundedInt {
  declare orientation: string;
  declare readout: boolean;
  declare continuous_update: boolean;
  constructor(options: IntSliderOptions = {}) {
    super(
      controls("IntSliderModel", "IntSliderView"),
      {
        ...DESCRIPTION,
        max: 100,
        min: 0,
        value: 0,
        step: 1,
        disabled: false,
        orientation: "horizontal",
        readout: true,
        readout_format: "d",
        continuous_update: true,
        behavior: "drag-tap",
      },
      options as State,
      "SliderStyleModel",
    );
  }
}

export interface PlayOptions extends BoundedIntOptions {
  /** milliseconds between steps */
  interval?: number;
  playing?: boolean;
  repeat?: boolean;
  show_repeat?: boolean;
}

/** Play / pause / stop buttons that advance an integer every `interval` ms (ipywidgets.Play). */
export class Play extends BoundedInt {
  declare interval: number;
  declare playing: boolean;
  declare repeat: boolean;
  constructor(options: PlayOptions = {}) {
    super(
      controls("PlayModel", "PlayView"),
      { ...DESCRIPTION, max: 100, min: 0, value: 0, step: 1, disabled: false, interval: 100, playing: false, repeat: false, show_repeat: true },
      options as State,
      "DescriptionStyleModel",
    );
  }
}

export interface ButtonOptions extends DOMOptions {
  description?: string;
  button_style?: "primary" | "success" | "info" | "warning" | "danger" | "";
  disabled?: boolean;
  icon?: string;
  style?: Style | Record<string, CssValue>;
}

/** A button; on_click(fn) runs fn(button) in the kernel when it is clicked (ipywidgets.Button). */
export class Button extends DOMWidget {
  declare description: string;
  declare button_style: string;
  declare disabled: boolean;
  declare icon: string;
  declare style: Style;
  constructor(options: ButtonOptions = {}) {
    super(controls("ButtonModel", "ButtonView"), { description: "", button_style: "", disabled: false, icon: "" }, options as State, "ButtonStyleModel");
    this.on_msg((content) => {
      if (content?.event === "click") this.click();
    });
  }
  private clickHandlers: Array<(b: Button) => void> = [];
  on_click(fn: (b: Button) => void, remove = false): this {
    if (typeof fn !== "function") throw new TypeError("on_click(callback) needs a function");
    this.clickHandlers = remove ? this.clickHandlers.filter((f) => f !== fn) : [...this.clickHandlers, fn];
    return this;
  }
  /** What a click in the front end does: every on_click callback, in order. */
  click(): void {
    for (const f of [...this.clickHandlers]) f(this);
  }
}

type DropdownOption = string | number | [string, unknown];
export interface DropdownOptions extends DescribedOptions {
  options?: Iterable<DropdownOption> | Record<string, unknown>;
  value?: unknown;
  label?: string;
  index?: number | null;
  disabled?: boolean;
}

/**
 * A drop-down list (ipywidgets.Dropdown). The front end knows only the labels and the selected index;
 * `value` and `label` are read from them here, as ipywidgets does, and may be observed too.
 */
export class Dropdown extends DOMWidget {
  declare index: number | null;
  declare disabled: boolean;
  declare description: string;
  declare style: Style;
  private pairs: Array<[string, unknown]> = [];
  constructor(options: DropdownOptions = {}) {
    const { options: opts, value, label, index, ...rest } = options;
    const pairs = Dropdown.normalise(opts ?? []);
    let i: number | null = pairs.length ? 0 : null;
    if (index !== undefined) i = Dropdown.checkIndex(index, pairs.length);
    else if (value !== undefined) i = Dropdown.find(pairs, value, "value");
    else if (label !== undefined) i = Dropdown.find(pairs, label, "label");
    super(
      controls("DropdownModel", "DropdownView"),
      { ...DESCRIPTION, _options_labels: [], disabled: false, index: null },
      rest as State,
      "DescriptionStyleModel",
      { _options_labels: pairs.map(([l]) => l), index: i },
    );
    this.pairs = pairs;
  }
  private static checkIndex(value: unknown, n: number): number | null {
    if (value !== null && (typeof value !== "number" || !Number.isInteger(value))) {
      throw new TypeError(`The 'index' trait of a Dropdown instance expected an int or None, not the ${pyType(value)} ${JSON.stringify(value)}.`);
    }
    if (value !== null && (value < 0 || value >= n)) throw new RangeError("Invalid selection: index out of bounds");
    return value;
  }
  private static normalise(opts: DropdownOptions["options"]): Array<[string, unknown]> {
    if (opts === null || typeof opts !== "object")
      throw new TypeError(`Dropdown options must be a list of labels or [label, value] pairs, not ${pyType(opts)}`);
    const list = Symbol.iterator in opts ? [...(opts as Iterable<DropdownOption>)] : Object.entries(opts);
    return list.map((o) => (Array.isArray(o) ? [String(o[0]), o[1]] : [String(o), o]));
  }
  private static find(pairs: Array<[string, unknown]>, x: unknown, what: "value" | "label"): number {
    const i = pairs.findIndex(([l, v]) => (what === "label" ? l : v) === x);
    if (i < 0) throw new RangeError(`Invalid selection: ${what} not found`);
    return i;
  }
  protected validate(key: string, value: unknown, state: State): unknown {
    if (key === "index") return Dropdown.checkIndex(value, (state._options_labels as string[]).length);
    return super.validate(key, value, state);
  }
  protected derived(): string[] {
    return ["value", "label"];
  }
  protected notify(c: Parameters<Widget["notify"]>[0]): void {
    super.notify(c);
    if (c.name !== "index") return;
    const at = (i: unknown) => (typeof i === "number" ? this.pairs?.[i] : undefined);
    super.notify({ ...c, name: "value", old: at(c.old)?.[1] ?? null, new: at(c.new)?.[1] ?? null });
    super.notify({ ...c, name: "label", old: at(c.old)?.[0] ?? null, new: at(c.new)?.[0] ?? null });
  }
  get options(): Array<[string, unknown]> {
    return this.pairs.map(([l, v]) => [l, v]);
  }
  set options(opts: DropdownOptions["options"]) {
    const pairs = Dropdown.normalise(opts);
    const old = this.value;
    const keep = pairs.findIndex(([, v]) => v === old);
    this.hold_sync(() => {
      this.set("index", null);
      this.pairs = pairs;
      this.set(
        "_options_labels",
        pairs.map(([l]) => l),
      );
      this.set("index", keep >= 0 ? keep : pairs.length ? 0 : null);
    });
  }
  get value(): unknown {
    return this.index === null ? null : (this.pairs[this.index]?.[1] ?? null);
  }
  set value(v: unknown) {
    this.index = Dropdown.find(this.pairs, v, "value");
  }
  get label(): string | null {
    return this.index === null ? null : (this.pairs[this.index]?.[0] ?? null);
  }
  set label(l: string) {
    this.index = Dropdown.find(this.pairs, l, "label");
  }
}

export interface HTMLOptions extends DescribedOptions {
  value?: string;
  placeholder?: string;
}

/** A string shown in a widget layout (HTML, Label), given as its options or as the string itself. */
abstract class StringWidget extends DOMWidget {
  declare value: string;
  declare placeholder: string;
  declare description: string;
  declare style: Style;
  constructor(model: "HTML" | "Label", options: HTMLOptions | string) {
    super(
      controls(`${model}Model`, `${model}View`),
      { ...DESCRIPTION, placeholder: "\u200b", value: "" },
      (typeof options === "string" ? { value: options } : options) as State,
      `${model}StyleModel`,
    );
  }
}

/** HTML shown as is (ipywidgets.HTML): how a kernel draws pictures inside a widget layout. */
export class HTML extends StringWidget {
  constructor(options: HTMLOptions | string = {}) {
    super("HTML", options);
  }
}

/** Plain text (ipywidgets.Label). */
export class Label extends StringWidget {
  constructor(options: HTMLOptions | string = {}) {
    super("Label", options);
  }
}

interface OutputEntry {
  output_type: "stream" | "display_data";
  [k: string]: unknown;
}

/**
 * An output area inside a layout (ipywidgets.Output). `display(obj)`, `append_stdout(text)` and
 * `clear_output()` set its outputs from the kernel; `capture(fn)` routes what fn prints and displays
 * into it (the front end collects the messages of the request being handled, by its msg_id).
 */
export class Output extends DOMWidget {
  declare outputs: OutputEntry[];
  declare msg_id: string;
  constructor(options: DOMOptions = {}) {
    super(
      {
        _model_module: OUTPUT,
        _model_name: "OutputModel",
        _model_module_version: "1.0.0",
        _view_module: OUTPUT,
        _view_name: "OutputView",
        _view_module_version: "1.0.0",
      },
      { msg_id: "", outputs: [] },
      options as State,
    );
  }
  append_stdout(text: string): void {
    this.outputs = [...this.outputs, { output_type: "stream", name: "stdout", text: String(text) }];
  }
  append_stderr(text: string): void {
    this.outputs = [...this.outputs, { output_type: "stream", name: "stderr", text: String(text) }];
  }
  /** Appends obj's display (its Symbol.for("Jupyter.display") bundle, when it builds synchronously). */
  display(obj: unknown): void {
    const f = (obj as Record<symbol, unknown> | null)?.[Symbol.for("Jupyter.display")];
    let data: Record<string, unknown> = { "text/plain": String(obj) };
    if (typeof f === "function") {
      const b = f.call(obj);
      if (b && typeof b.then === "function")
        throw new TypeError("Output.display(obj): obj builds its display asynchronously; await obj.bundle() and pass that");
      data = { ...b };
    } else if (obj && typeof obj === "object" && !Array.isArray(obj) && Object.keys(obj).some((k) => k.includes("/"))) data = obj as Record<string, unknown>;
    const { metadata, ...rest } = data as { metadata?: object } & Record<string, unknown>;
    if (!("text/plain" in rest)) rest["text/plain"] = String(obj);
    this.outputs = [...this.outputs, { output_type: "display_data", data: rest, metadata: metadata ?? {} }];
  }
  clear_output(): void {
    this.outputs = [];
  }
  /** Runs fn with its printed output and displays routed into this widget (ipywidgets' `with out:`). */
  capture<T>(fn: () => T): T {
    const parent = commHost()?.parentHeader?.() as { msg_id?: string } | undefined;
    if (!parent?.msg_id) return fn();
    this.msg_id = parent.msg_id;
    let async = false;
    try {
      const r = fn();
      if (r && typeof (r as { then?: unknown }).then === "function") {
        async = true;
        return (r as unknown as Promise<unknown>).finally(() => (this.msg_id = "")) as T;
      }
      return r;
    } finally {
      if (!async) this.msg_id = "";
    }
  }
}

type Children = Widget[];
export interface BoxOptions extends DOMOptions {
  children?: Children;
  box_style?: "success" | "info" | "warning" | "danger" | "";
}

abstract class Box extends DOMWidget {
  declare children: Children;
  declare box_style: string;
  constructor(model: ModelClass, children: Children | BoxOptions = [], options: BoxOptions = {}) {
    const opts = Array.isArray(children) ? { ...options, children } : children;
    super(model, { box_style: "", children: [] }, opts as State);
  }
  protected validate(key: string, value: unknown, state: State): unknown {
    if (key === "children") {
      if (!Array.isArray(value) || !value.every((c) => c instanceof Widget)) throw this.traitError(key, "a list of widgets", value);
      return [...value];
    }
    return super.validate(key, value, state);
  }
}

/** Children side by side (ipywidgets.HBox): `new HBox([play, slider])`. */
export class HBox extends Box {
  constructor(children: Children | BoxOptions = [], options: BoxOptions = {}) {
    super(controls("HBoxModel", "HBoxView"), children, options);
  }
}

/** Children one above the other (ipywidgets.VBox). */
export class VBox extends Box {
  constructor(children: Children | BoxOptions = [], options: BoxOptions = {}) {
    super(controls("VBoxModel", "VBoxView"), children, options);
  }
}

/** A link kept by the front end, with no kernel round trip (ipywidgets' jslink / LinkModel). */
export class Link extends Widget {
  constructor(source: [Widget, string], target: [Widget, string]) {
    for (const [w, attr] of [source, target]) {
      if (!(w instanceof Widget) || typeof attr !== "string")
        throw new TypeError("jslink([widget, 'attr'], [widget, 'attr']) needs two [widget, attribute] pairs");
      if (!(attr in w.get_state())) throw new TypeError(`${w.constructor.name} has no attribute '${attr}' to link`);
    }
    super(controls("LinkModel", null), { source: [], target: [] }, {}, { source: [...source], target: [...target] });
  }
  /** Ends the link (closes its model). */
  unlink(): void {
    this.close();
  }
}

/** jslink([play, "value"], [slider, "value"]): the two attributes follow each other in the front end. */
export function jslink(source: [Widget, string], target: [Widget, string]): Link {
  return new Link(source, target);
}
