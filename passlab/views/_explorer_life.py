"""When an Explorer lets go of its build: closed, or dropped by the user.

ipywidgets keeps every widget in its registry (`Widget.widgets`) and its comm keeps a
bound method of it, until `close()`: a dropped Explorer, with its build, trace and edit
history, would stay in the kernel for good (+24 MiB for each ResNet Explorer re-opened
with `ex = passlab.Explorer(passlab.build(m))`). Every new Explorer therefore closes
the earlier ones that nothing but ipywidgets' own registry refers to, and that no front
end shows: the front end says when a view opens and when it goes (a re-run cell's output
is cleared), and an Explorer handed to IPython's display counts as shown until then.
IPython's output cache (`Out[n]`, `_`) does not keep an Explorer whose views are gone.

No Jupyter here: the functions take the widget and read ipywidgets' and IPython's state
only through the objects they are given or `sys.modules`.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

__all__ = ["OPEN", "release_dropped", "views_message", "defer_release"]

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


def release_dropped() -> int:
    """Close every open Explorer that only ipywidgets (and IPython's output cache) still
    refers to and that no front end shows; returns how many were closed."""
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
    return closed


def defer_release() -> None:
    """Run `release_dropped` once the current message is handled (its frames hold
    the widget it was for), on the kernel's event loop; nothing without one."""
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    loop.call_soon(release_dropped)


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
