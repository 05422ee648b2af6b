// passlab Explorer front end (anywidget ES module), part 1 of the bundle: helpers.
// The bundle is these files joined in the order of explorer.py's JS_PARTS (one ES
// module; only main.js exports). A part that draws a pane registers its factory in PANES:
// PANES[tab] = (ctx, paneElement) => ({ onShow?() }); main.js calls it once.
// Python owns the state; the parts render the synced traits and send the user's choices
// back (ctx.send). Labels from IR are set with textContent; pane HTML comes from Python
// already escaped.

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

// tab name -> pane factory (see above); a tab without one shows its `<tab>_html` trait
const PANES = {};

// a pass as every pane names it: its pipeline position (row.n), else its step index
function stepText(row) {
  return row.n == null ? `${row.label} (step ${row.i})` : `#${row.n} ${row.label}`;
}

// What every part shares: the model, change listeners removed on cleanup, sending the
// user's choices, and the busy flag (panes dim until the kernel answers).
function makeContext(model) {
  const off = [];  // [event, handler] pairs to remove on cleanup
  const cleanups = [];
  const ctx = {
    model,
    on(ev, fn) { model.on(ev, fn); off.push([ev, fn]); },
    send(changes) {
      for (const [k, v] of Object.entries(changes)) model.set(k, v);
      model.save_changes();
    },
    busy() {},  // set by main.js once the panes exist
    onCleanup(fn) { cleanups.push(fn); },
    cleanup() {
      for (const [ev, fn] of off) model.off(ev, fn);
      for (const fn of cleanups) fn();
    },
  };
  return ctx;
}
