// Kernel-only explorers (fibook.notebook.live_explorer: a box of class `fibook-live`) cannot recompute in a
// static page, and a control that still moves would show a value the stored figure beside it does not. As the
// widget manager renders them, their controls are disabled: selects and inputs, slider tracks (noUiSlider ignores
// keys and drags on a target with a `disabled` attribute), and slider readouts (editable text in ipywidgets 8).
// In Jupyter this file is not loaded, and the same explorer is live.
(function () {
  function disable() {
    document.querySelectorAll(".fibook-live select, .fibook-live input, .fibook-live button")
      .forEach(function (e) { e.disabled = true; });
    document.querySelectorAll(".fibook-live .noUi-target")
      .forEach(function (e) { e.setAttribute("disabled", ""); });
    document.querySelectorAll(".fibook-live .noUi-handle")
      .forEach(function (e) { e.setAttribute("tabindex", "-1"); });
    document.querySelectorAll(".fibook-live .widget-readout")
      .forEach(function (e) { e.contentEditable = "false"; });
  }
  new MutationObserver(disable).observe(document.documentElement, {childList: true, subtree: true});
})();
