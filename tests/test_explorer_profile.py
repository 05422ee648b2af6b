"""The Explorer's Profile pane (issue 25): the table's order, a row click showing the
kernel in the graph, the Profile button, the graph's "time" colour. Structure, not times.

``set_state`` is how ipywidgets applies a message from the browser (as in
tests/test_explorer.py)."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("anywidget", reason="the Explorer needs the 'notebook' extra")

import passlab  # noqa: E402
from passlab.errors import DeviceUnavailableError  # noqa: E402
from passlab.views.explorer import Explorer  # noqa: E402
from passlab.views.explorer_profile import SORTS, seconds_text, sorted_kernels  # noqa: E402


@pytest.fixture(scope="module")
def mlp_profile(mlp_build):
    return mlp_build.profile(repeat=3, budget_s=0)


@pytest.fixture
def unprofiled():
    """A build nothing has profiled (the session's mlp_build has a live profile here,
    which an Explorer on it shows)."""
    return passlab.build(passlab.models.mlp())


def kernels_shown(html: str) -> list[str]:
    return re.findall(r'<tr class="plx-profile-row[^"]*" data-kernel="([^"]+)"', html)


def test_the_table_sorts_by_the_clicked_column(mlp_build, mlp_profile):
    ex = Explorer(mlp_build, profile=mlp_profile, tab="profile")
    assert ex.has_profile and ex.profile_sort == "-total"
    by_total = sorted(mlp_profile, key=lambda k: (-k.total_s, k.kernel))
    assert kernels_shown(ex.profile_html) == [k.kernel for k in by_total]
    # each header's button says the order a click asks for; the sorted one turns round
    assert '<th class="num" aria-sort="descending"><button type="button" ' \
           'class="plx-profile-sort" data-sort="total"' in ex.profile_html
    ex.set_state({"profile_sort": "kernel"})
    assert kernels_shown(ex.profile_html) == sorted(k.kernel for k in mlp_profile)
    ex.set_state({"profile_sort": "-calls"})
    assert kernels_shown(ex.profile_html) == [
        k.kernel for k in sorted(sorted(mlp_profile, key=lambda k: k.kernel),
                                 key=lambda k: -k.calls)]
    for key in SORTS:  # every column sorts, both ways
        up, down = sorted_kernels(mlp_profile, key), sorted_kernels(mlp_profile, "-" + key)
        assert sorted(k.kernel for k in up) == sorted(k.kernel for k in down)
    with pytest.raises(Exception, match="profile_sort 'speed' names no column; use one of "
                                        "kernel, calls, median, total"):
        ex.set_state({"profile_sort": "speed"})
    html = ex.profile_html
    for header in ("kernel", "calls", "per call", "per run", "share", "GFLOP/s", "GB/s",
                   "sources", "passes"):
        assert f">{header}" in html
    noisy = [k.kernel for k in mlp_profile if k.noisy]
    for name in noisy:  # noisy rows marked
        assert f'<tr class="plx-profile-row noisy" data-kernel="{name}"' in html


def test_a_row_click_shows_the_kernel_in_the_graph(mlp_build, mlp_profile):
    ex = Explorer(mlp_build, profile=mlp_profile, tab="profile")
    last = [s for s in mlp_build.trace if s.on_main_chain and s.level == "relax"][-1]
    ex.set_state({"profile_kernel": "fused_matmul1_add1"})
    assert (ex.tab, ex.selected, ex.profile_kernel) == ("graph", last.index, "")
    node = next(n.id for n in ex._panes.graph(last.index).nodes
                if n.label == "fused_matmul1_add1")
    assert ex.node == node and ex.focus == [node]
    assert ex.kernel_title.startswith("TIR of fused_matmul1_add1")
    assert "def fused_matmul1_add1" in ex.kernel_text
    assert ex.graph_html and "data-nodes=" in ex.graph_html
    # a kernel folded into its consumer as a weight transform: weights shown
    ex.set_state({"tab": "profile"})
    ex.set_state({"profile_kernel": "transpose"})
    assert (ex.tab, ex.graph_params) == ("graph", "show")
    assert ex.kernel_title.startswith("TIR of transpose")


def test_time_colour_in_the_graph_pane(mlp_build, mlp_profile, unprofiled):
    ex = Explorer(unprofiled, tab="graph", selected=unprofiled.trace.find("FuseTIR").index)
    ex.set_state({"graph_overlay": "time"})  # no profile yet: a note, no colour
    assert "Colour by time needs a profile: open the Profile tab" in ex.graph_html
    ex2 = Explorer(mlp_build, profile=mlp_profile, tab="graph",
                   selected=mlp_build.trace.find("FuseTIR").index, graph_overlay="time")
    assert "colour by time (per run, the profile&#x27;s, log scale)" in ex2.graph_html \
        or "colour by time (per run, the profile's, log scale)" in ex2.graph_html
    assert "#fde725" in ex2.graph_html and "#440154" in ex2.graph_html


def test_the_profile_button_times_the_shown_build(unprofiled):
    ex = Explorer(unprofiled, tab="profile")
    assert not ex.has_profile
    assert "Press Profile to time this build" in ex.profile_html
    assert 'data-profile-run="1"' in ex.profile_html
    ex.set_state({"profile_run": 1})
    assert ex.has_profile and "forward on llvm" in ex.profile_html
    assert ex._profile_view.profile.build is unprofiled
    assert sorted(kernels_shown(ex.profile_html)) == sorted(
        k.kernel for k in ex._profile_view.profile)
    # an edited run is another build: no profile until timed
    ex.edit(ex.history[-1].pipeline.disable("FoldConstant"))
    assert not ex.has_profile and "Press Profile" in ex.profile_html
    ex.set_state({"edit_shown": 0})
    assert ex.has_profile


def test_a_trace_says_what_to_do(mlp_build, mlp_profile):
    ex = Explorer(mlp_build.trace, tab="profile")
    assert "This Explorer holds a trace, not a build, so it cannot time anything" \
        in ex.profile_html
    assert "data-profile-run" not in ex.profile_html
    with pytest.raises(TypeError, match=r"run_profile\(\) needs the build"):
        ex.run_profile()
    assert kernels_shown(Explorer(mlp_build.trace, profile=mlp_profile,
                                  tab="profile").profile_html)
    with pytest.raises(TypeError, match="Explorer: profile must be a passlab Profile"):
        Explorer(mlp_build, profile="fast")


def test_an_explorer_on_a_profiled_build_shows_its_profile(mlp_build, mlp_profile,
                                                          unprofiled):
    # no second press: the build's latest profile, while it is alive
    ex = Explorer(mlp_build, tab="profile")
    assert ex.has_profile and ex._profile_view.profile is mlp_profile
    assert kernels_shown(ex.profile_html) == [k.kernel for k in mlp_profile]
    assert Explorer(unprofiled, tab="profile").has_profile is False
    # a profile of another build is refused, naming what is wrong
    with pytest.raises(ValueError, match=r"Explorer: this profile was measured on another "
                                         r"build \(llvm, 4 kernels\); a profile belongs to "
                                         r"the build it timed"):
        Explorer(unprofiled, profile=mlp_profile)


def test_the_table_says_what_the_numbers_mean(mlp_profile):
    from passlab.views.explorer_profile import pane_html

    html = pane_html(mlp_profile)
    summary = re.search(r'<div class="plx-profile-summary">(.*?)</div>', html).group(1)
    assert summary.startswith("forward on llvm (cpu") and "4 kernels take " in summary
    assert summary == re.sub("'", "&#x27;", mlp_profile.sentence())
    assert "the hooks&#x27;" in html and "instrumented runs" in html
    heads = re.findall(r'class="plx-profile-sort" data-sort="[^"]+" title="sort by ([^"]+)"',
                       html)
    assert heads == ["kernel", "calls", "per call", "per run", "share", "in place / alone",
                     "GFLOP/s", "GB/s", "sources", "passes"]
    # the interval's width beside the median, the interval itself on hover
    k = mlp_profile["fused_matmul_add_relu"]
    row = re.search(r'data-kernel="fused_matmul_add_relu".*?</tr>', html).group(0)
    assert '<span class="plx-profile-ci">+-' in row and "95% interval" in row
    assert f'title="alone: {seconds_text(k.alone_s)} per call"' in row
    # long lists are cut short in the cell, whole on hover
    k = mlp_profile["fused_matmul_add_relu"]
    assert (f'<td class="plx-profile-clip" title="{", ".join(k.passes)}">'
            f'{", ".join(k.passes[:3])} +{len(k.passes) - 3}</td>') in html


@pytest.mark.slow
def test_profile_button_on_a_gpu_build_without_its_device():
    b = passlab.build(passlab.models.mlp(), passlab.Pipeline.default("cuda"))
    ex = Explorer(b, tab="profile")
    ex.set_state({"profile_run": 1})
    assert not ex.has_profile
    assert "DeviceUnavailableError: cannot time this &#x27;cuda&#x27; build: no cuda " \
           "device here" in ex.profile_html
    with pytest.raises(DeviceUnavailableError, match="no cuda device here"):
        ex.run_profile()
