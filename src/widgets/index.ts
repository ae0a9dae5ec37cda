// torch.widgets: Jupyter widgets from TypeScript over the widget protocol (comm target
// "jupyter.widget", the @jupyter-widgets/controls 2.0.0 models), rendered by the widget manager
// JupyterLab 4 and Notebook 7 ship (jupyterlab_widgets). No GradLab front-end code.
export { Widget, openWidgets as widgets, PROTOCOL_VERSION, WIDGET_VIEW_MIME, type Change } from "./widget.ts";
export { Layout, Style, IntSlider, Play, Button, Dropdown, HTML, Label, Output, HBox, VBox, Link, jslink } from "./controls.ts";
