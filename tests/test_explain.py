"""Pass cards (passlab.explain), step sentences (Step.explain) and where they show up.

The coverage test records real builds for llvm (both variants), cuda and c and fails on
any pass name without an authored card. Step sentences are checked against numbers
computed here independently (change sets, printed IR, passlab.buffers).
"""

from __future__ import annotations

import importlib
import re

import pytest

import passlab
from passlab import cli
from passlab._render import human_bytes
from passlab.analysis.buffers import buffers

ex = importlib.import_module("passlab.analysis.explain")  # the module (passlab.analysis.explain is the function)

CONTAINERS = {"passlab.pipeline", "library_dispatch", "legalize", "dataflow_lower", "finalize",
              "passlab.tir_pipeline", "s_tir", "tirx", "host_finalize", "sequential",
              "_pipeline"}


def _names(trace) -> set[str]:
    return {s.name for s in trace}


def _record(fn) -> set[str]:
    with passlab.record() as rec:
        fn()
    return _names(rec.trace)


# ------------------------------------------------------------------------ coverage
@pytest.mark.slow
def test_every_pass_of_the_default_pipelines_has_an_authored_card():
    import tvm

    mlp = passlab.models.mlp
    cnn = lambda: passlab.models.resnet(blocks=(1, 1), width=8)  # a small CNN: conv, bn, pool
    seen: dict[str, set[str]] = {
        "llvm fused mlp": _names(passlab.build(mlp()).trace),
        "llvm build mlp": _names(passlab.build(mlp(), passlab.Pipeline.default(
            "llvm", variant="build")).trace),
        "llvm fused cnn": _names(passlab.build(cnn()).trace),
        "llvm build cnn": _names(passlab.build(cnn(), passlab.Pipeline.default(
            "llvm", variant="build")).trace),
        "cuda mlp": _record(lambda: tvm.relax.build(
            mlp(), "cuda", relax_pipeline=passlab.Pipeline.default("cuda").to_pass())),
        "c mlp": _record(lambda: tvm.relax.build(mlp(), "c")),
    }
    every = set().union(*seen.values())
    missing = sorted(n for n in every if n not in ex.cards())
    assert missing == []
    # the builds really cover Relax and TIR, GPU-only and CPU-build-only passes
    assert len(every) >= 85
    assert {"FuseOps", "LegalizeOps", "StaticPlanBlockMemory", "tirx.MakePackedAPI",
            "s_tir.LowerOpaqueBlock"} <= every
    assert "ApplyDefaultSchedule" in seen["cuda mlp"] - seen["llvm fused mlp"]
    assert "tirx.LowerWarpMemory" in seen["cuda mlp"]
    assert "RewriteCUDAGraph" in seen["llvm build mlp"] - seen["llvm fused mlp"]
    assert every >= CONTAINERS | {"codegen"}
    for name in every:
        assert ex.explain(name).source == "passlab"


def test_cards_are_complete_and_well_formed():
    deck = ex.cards()
    assert len(deck) == 103  # 94 of TVM's passes and stages, 9 of LLVM's own
    for name, card in deck.items():
        assert card.name == name and card.source == "passlab"
        assert card.summary.endswith(".") and ". " not in card.summary, name  # one sentence
        assert 120 <= len(card.details) <= 1200, (name, len(card.details))
        assert card.stage, name
        assert card.see_also and all(s in deck and s != name for s in card.see_also), name
        assert card.doc.startswith(("tvm.", "passlab.")) or (
            card.stage == "llvm" and card.doc == "llvm::" + name), name


def test_every_card_names_an_existing_api_page():
    import tvm  # noqa: F401 - loads the wheel

    for card in ex.cards().values():
        if card.stage == "llvm":  # LLVM's C++ pass class: checked above
            continue
        parts = card.doc.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ImportError:
                continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        assert callable(obj) or isinstance(obj, type), card.doc


def test_snippets_are_diffs_and_render_escaped():
    with_snippet = [c for c in ex.cards().values() if c.snippet]
    assert len(with_snippet) >= 15
    for card in with_snippet:
        lines = card.snippet.splitlines()
        assert all(line[:1] in ("-", "+", " ") for line in lines), card.name
        assert any(line.startswith("+") for line in lines), card.name
    page = ex.explain("CallTIRRewrite").to_html()
    assert '<span class="ple-line ple-del">' in page and '<span class="ple-line ple-add">' in page
    body = page.split("</style>", 1)[1]
    assert '<span class="tok-s2">&quot;float32&quot;</span>' in body  # as in diffs, escaped
    assert '"float32"' not in body


def test_explain_by_name_pass_object_and_occurrence():
    import tvm

    card = passlab.explain("FuseOps")
    assert (card.name, card.stage, card.doc) == ("FuseOps", "legalize",
                                                 "tvm.relax.transform.FuseOps")
    assert card.see_also == ("AnnotateTIROpPattern", "FuseTIR")
    assert passlab.explain("FuseOps#2") is card
    assert passlab.explain(tvm.relax.transform.FuseOps()) is card
    assert passlab.explain(tvm.tirx.transform.LowerIntrin()).name == "tirx.LowerIntrin"
    text = card.to_text()
    assert text.splitlines()[:2] == ["FuseOps (stage legalize)", card.summary]
    assert "TVM API: tvm.relax.transform.FuseOps" in text and text.endswith("(source: passlab)")
    bundle = card._repr_mimebundle_()
    assert 'data-pass="FuseOps"' in bundle["text/html"] and bundle["text/plain"] == text


def test_unknown_name_says_what_exists():
    with pytest.raises(passlab.UnknownNameError, match=r"unknown pass 'FuseOp'; did you mean "
                                                          r"'FuseOps', 'FuseTIR'"):
        passlab.explain("FuseOp")
    with pytest.raises(TypeError, match="explain\\(\\) takes a pass name"):
        passlab.explain(3)


def test_fallback_to_the_tvm_docstring():
    card = passlab.explain("LiftTransformParams")  # a TVM pass no default pipeline runs
    assert card.source == "tvm-docstring"
    assert card.summary == "Lift transformation of the parameters of a function."
    assert card.doc == "tvm.relax.transform.LiftTransformParams"
    assert card.details.startswith("When some inputs of the function is marked as 'parameters'")
    assert "Returns" not in card.details and "----" not in card.details
    assert passlab.explain("s_tir.InstrumentBoundCheckers").doc == \
        "tvm.s_tir.transform.InstrumentBoundCheckers"


def test_user_pass_cards_use_their_own_docstring():
    def relu_to_clip(mod):
        """Replace every relu by clip(x, 0, inf).

        Teaching example: same numbers, another operator.
        """
        return mod

    card = passlab.explain(relu_to_clip)
    assert (card.name, card.source, card.stage) == ("relu_to_clip", "user", "user")
    assert card.summary == "Replace every relu by clip(x, 0, inf)."
    assert card.details == "Teaching example: same numbers, another operator."
    bare = passlab.explain(lambda mod: mod)
    assert bare.source == "user" and "without a docstring" in bare.summary

    def evil(mod):
        """<script>alert(1)</script>"""
        return mod

    page = passlab.explain(evil).to_html()
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_docstring_reads_as_prose_and_a_user_pass_is_tagged_once():
    def fold_bn(mod):
        """Fold ``batch_norm`` into :func:`~passlab.models.resnet`'s `conv2d` <b>x</b>.

        Uses ``R.multiply``; see :py:class:`tvm.ir.IRModule`.
        """
        return mod

    page = passlab.explain(fold_bn).to_html()
    assert ('<div class="ple-summary">Fold <code>batch_norm</code> into '
            "<code>passlab.models.resnet</code>&#x27;s <code>conv2d</code> "
            "&lt;b&gt;x&lt;/b&gt;.</div>") in page
    assert ('<div class="ple-details">Uses <code>R.multiply</code>; see '
            "<code>tvm.ir.IRModule</code>.</div>") in page
    assert "``" not in page and ":func:" not in page
    # stage "user" and source "user": one tag, not two
    assert page.count('class="ple-tag') == 1 and '<span class="ple-tag">user</span>' in page


# ------------------------------------------------------------------ step sentences
@pytest.fixture(scope="module")
def trace(mlp_build):
    return mlp_build.trace


def _calls(text: str) -> int:
    """Relax operator calls in printed TVMScript (``x = R.op(...)``, not call_tir)."""
    return len(re.findall(r"= R\.(?!call_tir\b)[a-z_.]+\(", text))


def test_legalize_sentence_counts_operators_and_new_kernels(trace):
    from passlab._tvm.printing import function_text

    step = trace.find("LegalizeOps")
    e = step.explain()
    before = function_text(step.before["forward"], "forward")
    new = [n for n in step.functions_changed.added
           if "T.prim_func" in function_text(step.after[n], n)]
    assert e.kind == "specific"
    assert e.fact("operators") == _calls(before) == 7
    assert e.fact("prim_funcs_added") == len(new) == 7
    assert e.sentence.startswith(f"LegalizeOps turned 7 high-level operator calls into "
                                 f"R.call_tir of 7 new TIR functions ({', '.join(new[:3])}, and "
                                 "4 more); no operator call remains.")


def test_fuse_ops_sentence_names_every_new_kernel(trace):
    step = trace.find("FuseOps")
    e = step.explain()
    added = step.functions_changed.added
    assert e.fact("fused") == len(added) == 2
    assert all(n.startswith("fused_") for n in added)
    assert f"into {len(added)} fused functions ({', '.join(added)})" in e.sentence
    assert e.sentence == ("FuseOps grouped 5 kernel calls into 2 fused functions "
                          "(fused_matmul_add_relu, fused_matmul1_add1); 2 calls stay unfused.")
    # grouped + unfused = the kernel calls before fusion, as printed
    from passlab._tvm.printing import function_text

    calls = function_text(step.before["forward"], "forward").count("R.call_tir(")
    assert e.fact("grouped") + e.fact("unfused") == calls == 7


def test_memory_sentences_state_the_buffer_analysis(trace):
    rewrite = trace.find("CallTIRRewrite")
    allocs = buffers(rewrite).allocations
    e = rewrite.explain()
    assert e.fact("allocations") == len(allocs) == 4
    assert e.fact("bytes") == sum(a.bytes for a in allocs)
    assert f"({human_bytes(e.fact('bytes'))} of constant size)" in e.sentence

    plan = trace.find("StaticPlanBlockMemory")
    after = buffers(plan).allocations
    storages = [a for a in after if a.op == "relax.memory.alloc_storage"]
    e = plan.explain()
    assert e.fact("storages") == len(storages) == 2
    assert e.fact("storage_bytes") == sum(a.bytes for a in storages)
    assert e.sentence == (f"StaticPlanBlockMemory: 3 allocations "
                          f"({human_bytes(e.fact('planned_bytes'))}) now share 2 storages "
                          f"({human_bytes(e.fact('storage_bytes'))}); 1 allocation stays "
                          "R.builtin.alloc_tensor (outputs, or sizes it cannot plan).")

    kill = trace.find("KillAfterLastUse")
    from passlab._tvm.printing import function_text

    kills = function_text(kill.after["forward"], "forward").count("R.memory.kill_")
    assert kill.explain().fact("kills") == kills == 6


def test_dce_generic_tir_and_no_change_sentences(trace):
    dce = trace.find("DeadCodeElimination#1")
    assert dce.explain().sentence == (
        f"DeadCodeElimination removed {len(dce.functions_changed.removed)} unused functions "
        f"({', '.join(dce.functions_changed.removed[:3])}, and 2 more).")
    fold = trace.find("FoldConstant").explain()
    assert fold.kind == "no change" and fold.sentence.startswith("no change: no call has only "
                                                                 "constant inputs")
    purity = trace.find("RemovePurityChecking")
    e = purity.explain()
    peak = buffers(purity).peak_bytes
    assert e.kind == "generic" and e.fact("peak_after") == peak
    assert f"peak temporary memory {human_bytes(peak)} (unchanged)" in e.sentence
    packed = trace.find("tirx.MakePackedAPI")
    e = packed.explain()
    assert e.fact("modified") == len(packed.functions_changed.modified) == 4
    assert e.sentence.startswith("tirx.MakePackedAPI gave the packed calling convention to 4 "
                                 "of 4 PrimFuncs")
    wrapper = trace.find("legalize").explain()
    assert wrapper.kind == "container" and "+4 ~1" in wrapper.sentence


@pytest.mark.slow
def test_cnn_fuse_ops_sentence(resnet_build):
    step = resnet_build.trace.find("FuseOps")
    e = step.explain()
    assert e.fact("fused") == len(step.functions_changed.added) == 12
    assert "into 12 fused functions (" in e.sentence and "and 9 more" in e.sentence


def test_user_pass_step_is_explained_by_its_docstring():
    def count_kernels(mod):
        """Count the fused kernels; changes nothing."""
        return mod

    pipe = passlab.Pipeline.default("llvm").insert(count_kernels, after="legalize")
    trace = passlab.build(passlab.models.mlp(), pipe).trace
    e = trace.find("count_kernels").explain()
    assert e.card.source == "user" and e.card.summary == "Count the fused kernels; changes nothing."
    assert e.kind == "no change"
    df = trace.to_dataframe(explain=True)
    assert df.loc[trace.find("count_kernels").index, "summary"] == ""
    assert df.loc[trace.find("FuseOps").index, "summary"] == passlab.explain("FuseOps").summary
    assert "what it does" in trace.to_text(explain=True)
    assert passlab.explain("FuseTIR").summary in trace.to_html(explain=True)
    assert e.sentence == ("no change: count_kernels returned the module it received "
                          "(structurally the same).")


def test_failed_and_lambda_steps():
    def broken(mod):
        """Always fails."""
        raise ValueError("no luck <here>")

    with pytest.raises(passlab.BuildError) as info:
        passlab.build(passlab.models.mlp(),
                      passlab.Pipeline.default("llvm").insert(broken, after="legalize"))
    e = info.value.step.explain()
    assert (e.kind, e.sentence) == ("failed", "broken failed: ValueError: no luck <here>.")
    assert e.card.summary == "Always fails."
    assert "no luck &lt;here&gt;" in e.to_html()
    pipe = passlab.Pipeline.default("llvm").insert(lambda mod: mod, after="FuseOps")
    step = passlab.build(passlab.models.mlp(), pipe).trace.find("user_lambda")
    card = step.explain().card
    assert (card.name, card.source) == ("user_lambda", "user")
    assert "without a docstring" in card.summary


def test_explain_step_on_a_hand_made_trace():
    """Each kind of sentence, from a trace of tiny hand-built modules (no build)."""
    from test_checks import Add, AddMul, make_trace

    from passlab.analysis import Explanation, explain_step

    tiny = make_trace(("LegalizeOps", Add, Add), ("Rewrite", Add, AddMul), ("mine", AddMul, None),
                      user=("mine",))
    got = [explain_step(s) for s in tiny]
    assert all(isinstance(e, Explanation) for e in got)
    assert [(e.index, e.label, e.kind) for e in got] == [
        (0, "passlab.pipeline", "container"), (1, "legalize", "container"),
        (2, "LegalizeOps", "no change"), (3, "Rewrite", "generic"), (4, "mine", "failed")]
    assert got[3].sentence == (
        "Rewrite changed the module: functions ~1; operator calls +1 multiply; Relax bindings "
        "1 \u2192 2; IR lines of the changed functions 4 \u2192 5; peak temporary memory "
        "16 B \u2192 32 B.")
    assert got[2].sentence.startswith("no change: nothing in this module matched what it rewrites")
    assert got[4].sentence == "mine failed: it returned no module."
    # the Explanation holds the card that passlab.explain gives for the name
    assert got[2].card == passlab.explain("LegalizeOps")


def test_strip_html_is_escaped_and_structured(trace):
    e = trace.find("FuseOps").explain()
    page = e.to_html()
    assert page.startswith("<style>") and 'data-kind="specific"' in page
    # named by its pipeline number, as the pass list names it (step 10 is #5)
    assert (e.index, e.position, e.ref) == (10, 5, "#5 FuseOps")
    assert "Explain: <code>#5 FuseOps</code>" in page and e.sentence in page
    assert "<style>" not in e.to_html(style=False)
    assert e.to_text().splitlines() == [f"#5 FuseOps: {e.sentence}", e.card.summary]


# ----------------------------------------------------------------------- the views
def test_explorer_panes_and_report_carry_the_strip(trace):
    from passlab.views.explorer_panes import PaneRenderer
    from passlab.views.report import render_report

    fuse = trace.find("FuseOps")
    strip = PaneRenderer(trace).explain(fuse.index)
    assert fuse.explain().sentence in strip
    from passlab.views._report_state import read_report

    _, kept = read_report(render_report(trace))
    assert fuse.explain().sentence in kept[f"explain:{fuse.index}"]  # the same strip,
    #   shown above the panes by the Explorer's front end (explain_html)


def test_explorer_widget_syncs_the_strip(trace):
    pytest.importorskip("anywidget")
    from passlab.views.explorer import Explorer

    w = Explorer(trace)
    w.selected = trace.find("StaticPlanBlockMemory").index
    assert "StaticPlanBlockMemory: 3 allocations" in w.explain_html
    w.selected = trace.find("FoldConstant").index
    assert 'data-kind="no change"' in w.explain_html


# -------------------------------------------------------------------------- the CLI
def test_cli_explain(capsys):
    assert cli.main(["explain", "StaticPlanBlockMemory"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "StaticPlanBlockMemory (stage finalize)"
    assert "TVM API: tvm.relax.transform.StaticPlanBlockMemory" in out
    assert cli.main(["explain", "FuseOp"]) == 2
    assert "did you mean 'FuseOps'" in capsys.readouterr().err
    assert cli.main(["explain"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert len(listing) == 2 + len(ex.cards())
    assert cli.main(["explain", "LegalizeOps", "--html"]) == 0
    assert 'data-pass="LegalizeOps"' in capsys.readouterr().out


@pytest.mark.slow
def test_plan_sentence_counts_the_storages_the_buffers_pane_lists():
    import passlab
    from passlab.analysis.buffers import buffers

    plan = passlab.build(passlab.models.by_name("transformer-dynamic")).trace.find(
        "StaticPlanBlockMemory")
    e, r = plan.explain(), buffers(plan)
    symbolic = [a for a in r.dynamic_allocations if a.op == "relax.memory.alloc_storage"]
    # every memory block the pane lists is a storage or an allocation that stays
    assert e.fact("storages") + e.fact("symbolic_storages") + e.fact("kept") \
        == len(r.storages) == 11
    assert e.fact("symbolic_storages") == len(symbolic) == 8
    assert "now share 10 storages (80.0 KiB in the 2 of constant size, 8 symbolic); " \
           "1 allocation stays" in e.sentence
