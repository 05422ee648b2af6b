"""The tests that need the machine to themselves, with why: conftest marks them
``serial``, and ``make test`` runs them after the parallel part, one at a time. Node-id
prefixes, so that marking one needs no edit of its module.

``python tests/exclusive.py`` prints their files (the serial part collects only those).
"""

from __future__ import annotations

SERIAL: dict[str, str] = {
    "tests/test_sweep.py::test_ctrl_c_stops_a_hanging_sweep_and_keeps_the_finished_rows":
        "a real SIGINT to this process; the interrupt must land within 10 s",
    "tests/test_attribute.py::test_ctrl_c_keeps_the_finished_rows":
        "a real SIGINT to this process; the interrupt must land within 10 s",
    "tests/test_sweep.py::test_ctrl_c_given_to_another_thread_still_stops_the_wait":
        "blocks SIGINT in the main thread; a 2 s limit",
    "tests/test_explorer.py::test_opens_fast_on_the_largest_model": "a 1 s limit",
    "tests/test_browser_graph.py::test_graph_keeps_zoom_and_kernel_across_steps":
        "a 50 ms limit on a graph swap in the page (130 ms at load 13)",
    "tests/security/test_trace_limits.py::test_zip_bomb_is_refused_quickly_with_bounded_memory":
        "a 5 s limit and a 50 MiB memory bound on a fresh process",
}


if __name__ == "__main__":
    print(*sorted({prefix.split("::")[0] for prefix in SERIAL}))
