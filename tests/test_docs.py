"""The documentation: the docstrings' examples run as written, the site builds strictly
(a broken link or reference fails it) with every public name in its API reference, works
offline from file://, and the code of its pages names only what exists."""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import importlib.util
import inspect
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import passlab

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Every module of the package whose docstrings hold examples (found from the source, so a
#: new module's examples run without being listed here).
MODULES = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in (ROOT / "passlab").rglob("*.py") if ">>> " in path.read_text()
)
#: the Markdown a user reads, with code in it
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_public_modules_have_examples():
    for name in ["passlab", "passlab.pipeline", "passlab.recording.trace",
                 "passlab.recording.build", "passlab.models", "passlab.analysis.diff",
                 "passlab.backend", "passlab.io.reproducer", "passlab.recording.checks"]:
        assert name in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"passlab": passlab}, verbose=False,
                             optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_import_is_cheap():
    """`import passlab` imports neither TVM nor Jupyter nor pandas."""
    code = ("import sys, passlab; bad = [m for m in ('tvm', 'ipywidgets', 'IPython', 'pandas', "
            "'graphviz') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ docstrings as Markdown
#: reStructuredText that mkdocstrings shows literally: ``code`` and :role:`target`
RST = re.compile(r"``|:(?:class|func|mod|meth|attr|data|exc|obj|ref):`")


def test_docstrings_are_markdown():
    """The API reference renders docstrings as Markdown: code is `x`, not ``x``, and a
    name is `Trace`, not :class:`Trace` (both show their markup on the page)."""
    found = []
    for path in sorted((ROOT / "passlab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str) and RST.search(node.value.value)):
                line = next(x for x in node.value.value.splitlines() if RST.search(x))
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {line.strip()}")
    assert found == [], "write `x` for ``x`` and `Name` for :class:`Name`:\n" + "\n".join(found)


# ------------------------------------------------------------------ the site
@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """`mkdocs build --strict` of the repository's site into a temporary folder."""
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                          "-d", str(out)], cwd=ROOT, capture_output=True, text=True,
                         env={**_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def _env():
    import os

    return dict(os.environ)


@pytest.mark.slow
def test_site_builds_strictly_with_every_public_name(site):
    """Every name of `passlab.__all__` (and the modules checks, predicates, models, errors)
    has its own entry in the API reference; every page of docs/ is built; every script
    and stylesheet is the site's own (nothing from a network)."""
    reference = "".join(p.read_text() for p in (site / "reference").glob("*.html"))
    documented = dict(re.findall(r'<h2 id="passlab\.(\w+)"[^>]*>\s*<code class="[^"]*'
                                 r'doc-symbol-(\w+)"', reference))
    assert sorted(set(passlab.__all__) - set(documented)) == []
    # each as what it is (`passlab.diff` is the function, not the module of that name)
    kinds = {name: "module" if inspect.ismodule(obj) else "class" if isinstance(obj, type)
             else "function" for name in passlab.__all__ for obj in [getattr(passlab, name)]}
    assert {name: documented[name] for name in kinds} == kinds
    assert {documented[name] for name in ("checks", "predicates", "models", "errors")} == {
        "module"}
    built = {p.relative_to(site).with_suffix(".md").as_posix() for p in site.rglob("*.html")}
    assert sorted({p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")} - built) == []
    for page in site.rglob("*.html"):
        html = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert remote == [], page
    # search without a server: the index as a script (Material's offline plugin)
    assert (site / "search" / "search_index.js").read_text().startswith("var __index = ")


@pytest.mark.slow
@pytest.mark.browser
def test_site_search_works_offline_from_file_urls(site, page):
    """The built site opened from file:// with the network off: pages link to pages and
    search finds a guide, and no request leaves the file system."""
    remote = []
    page.on("request", lambda r: None if r.url.startswith("file:") else remote.append(r.url))
    page.context.set_offline(True)
    page.goto((site / "index.html").as_uri())
    page.click("a[href='guides/saved-traces.html']")
    assert page.url.endswith("/guides/saved-traces.html")
    assert page.locator("h1").inner_text().rstrip("¶") == "Saved traces"
    page.fill("input.md-search__input", "reproducer")
    page.wait_for_selector(".md-search-result__item")
    assert "Reproducers" in page.locator(".md-search-result").inner_text()
    assert remote == [] and page.errors == []


# ------------------------------------------------------------------ code in the pages
def _code(page: Path, lang: str | None = None) -> list[str]:
    """The fenced code blocks of a page (of one language), or with `lang=""` its inline
    code spans."""
    text = page.read_text()
    if lang == "":
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        return re.findall(r"`([^`\n]+)`", text)
    return [body for found, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S)
            if lang is None or found == lang]


def _resolve(dotted: str):
    """`passlab.a.b` as an object: attributes, or submodules imported on the way."""
    obj: object = passlab
    for part in dotted.split(".")[1:]:
        module = f"{obj.__name__}.{part}" if hasattr(obj, "__path__") else None  # a package
        if module and importlib.util.find_spec(module) is not None:
            obj = importlib.import_module(module)  # passlab.recording.build, the module
        elif hasattr(obj, part):
            obj = getattr(obj, part)
        else:
            raise AttributeError(f"{dotted}: no {part!r} in {obj!r}")
    return obj


def test_names_in_the_pages_exist():
    """Every `passlab.x.y` the README and the docs name, in Python examples and inline
    code, exists (functions, classes, modules, their attributes)."""
    missing = []
    for page in PAGES:
        for code in _code(page, "python") + _code(page, ""):
            for dotted in re.findall(r"(?<![\w.])passlab(?:\.[A-Za-z_]\w*)+", code):
                try:
                    _resolve(dotted)
                except (AttributeError, ImportError) as exc:
                    missing.append(f"{page.relative_to(ROOT)}: {exc}")
    assert missing == []


@pytest.fixture(scope="module")
def objects():
    """The objects the pages' examples call by these names, made from the small MLP."""
    from tvm.relax.transform import LegalizeOps

    build = passlab.build(passlab.models.mlp())
    with pytest.raises(passlab.BuildError) as failed:
        passlab.build(passlab.models.mlp(),
                      passlab.Pipeline.default("llvm").insert(_raises, after="FuseOps"))
    from passlab.research.profile import Profile

    with passlab.record() as rec:
        LegalizeOps()(passlab.models.mlp())
    return {"build": build, "trace": build.trace, "pipe": build.pipeline,
            "step": build.trace.find("FuseOps"), "err": failed.value,
            "ex": passlab.Explorer(build), "prof": Profile, "rec": rec,
            "result": passlab.research.Sweep}


def _raises(mod):
    raise ValueError("a user pass that fails")


def _has(obj, name: str) -> bool:
    if hasattr(obj, name):
        return True
    fields = getattr(obj, "__dataclass_fields__", {})
    return name in fields or any(name in getattr(k, "__annotations__", {})
                                 for k in getattr(obj, "__mro__", ()))


@pytest.mark.slow
def test_methods_in_the_examples_exist(objects):
    """`trace.x`, `build.x`, `step.x`, `pipe.x`, `err.x`, `ex.x`, `prof.x`, `rec.x` and
    `result.x` in the pages' Python examples are attributes of what those names hold."""
    names = "|".join(objects)
    missing = []
    for page in PAGES:
        for code in _code(page, "python"):
            for var, attr in re.findall(rf"(?<![\w.])({names})\.([A-Za-z_]\w*)", code):
                if not _has(objects[var], attr):
                    missing.append(f"{page.relative_to(ROOT)}: {var}.{attr}")
    assert sorted(set(missing)) == []


def _help(command: str) -> str:
    from passlab import cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main([command, "--help"])
    return out.getvalue()


def test_command_lines_in_the_pages_exist():
    """Every `passlab COMMAND --option` of the pages' shell blocks is a command of the
    CLI with that option."""
    wrong = []
    helps: dict[str, str] = {}
    for page in PAGES:
        for code in _code(page, "bash"):
            for line in re.sub(r"\\\n\s*", " ", code).splitlines():
                line = line.split("#", 1)[0].strip()
                if not line.startswith("passlab ") or line == "passlab --help":
                    continue
                words = shlex.split(line.replace("[", " ").replace("]", " "))
                command = words[1]
                if command not in helps:
                    try:
                        helps[command] = _help(command)
                    except SystemExit:
                        wrong.append(f"{page.relative_to(ROOT)}: no command {command!r}")
                        continue
                for word in words[2:]:
                    if word == "--":  # the command passlab runs (passlab record -- CMD)
                        break
                    option = word.split("=", 1)[0]
                    if option.startswith("-") and not re.search(
                            rf"(?<![\w-]){re.escape(option)}(?![\w-])", helps[command]):
                        wrong.append(f"{page.relative_to(ROOT)}: passlab {command} {option}")
    assert wrong == []


def test_home_page_quick_start_runs(tmp_path, monkeypatch, capsys):
    """docs/index.md's quick start, as written but on the MLP, in a scratch folder."""
    code = _code(DOCS / "index.md", "python")[0].replace("passlab.models.resnet()",
                                                         "passlab.models.mlp()")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(code, "docs/index.md quick start", "exec"), scope)
    assert scope["out"].shape == (4, 8)
    assert "2 fused kernels" in capsys.readouterr().out
    assert scope["trace"].find("FuseOps").functions_changed.added
    assert (tmp_path / "report.html").stat().st_size > 100_000
