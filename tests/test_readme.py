"""The README is a landing page: short, no development history, links that resolve, and a
quick start that runs as written (with the small MLP instead of the ResNet)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the pages a user reads: no issue numbers or session history there (CHANGELOG.md keeps it)
USER_PAGES = [README, *sorted((ROOT / "docs").rglob("*.md"))]


def _block(text: str, title: str) -> str:
    start = text.index(title)
    return re.search(r"```python\n(.*?)```", text[start:], re.S).group(1)


def test_readme_is_a_landing_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 200
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings == ["Install", "Two commands", "Quick start", "Documentation", "License"]
    assert "make demo" in text and "make test" in text
    assert "https://download.pytorch.org/whl/cpu" in text
    assert len(_block(text, "## Quick start").strip().splitlines()) <= 16
    assert "make docs" in text and "mkdocs serve" in text


def test_no_issue_numbers_or_session_history_in_user_pages():
    found = []
    for page in USER_PAGES:
        for n, line in enumerate(page.read_text().splitlines(), 1):
            if re.search(r"\b(issue|session)s? #?[0-9]", line, re.I):
                found.append(f"{page.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_readme_links_resolve():
    """Every relative link and picture of the README names a file of the repository (the
    links into docs/ work on a code host), and every docs page is linked from it."""
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert [t for t in local if not (ROOT / t).is_file()] == []
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")}
    pages |= {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs" / "guides").glob("*.md")}
    assert sorted(pages - set(local)) == []


def test_quick_start_runs(capsys):
    code = _block(README.read_text(), "## Quick start")
    code = code.replace("passlab.models.resnet()", "passlab.models.mlp()")
    scope: dict = {}
    exec(compile(code, "README quick start", "exec"), scope)
    assert scope["out"].shape == (4, 8)
    assert "2 fused kernels" in capsys.readouterr().out
    assert scope["trace"].find("FuseOps").functions_changed.added
