"""When an Explorer lets go of its build: closed, or dropped by the user.

ipywidgets keeps every widget in its registry (`Widget.widgets`) and its comm keeps a
bound method of it, until `close()`: a dropped Explorer, with its build, trace and edit
history, would stay in the kernel for good (+24 MiB for each ResNet Explorer re-opened
with `ex = passlab.Explorer(passlab.build(m))`). Every new Explorer therefore closes
the earlier ones that nothing but ipywidgets' own registry refers to, and that no front
end shows: the front end says when a view opens and when it goes (a re-run cell's output
is cleared), and an Explorer handed to IPython's display counts as shown until then.
IPython's output cache (`Out[n]`, `_`) does not keep an Explorer whose views are gone.

An Explorer that nothing refers to is also closed right after the cell (or message) that
dropped it, on the kernel's event loop, and at the end of every full cycle collection
(`gc.collect()`; a callback in `gc.callbacks`): the last one re-opened with
`ex = passlab.Explorer(...)` no longer waits for the next Explorer to let go of the one
before it. Closing one also drops what the printing and diff caches (which outlive
traces, each entry keeping its function alive) remember of functions nobody else refers
to any more.

No Jupyter here: the functions take the widget and read ipywidgets' and IPython's state
only through the objects they are given or `sys.modules`.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

__all__ = ["OPEN", "release_dropped", "views_message", "soon", "defer_release",
           "watch_collections"]

#: The Explorers not closed yet (weakly: the registry must not be one more holder).
OPEN: weakref.WeakSet[Any] = weakref.WeakSet()


def _own_refs(widget: Any) -> int:
    """References ipywidgets itself holds to `widget`: its registry entry and the
    comm's message callback (a bound method of the widget)."""
    n = 0
    registry = sys.modules.get("ipywidgets.widgets.widget")
    instances = getattr(registry, "_instances", None)
    comm = getattr(widget, "comm", None)
    if comm is not None and isinstance(instances, dict) and \
            instances.get(getattr(comm, "comm_id", None)) is widget:
        n += 1
    callback = getattr(comm, "_msg_callback", None)
    if getattr(callback, "__self__", None) is widget:
        n += 1
    return n


def _cache_refs(widget: Any) -> int:
    """References IPython's output cache holds to `widget` (`Out[n]`, `_n`, `_`,
    `__`, `___`): what displaying it as a cell's last expression left behind."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    ns = getattr(shell, "user_ns", None)
    if not isinstance(ns, dict):
        return 0
    out = ns.get("Out")
    out = out if isinstance(out, dict) else {}
    n = sum(1 for v in out.values() if v is widget)
    n += sum(1 for key in ("_", "__", "___") if ns.get(key) is widget)
    n += sum(1 for key in out if ns.get(f"_{key}") is widget)
    return n


_releasing = False  # release_dropped is running (a collection inside it does not re-enter)


def release_dropped() -> int:
    """Close every open Explorer that only ipywidgets (and IPython's output cache) still
    refers to and that no front end shows; returns how many were closed. Closing any
    also forgets what the IR caches hold of functions nothing refers to any more."""
    global _releasing
    if _releasing:
        return 0
    _releasing = True
    try:
        closed = 0
        for widget in list(OPEN):
            if widget.comm is None or getattr(widget, "_views", 0) > 0 \
                    or getattr(widget, "_pinned", False):
                continue
            # the list above, the loop variable and getrefcount's argument: 3 references
            held = sys.getrefcount(widget) - 3 - _own_refs(widget) - _cache_refs(widget)
            if held <= 0:
                widget.close()
                closed += 1
        widget = None  # the loop's name no longer holds the last one
        if closed:
            from passlab.analysis.ir_text import forget_unreferenced

            forget_unreferenced()
        return closed
    finally:
        _releasing = False


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    """`gc.callbacks`: after a full collection (`gc.collect()`), close the Explorers
    nothing refers to: on the kernel's event loop when one runs (a collection can come
    at any allocation, inside ipykernel's own code), else at once; never from another
    thread (the next collection in the main thread will)."""
    if phase != "stop" or info.get("generation") != 2 or not OPEN or _releasing:
        return
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    if not defer_release():
        release_dropped()


def watch_collections() -> None:
    """Install the collection callback in `gc.callbacks` (once)."""
    import gc

    if _after_collection not in gc.callbacks:
        gc.callbacks.append(_after_collection)


def soon(fn: Any, *args: Any) -> bool:
    """Call `fn(*args)` once the current message (a cell, a click) is handled, on the
    kernel's event loop; nothing without one. Returns whether it was scheduled."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    loop.call_soon(fn, *args)
    return True


def defer_release() -> bool:
    """Run `release_dropped` once the current message is handled (its frames hold the
    widget it was for), on the kernel's event loop; nothing without one. Returns whether
    it was scheduled."""
    return soon(release_dropped)


def views_message(widget: Any, content: Any, buffers: Any = None) -> None:
    """A custom message of the front end: `{"views": +1}` when a view of `widget`
    opens, `{"views": -1}` when one goes. A module function, not a bound method: the
    widget's callback list must not hold the widget."""
    if not isinstance(content, dict) or content.get("views") not in (1, -1):
        return
    widget._views = max(0, getattr(widget, "_views", 0) + content["views"])
    if content["views"] > 0:
        widget._pinned = False  # a view holds it now: pinned while views are open
    elif widget._views == 0:
        defer_release()
