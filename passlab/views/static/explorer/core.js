// passlab Explorer front end: the helpers every module shares. The front end is ES
// modules with explicit imports, joined by passlab/views/_bundle.py into one module for
// anywidget (main.js is the entry) and one script for the report. A pane module exports
// a factory (ctx, paneElement) => ({ onShow?() }); main.js imports them and calls each
// once. Python owns the state; the modules render the synced traits and send the user's
// choices back (ctx.send). Labels from IR are set with textContent; pane HTML comes from
// Python already escaped.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

// a pass as every pane names it: its pipeline position (row.n), else its step index
export function stepText(row) {
  return row.n == null ? `${row.label} (step ${row.i})` : `#${row.n} ${row.label}`;
}

// What every part shares: the model, change listeners removed on cleanup, sending the
// user's choices, and the busy flag (panes dim until the kernel answers).
export function makeContext(model) {
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
