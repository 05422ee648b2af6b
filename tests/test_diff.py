"""Tests for passlab.analysis.diff: per-function IR diffs."""

from __future__ import annotations

import dataclasses
import html.parser
from types import SimpleNamespace

import numpy as np
import pytest
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import passlab.models
from passlab._tvm import printing as _printing
from passlab.analysis.diff import FunctionDiff, ModuleDiff, diff
from passlab.errors import UnknownNameError

MLP_KERNELS = ("add", "add1", "matmul", "matmul1", "relu", "transpose", "transpose1")


# fmt: off
@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        z = R.multiply(y, y)
        return z

    @R.function(private=True)
    def helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.nn.relu(x)


@I.ir_module
class After:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        y = R.add(x, x)
        w = R.subtract(y, x)
        z = R.multiply(w, w)
        return z

    @R.function(private=True)
    def helper2(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.nn.relu(x)
# fmt: on

SMALL_TEXT = """\
2 functions changed: 0 added, 0 removed, 1 modified, 1 renamed (+3 -2 lines)
diff a/main b/main (relax, modified, +2 -1)
--- a/main
+++ b/main
@@ -1,5 +1,6 @@
 @R.function
 def main(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
     y: R.Tensor((4,), dtype="float32") = R.add(x, x)
-    z: R.Tensor((4,), dtype="float32") = R.multiply(y, y)
+    w: R.Tensor((4,), dtype="float32") = R.subtract(y, x)
+    z: R.Tensor((4,), dtype="float32") = R.multiply(w, w)
     return z
diff a/helper b/helper2 (relax, renamed, +1 -1)
rename from helper
rename to helper2
--- a/helper
+++ b/helper2
@@ -1,4 +1,4 @@
 @R.function(private=True)
-def helper(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
+def helper2(x: R.Tensor((4,), dtype="float32")) -> R.Tensor((4,), dtype="float32"):
     gv: R.Tensor((4,), dtype="float32") = R.nn.relu(x)
     return gv"""


class _Tags(html.parser.HTMLParser):
    """Start tags, and whether every opened tag was closed (void tags aside)."""

    VOID = frozenset({"br", "input", "col", "wbr"})  # void elements: no end tag

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[str] = []
        self.stack: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack.pop() == tag


def _structure(text: str) -> list[str]:
    parsed = _Tags(text)
    assert parsed.stack == []
    assert set(parsed.tags) <= {"div", "style", "details", "summary", "span", "code", "table",
                                "tr", "td", "b", "br", "tbody", "label", "input", "colgroup",
                                "col", "wbr"}
    return parsed.tags


@pytest.fixture(scope="module")
def mlp():
    mod = passlab.models.mlp()
    legal = relax.transform.LegalizeOps()(mod)
    annotated = relax.transform.AnnotateTIROpPattern()(legal)
    fused = relax.transform.FuseTIR()(relax.transform.FuseOps()(annotated))
    return SimpleNamespace(mod=mod, legal=legal, annotated=annotated, fused=fused)


def test_legalize_adds_prim_funcs_and_modifies_forward(mlp):
    d = diff(mlp.mod, mlp.legal)
    assert d.added == MLP_KERNELS
    assert d.modified == ("forward",)
    assert d.removed == () and d.renamed == ()
    # the Relax function first (what the pass did to the model), then kernels by name
    assert [fd.status for fd in d] == ["modified"] + ["added"] * 7
    assert [fd.kind for fd in d][:3] == ["relax", "tir", "tir"]
    assert (d.lines_added, d.lines_removed) == (82, 7)
    assert (d["forward"].lines_added, d["forward"].lines_removed) == (8, 7)  # + "cls = Module"
    assert not d.unchanged
    assert repr(d) == "<ModuleDiff: 7 added, 0 removed, 1 modified, 0 renamed>"


def test_relax_function_prints_callees_as_in_its_module(mlp):
    text = diff(mlp.mod, mlp.legal)["forward"].after_text
    assert "permute_dims = R.call_tir(cls.transpose, (fc1_weight,)" in text
    assert text.startswith("@R.function\ndef forward(")
    assert "# from tvm.script" not in text
    indented = "\n".join("    " + line if line else line for line in text.split("\n"))
    assert indented in mlp.legal.script()


def test_fuse_ops_and_fuse_tir(mlp):
    d = diff(mlp.annotated, mlp.fused)
    assert d.added == ("fused_matmul1_add1", "fused_matmul_add_relu")
    assert d.removed == ("add", "add1", "matmul", "matmul1", "relu")
    assert d.modified == ("forward",)
    assert d["fused_matmul_add_relu"].before_text == ""
    assert d["relu"].after_text == ""
    assert d["relu"].to_text().split("\n")[:4] == [
        "diff a/relu b/relu (tir, removed, +0 -10)", "--- a/relu", "+++ /dev/null",
        "@@ -1,10 +0,0 @@"]


def test_no_op_is_unchanged(mlp):
    d = diff(mlp.legal, mlp.legal)
    assert d.unchanged and len(d) == 0 and list(d) == []
    assert d.to_text() == "no changes"
    assert repr(d) == "<ModuleDiff: no changes>"
    assert "no changes" in d.to_html()
    assert d.lines_added == d.lines_removed == 0


def test_structurally_equal_copy_is_unchanged(mlp):
    # A round trip through TVMScript builds new objects: not same_as, but equal.
    copy = tvm.script.from_source(mlp.legal.script())
    assert not copy["forward"].same_as(mlp.legal["forward"])
    assert diff(mlp.legal, copy).unchanged


def test_all_functions_lists_unchanged_ones(mlp):
    d = diff(mlp.legal, mlp.annotated, all_functions=True)
    assert [fd.name for fd in d] == ["forward", *sorted(MLP_KERNELS)]
    assert d["forward"].status == "unchanged"
    assert d.modified == MLP_KERNELS
    assert d["forward"].to_text() == "diff a/forward b/forward (relax, unchanged)"


def test_small_module_exact_text_and_counts():
    d = diff(Before, After)
    assert d.to_text() == SMALL_TEXT
    assert d.renamed == (("helper", "helper2"),)
    assert d.modified == ("main",)
    assert (d["main"].lines_added, d["main"].lines_removed) == (2, 1)
    assert (d.lines_added, d.lines_removed) == (3, 2)
    assert d["helper"] is d["helper2"]  # a rename is found by either name


def test_unified_text_with_line_numbers():
    text = diff(Before, After, function="main").to_text(line_numbers=True)
    assert text.split("\n")[7:12] == [
        "    3     3      y: R.Tensor((4,), dtype=\"float32\") = R.add(x, x)",
        "    4       -    z: R.Tensor((4,), dtype=\"float32\") = R.multiply(y, y)",
        "          4 +    w: R.Tensor((4,), dtype=\"float32\") = R.subtract(y, x)",
        "          5 +    z: R.Tensor((4,), dtype=\"float32\") = R.multiply(w, w)",
        "    5     6      return z",
    ]


def test_renames_can_be_shown_as_removed_and_added():
    d = diff(Before, After, hide_renames=False)
    assert (d.added, d.removed, d.renamed) == (("helper2",), ("helper",), ())


def test_function_filter():
    d = diff(Before, After, function="main")
    assert [fd.name for fd in d] == ["main"]
    assert [fd.name for fd in diff(Before, After, function="helper")] == ["helper2"]
    assert diff(Before, After, function="helper2").renamed == (("helper", "helper2"),)


def test_unknown_function_name_lists_close_matches(mlp):
    with pytest.raises(ValueError) as err:
        diff(mlp.mod, mlp.legal, function="forwad")
    message = str(err.value)
    assert message.startswith("unknown function 'forwad'; did you mean 'forward'? Known ")
    assert message.endswith(": add, add1, forward, matmul, matmul1, relu, transpose, transpose1.")
    assert isinstance(err.value, UnknownNameError)
    with pytest.raises(KeyError, match="unknown function 'nope'"):
        diff(mlp.mod, mlp.legal)["nope"]


def test_bad_inputs():
    with pytest.raises(TypeError, match=r"takes tvm.IRModule or Step .* for 'b', not str"):
        diff(Before, "After")
    with pytest.raises(TypeError, match="needs two modules"):
        diff(Before)
    with pytest.raises(ValueError, match="context must be a non-negative int"):
        diff(Before, After, context=-1)
    failed = SimpleNamespace(name="FuseOps", before=Before, after=None)
    with pytest.raises(TypeError, match=r"step 'FuseOps' given as 'b' has no IRModule in "
                                        r"\.after \(did the pass fail\?\); got NoneType"):
        diff(failed)
    with pytest.raises(ValueError, match="unknown mode 'inline'.* side-by-side, unified"):
        diff(Before, After).to_html("inline")


def test_steps_are_duck_typed(mlp):
    step = SimpleNamespace(name="LegalizeOps", before=mlp.mod, after=mlp.legal)
    d = diff(step)
    assert d.title == "LegalizeOps" and d.modified == ("forward",)
    assert repr(d) == "<ModuleDiff 'LegalizeOps': 7 added, 0 removed, 1 modified, 0 renamed>"
    nxt = SimpleNamespace(name="AnnotateTIROpPattern", before=mlp.legal, after=mlp.annotated)
    span = diff(step, nxt)  # from step's input to nxt's output
    assert span.title == "LegalizeOps … AnnotateTIROpPattern"
    assert span.added == MLP_KERNELS and span.modified == ("forward",)
    assert "<b>LegalizeOps</b>" in d.to_html()


def test_results_are_immutable_sequences():
    d = diff(Before, After)
    assert isinstance(d, ModuleDiff) and len(d) == 2
    # the modified entry first, then the other functions
    assert d[-1].name == "helper2" and d[0] is d["main"]
    assert "main" in d and "helper" in d and "forward" not in d and d[0] in d
    assert [fd.name for fd in d[1:2]] == ["helper2"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.functions = ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        d[0].status = "added"
    assert repr(d["main"]) == "<FunctionDiff 'main': modified relax function>"
    assert repr(d[1]) == "<FunctionDiff 'helper' -> 'helper2': renamed relax function>"


def test_html_side_by_side_and_unified():
    d = diff(Before, After)
    # (side by side, a line may wrap after ( [ , and inside a long name: <wbr>)
    sbs = d.to_html().replace("<wbr>", "")
    tags = _structure(d.to_html())
    assert tags.count("details") == 2 and tags.count("style") == 1
    assert sbs.startswith('<div class="passlab-diff"><style>')
    # highlighted TVMScript (numbers, strings, operators), every piece escaped
    num, eq, f32 = ('<span class="tok-mi">4</span>', '<span class="tok-o">=</span>',
                    '<span class="tok-s2">&quot;float32&quot;</span>')
    assert (f'<tr><td class="pl-ln">3</td><td class="pl-code">    y: R.Tensor(({num},), dtype'
            f'{eq}{f32}) {eq} R.add(x, x)</td><td class="pl-ln">3</td>') in sbs
    # lines pair by what they bind, not by position: the old z beside the new z (only
    # its operands marked), the new w alone
    assert (f'<tr><td class="pl-ln">4</td><td class="pl-code pl-del">    z: R.Tensor(({num},), '
            f'dtype{eq}{f32}) {eq} R.multiply(<span class="pl-hl">y</span>, '
            '<span class="pl-hl">y</span>)</td><td class="pl-ln">5</td><td class="pl-code '
            f'pl-add">    z: R.Tensor(({num},), dtype{eq}{f32}) {eq} R.multiply(<span '
            'class="pl-hl">w</span>, <span class="pl-hl">w</span>)</td></tr>') in sbs
    assert ('<tr><td class="pl-ln"></td><td class="pl-code pl-empty"></td><td class="pl-ln">4'
            '</td><td class="pl-code pl-add">    w:') in sbs
    uni = d.to_html("unified")
    _structure(uni)
    assert ('<tr class="pl-add"><td class="pl-ln"></td><td class="pl-ln">5</td><td class='
            f'"pl-sign">+</td><td class="pl-code">    z: R.Tensor(({num},), dtype{eq}{f32})'
            f' {eq} R.multiply(<span class="pl-hl">w</span>, <span class="pl-hl">w</span>)'
            '</td></tr>') in uni
    assert ".tok-k { color: #8250df; }" in sbs  # the token colours travel with the diff
    assert "<code>helper → helper2</code>" in uni
    assert "http" not in sbs and "<script" not in sbs and "<link" not in sbs


def test_hostile_names_are_escaped():
    name = "<script>alert(1)</script>"
    func = Before["helper"]
    old = tvm.IRModule({tvm.ir.GlobalVar(name): func})
    new = tvm.IRModule({tvm.ir.GlobalVar(name): After["main"]})
    d = diff(old, new)
    assert d.modified == (name,)
    for page in (d.to_html(), d.to_html("unified"), d[0].to_html(),
                 d._repr_mimebundle_()["text/html"]):
        assert "<script>" not in page and "alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        _structure(page)
    step = SimpleNamespace(name=name, before=old, after=new)
    assert "<script>" not in diff(step).to_html()


def test_prints_identically_but_structurally_changed():
    # After MakePackedAPI, FP8StorageLegalize returns PrimFuncs that differ structurally
    # (fresh buffer-data variables) yet print the same TVMScript.
    seen = []

    @tvm.instrument.pass_instrument
    class Keep:
        def run_before_pass(self, mod, info):
            self.before = mod

        def run_after_pass(self, mod, info):
            if info.name == "tirx.FP8StorageLegalize":
                seen.append((self.before, mod))

    with tvm.transform.PassContext(instruments=[Keep()]):
        tvm.compile(passlab.models.mlp(), "llvm")
    (before, after), = seen
    d = diff(before, after)
    assert d.modified == MLP_KERNELS
    assert [fd.text_identical for fd in d] == [True] * 7
    assert (d.lines_added, d.lines_removed) == (0, 0)
    assert d["relu"].to_text() == (
        "diff a/relu b/relu (tir, modified, +0 -0)\n"
        "structurally changed, but both versions print identically")
    page = d["relu"].to_html()
    assert "structurally changed, but both versions print identically." in page
    assert "<table" not in page


def test_identical_text_branch_by_hand():
    func = Before["main"]
    fd = FunctionDiff("main", "modified", "relax", "main", func, func)
    assert fd.text_identical and fd.to_text().endswith("print identically")
    assert "print identically." in fd.to_html("unified")


def test_constants_print_as_metadata_references():
    x = relax.Var("x", R.Tensor((10, 10), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        weight = relax.const(np.arange(100, dtype="float32").reshape(10, 10) + 0.5)
        bb.emit_func_output(bb.emit(relax.op.add(x, weight)))
    mod = bb.get()
    text = diff(Before, mod, function="main")["main"].after_text
    assert 'R.add(x, metadata["ir.GenericConst"][0])' in text
    assert "99.5" not in text and "Metadata omitted" not in text


def test_printing_is_lazy_and_cached(mlp):
    _printing.clear_cache()
    d = diff(mlp.mod, mlp.legal, function="forward")
    assert _printing.cache_info()["size"] == 0  # nothing printed yet
    fd = d["forward"]
    assert fd.after_text is fd.after_text
    assert _printing.cache_info()["misses"] == 1
    again = diff(mlp.legal, mlp.annotated, function="forward", all_functions=True)
    assert again["forward"].before_text == fd.after_text  # same object: from the cache
    assert _printing.cache_info() == {"size": 1, "maxsize": 4096, "hits": 1, "misses": 1}


def test_prefetch_prints_what_a_view_shows_in_threads_and_the_same_text(mlp):
    d = diff(mlp.mod, mlp.legal)
    jobs = d.print_jobs(3)
    assert len(jobs) == sum((fd.before is not None) + (fd.after is not None) for fd in d[:3])
    _printing.clear_cache()
    assert _printing.prefetch(jobs) == len(jobs) >= 2  # several: the thread pool prints
    assert _printing.prefetch(jobs) == 0  # all cached now
    prefetched = [_printing.function_text(f, name) for f, name in jobs]
    assert _printing.cache_info()["misses"] == len(jobs)  # the prefetch's own look-ups
    _printing.clear_cache()
    assert [_printing.function_text(f, name) for f, name in jobs] == prefetched


def test_long_diffs_are_cut_with_a_note(mlp):
    fd = diff(mlp.mod, mlp.legal)["matmul"]
    text = fd.to_text(max_lines=4)
    assert text.split("\n")[-1] == "[truncated: shown 4 of 12 diff lines]"
    assert len(text.split("\n")) == 4 + 4 + 1  # header, ---, +++, @@; 4 lines; note
    assert "[truncated: shown 4 of 12 diff rows]" in fd.to_html(max_lines=4)
    assert "[truncated: shown 4 of 12 diff lines]" in fd.to_html("unified", max_lines=4)
    assert "truncated" not in fd.to_html()


def test_mimebundle_never_raises():
    d = diff(Before, After)
    bundle = d._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"] == SMALL_TEXT
    assert set(d._repr_mimebundle_(include={"text/plain"})) == {"text/plain"}
    assert set(d._repr_mimebundle_(exclude={"text/plain"})) == {"text/html"}

    class Broken:
        def script(self, **kwargs):
            raise RuntimeError("printer exploded")

        def same_as(self, other):
            return False

    # a function TVM cannot print is a one-line note in the diff, the rest still shows
    odd = ModuleDiff((FunctionDiff("f", "added", "tir", None, None, Broken()),))
    assert odd._repr_mimebundle_()["text/plain"].endswith(
        "+# TVM could not print f: RuntimeError: printer exploded")

    class BrokenDiff(ModuleDiff):
        def to_text(self, *args, **kwargs):
            raise RuntimeError("printer exploded")

        def to_html(self, *args, **kwargs):
            raise RuntimeError("printer exploded")

    bundle = BrokenDiff(())._repr_mimebundle_()
    assert bundle["text/plain"] == (
        "<BrokenDiff: could not display: RuntimeError('printer exploded')>")
    assert "passlab-error" in bundle["text/html"]
    assert "RuntimeError: printer exploded" in bundle["text/html"]


def test_first_view_prints_only_the_first_functions(mlp):
    from passlab._tvm import printing as _printing

    d = diff(mlp.mod, mlp.legal)
    _printing.clear_cache()
    html_first = d.to_html(max_functions=2)
    assert _printing.cache_info()["size"] <= 4  # two functions, before and after
    assert "shown 2 of 8 changed functions; not printed: " in html_first
    assert "to_html(max_functions=None) shows all" in html_first
    assert "lines in the shown functions" in html_first
    text = d.to_text(max_functions=1)
    assert text.splitlines()[0].endswith("(+8 -7 lines in the shown functions)")
    assert "shown 1 of 8 changed functions" in text.splitlines()[-1]
    assert "shown" not in d.to_html()  # all of them by default


def test_fuseops_diff_shows_the_rewritten_entry_first_and_kernels_in_natural_order():
    from relax_snapshots import snapshots

    snaps = snapshots("resnet")
    d = diff(snaps["FoldConstant"], snaps["FuseOps"])
    names = [fd.name for fd in d]
    assert names[0] == "forward" and d[0].status == "modified"
    kernels = [n for n in names if n.startswith("fused_")]
    import re

    def key(n):
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)]

    assert kernels == sorted(kernels, key=key)


def test_highlighter_classes_marks_and_escaping():
    from passlab.analysis._highlight import block_html, line_html

    assert line_html('@R.function(private=True)') == (
        '<span class="tok-nd">@R.function</span>(private<span class="tok-o">=</span>'
        '<span class="tok-kc">True</span>)')
    assert line_html("def main(x):  # <b>") == (
        '<span class="tok-k">def</span> <span class="tok-nf">main</span>(x):  '
        '<span class="tok-c1"># &lt;b&gt;</span>')
    # a mark that starts inside a token cuts it; text outside tokens keeps the mark too
    assert line_html("a = 0.5", [(4, 7)]) == (
        'a <span class="tok-o">=</span> <span class="tok-mf pl-hl">0.5</span>')
    assert line_html("ab + c", [(1, 4)]) == (
        'a<span class="pl-hl">b </span><span class="tok-o pl-hl">+</span> c')
    hostile = 'x = "</td><script>alert(1)</script>"'
    assert "<script>" not in line_html(hostile) and "&lt;script&gt;" in line_html(hostile)
    assert block_html("a\nb") == "a\nb"


# fmt: off
@I.ir_module
class Calls:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = Calls
        y = cls.helper(x)
        z = R.multiply(y, y)
        return z

    @R.function
    def helper(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.nn.relu(x)


@I.ir_module
class CallsRenamed:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        cls = CallsRenamed
        y = cls.helper2(x)
        z = R.multiply(y, y)
        return z

    @R.function
    def helper2(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.nn.relu(x)


@I.ir_module
class Ordered:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.add(x, x)
        b = R.multiply(x, x)
        c = R.subtract(a, b)
        return c


@I.ir_module
class Reordered:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        b = R.multiply(x, x)
        a = R.add(x, x)
        c = R.subtract(a, b)
        return c
# fmt: on


def test_a_public_rename_is_one_rename_and_its_caller_shows_no_line_noise():
    d = diff(Calls, CallsRenamed)
    assert d.renamed == (("helper", "helper2"),)
    assert (d.added, d.removed, d.modified) == ((), (), ())
    assert d.callers_updated == ("main",)
    main = d["main"]
    assert main.callees_renamed == (("helper", "helper2"),)
    assert (main.lines_added, main.lines_removed) == (0, 0)
    assert main.to_text() == (
        "diff a/main b/main (relax, modified (renamed callee), +0 -0)\n"
        "only calls renamed functions by their new names: helper -> helper2")
    assert d.to_text().splitlines()[0] == (
        "2 functions changed: 0 added, 0 removed, 0 modified, 1 renamed (1 caller only "
        "calls renamed functions) (+1 -1 lines)")
    assert "modified (renamed callee)" in d.to_html() and "cls.helper" not in d.to_html()
    # hide_renames=False keeps the plain view: a removed and an added function
    plain = diff(Calls, CallsRenamed, hide_renames=False)
    assert (plain.added, plain.removed, plain.modified) == (("helper2",), ("helper",), ("main",))


def test_reordered_bindings_are_moves_not_removals_and_additions():
    d = diff(Ordered, Reordered)
    fd = d["main"]
    assert (fd.lines_added, fd.lines_removed, fd.lines_moved) == (0, 0, 1)
    signs = [line[0] for line in fd.to_text().splitlines()[4:]]
    assert signs == [" ", " ", ">", " ", "<", " ", " "]
    assert fd.to_text().splitlines()[0] == "diff a/main b/main (relax, modified, +0 -0, 1 moved)"
    for mode in ("unified", "side-by-side"):
        page = fd.to_html(mode)
        assert "pl-move" in page and "pl-del" not in page.replace(".pl-del", "")


# ----------------------------------------------------------- diffs that open on the change
def _folds(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("... ")]


def test_unchanged_regions_fold_with_a_count(mlp_build):
    fd = diff(mlp_build.trace.find("FuseOps"))["forward"]
    text = fd.to_text().split("\n")
    # the decorator, the signature and func_attr fold before the one hunk
    assert text[3:5] == ["... 3 unchanged lines", "@@ -4,12 +4,9 @@"]
    assert _folds(fd.to_text()) == ["... 3 unchanged lines"]
    for mode in ("unified", "side-by-side"):
        page = fd.to_html(mode)
        _structure(page)
        assert page.count('<tbody class="pl-fold">') == 1 and page.count("</tbody>") == 1
        assert ('<label class="pl-fold" title="show the unchanged lines"><input type="checkbox" '
                'class="pl-fold-open" aria-label="show 3 unchanged lines">\u22ef 3 unchanged '
                'lines</label>') in page
        # the folded lines travel, hidden, so that a click opens them without a kernel
        assert page.count('<tr class="pl-folded">') == 3
        assert "tbody.pl-fold > tr.pl-folded { display: none; }" in page
    # folded lines are not diff lines: the counts and the line budget ignore them
    assert (fd.lines_added, fd.lines_removed) == (3, 6)
    assert "[truncated" not in fd.to_text(max_lines=15)
    assert fd.to_text(max_lines=14).endswith("[truncated: shown 14 of 15 diff lines]")


def test_a_fold_too_long_to_carry_shows_its_count_only(mlp_build, monkeypatch):
    from passlab.analysis import _diff_layout

    monkeypatch.setattr(_diff_layout, "FOLD_ROWS", 2)
    page = diff(mlp_build.trace.find("FuseOps"))["forward"].to_html("unified")
    assert ('<tbody class="pl-fold"><tr class="pl-fold-head"><td colspan="4">\u22ef 3 '
            'unchanged lines (not rendered)</td></tr></tbody>') in page
    assert "pl-folded" not in page.replace("tr.pl-folded", "")


def test_long_unchanged_signatures_elide():
    from passlab.analysis._diff_layout import elide_signature

    line = ('def main(x: R.Tensor((4,), dtype="float32"), w0: R.Tensor((4, 4), '
            'dtype="float32"), w1: T, w2: T, w3: T, w4: T, w5: T) -> R.Tensor((4,)):')
    head, rest, tail, n = elide_signature(line)
    assert head == 'def main(x: R.Tensor((4,), dtype="float32"), w0: R.Tensor((4, 4), dtype="float32"), w1: T, '
    assert (rest, tail, n) == ("w2: T, w3: T, w4: T, w5: T", ") -> R.Tensor((4,)):", 4)
    assert elide_signature("def main(a, b, c, d, e, f):") is None  # 6: read whole
    assert elide_signature("    lv = R.add(a, b, c, d, e, f, g, h)") is None


def test_the_mlp_signature_reads_whole(mlp_build):
    # 5 parameters: nothing to elide
    assert "more parameters" not in diff(mlp_build.trace.find("LegalizeOps")).to_text()


@pytest.mark.slow
def test_resnet_signature_elides_and_fuseops_folds(resnet_build):
    legal = diff(resnet_build.trace.find("LegalizeOps"))["forward"]
    sig = legal.to_text().split("\n")[5]
    assert sig == (' def forward(x: R.Tensor((1, 3, 32, 32), dtype="float32"), stem_weight: '
                   'R.Tensor((16, 3, 3, 3), dtype="float32"), stem_bn_weight: R.Tensor((16,), '
                   'dtype="float32"), ... 100 more parameters) -> R.Tensor((1, 10), '
                   'dtype="float32"):')
    for mode in ("unified", "side-by-side"):
        _structure(legal.to_html(mode))
        page = legal.to_html(mode).replace("<wbr>", "")  # (side by side: places to wrap)
        assert page.count('aria-label="show 100 more parameters">\u2026 100 more parameters'
                          '</label><span class="pl-rest">') == (1 if mode == "unified" else 2)
        assert "layers_7_bn2_running_var" in page  # opens to the full signature
    fuse = diff(resnet_build.trace.find("FuseOps"))["forward"]
    assert _folds(fuse.to_text()) == ["... 3 unchanged lines"]
    assert (fuse.lines_added, fuse.lines_removed) == (39, 88)


def test_replaced_lines_pair_by_content_not_position(mlp_build):
    from passlab.analysis._diff_layout import pair_lines

    fd = diff(mlp_build.trace.find("FuseOps"))["forward"]
    a, b = fd._before_lines, fd._after_lines
    blocks = [(i1, i2, j1, j2) for group in fd._groups
              for tag, i1, i2, j1, j2 in group if tag == "replace"]
    assert blocks == [(6, 9, 6, 7), (10, 13, 8, 10)]
    # matmul/add/relu -> lv (the fused call on matmul's operands); matmul1/add1/gv -> lv1/gv:
    # the new gv beside the old gv (by position it stood beside add1)
    assert pair_lines(a[6:9], b[6:7]) == [(0, 0), (1, None), (2, None)]
    assert pair_lines(a[10:13], b[8:10]) == [(0, 0), (1, None), (2, 1)]
    gv = ('        gv: R.Tensor((<span class="tok-mi">4</span>, <span class="tok-mi">8</span>), '
          'dtype<span class="tok-o">=</span><span class="tok-s2">&quot;float32&quot;</span>) '
          '<span class="tok-o">=</span> ')
    assert (f'<tr><td class="pl-ln">13</td><td class="pl-code pl-del">{gv}<span class="pl-hl">'
            f'add</span>1</td><td class="pl-ln">10</td><td class="pl-code pl-add">{gv}<span '
            'class="pl-hl">lv</span>1</td></tr>') in fd.to_html().replace("<wbr>", "")


@pytest.mark.slow
def test_onnx_weights_as_inputs_signature_elides():
    from test_importers import onnx_cnn, weights_as_inputs

    b = passlab.build(passlab.load(weights_as_inputs(onnx_cnn()), input=(1, 3, 32, 32)))
    legal = diff(b.trace.find("LegalizeOps"))["main"]
    assert [line for line in legal.to_text().split("\n") if "more parameters" in line] == [
        ' def main(input: R.Tensor((1, 3, 32, 32), dtype="float32"), w1: R.Tensor((8, 3, 3, 3), '
        'dtype="float32"), b1: R.Tensor((8,), dtype="float32"), ... 8 more parameters) -> '
        'R.Tensor((1, 10), dtype="float32"):']
    assert _folds(diff(b.trace.find("FuseOps"))["main"].to_text()) == ["... 2 unchanged lines"]


def test_a_body_wrapped_in_a_new_loop_is_one_added_line_not_the_whole_body():
    # a user pass that runs a kernel's body twice re-indents every line of it: the diff
    # shows the one line it inserted and the others as unchanged, marked re-indented
    # (line-by-line it was "+5 -4": the whole body removed and added again)
    import tvm
    from tvm.script import tirx as T

    @tvm.script.ir_module
    class Before:
        @T.prim_func
        def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
            for i in range(8):
                b[i] = a[i] + T.float32(1)
            for i in range(8):
                b[i] = b[i] * T.float32(2)

    @tvm.script.ir_module
    class After:
        @T.prim_func
        def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):
            for k in range(2):  # noqa: B007 - TVMScript: the loop the pass adds
                for i in range(8):
                    b[i] = a[i] + T.float32(1)
                for i in range(8):
                    b[i] = b[i] * T.float32(2)

    fd = diff(Before, After)["main"]
    assert (fd.lines_added, fd.lines_removed, fd.lines_reindented) == (1, 0, 4)
    assert fd.to_text().splitlines()[1:] == [
        "--- a/main",
        "+++ b/main",
        "@@ -1,5 +1,6 @@",
        " @T.prim_func",
        ' def main(a: T.Buffer((8,), "float32"), b: T.Buffer((8,), "float32")):',
        "+    for k in range(2):",
        "         for i in range(8):",
        "             b[i] = a[i] + T.float32(1.0)",
        "         for i in range(8):",
        "... 1 unchanged line (1 re-indented)",
    ]
    assert fd.to_text().splitlines()[0] == "diff a/main b/main (tir, modified, +1 -0, 4 re-indented)"
    # side by side: each side as it reads there, the row marked; unified: the new text
    sbs = fd.to_html("side-by-side")
    assert sbs.count('<tr class="pl-reindent" title="re-indented: only its indentation changed">') == 3
    assert '<td class="pl-code">    <span class="tok-k">for</span> i' in sbs
    assert '<td class="pl-code">        <span class="tok-k">for</span> i' in sbs
    uni = fd.to_html("unified")
    assert uni.count('<td class="pl-sign pl-reindent"') == 4
    assert uni.count('<tr class="pl-add">') == 1 and '<tr class="pl-del">' not in uni


def test_side_by_side_lines_may_wrap_between_arguments_and_at_a_long_names_parts():
    # a half-width column wraps a long call between its arguments, or a long name at its
    # . and _, never inside a word (was: word-break: break-all, "cls.conv2 / d")
    from passlab.analysis._diff_render import soft_breaks

    line = ('lv = R.call_tir(cls.fused_reshape_cast_reshape1, (x, y[0]), '
            'out_ty=R.Tensor((4,), "float32"))')
    assert soft_breaks(line) == (
        'lv = R.call_tir(<wbr>cls.fused_<wbr>reshape_<wbr>cast_<wbr>reshape1, (<wbr>x, '
        'y[<wbr>0]), out_ty=R.Tensor(<wbr>(<wbr>4,), "float32"))')
    # only text between tags: attributes and entities are left alone
    assert soft_breaks('<span class="a,b(">f(x)</span>&quot;(&quot;') == (
        '<span class="a,b(">f(<wbr>x)</span>&quot;(<wbr>&quot;')
    page = diff(Before, After).to_html("side-by-side")
    assert "<wbr>" in page and "<wbr>" not in diff(Before, After).to_html("unified")


def test_a_steps_diff_takes_its_change_set_instead_of_comparing_again(mlp_build, monkeypatch):
    # a late TIR pass rewrites every kernel: the step's change set (computed once,
    # kept) already compared them, so its diff compares none again
    step = mlp_build.trace.find("tirx.LowerIntrin")
    expected = diff(step.before, step.after)
    assert step.functions_changed.modified == ("fused_matmul1_add1", "fused_matmul_add_relu")

    def compared(a, b):
        raise AssertionError("compared again")

    monkeypatch.setattr(_printing, "same_function", compared)
    d = diff(step)
    assert [(fd.name, fd.status) for fd in d] == [(fd.name, fd.status) for fd in expected] == [
        ("fused_matmul1_add1", "modified"), ("fused_matmul_add_relu", "modified")]
    assert d.to_text() == expected.to_text()
    with pytest.raises(AssertionError, match="compared again"):
        diff(step.before, step.after)  # two modules: no change set to take
