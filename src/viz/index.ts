// torch.viz: inline displays for notebooks. Every function returns an object whose
// [Symbol.for("Jupyter.display")]() gives a MIME bundle (text/plain always, plus HTML, SVG, DOT or
// Vega-Lite as fits), so a cell's last expression renders in any front end.

// The display methods of Tensor, Node and Module (the runtime below viz does not import it).
import "./displays.ts";
export { graph, graphviz, GraphView, type GraphOptions } from "./graph.ts";
export { saved_tensors, SavedTensorsView, type SavedRow } from "./saved.ts";
export { memory_timeline, memory_stages, compare_runs, MemoryTimelineView, MemoryStagesView, CompareRunsView, type TimelineOptions } from "./memory-plots.ts";
export { series as memory_series, CATEGORIES, PHASES } from "./memory-series.ts";
export { engine_trace, EngineTraceView } from "./engine-trace.ts";
export { memory_viz, MemoryVizView, type MemoryVizOptions } from "./memory-viz.ts";
export { module_summary, ModuleSummaryView } from "./module-summary.ts";
export { tensorHtml as tensor_html } from "./tensor-view.ts";
export { vegaLiteToSvg, VEGALITE_MIME, VEGALITE_SCHEMA } from "./vega-render.ts";
export { stepper, StepperView, type StepperOptions } from "./stepper.ts";
