"""The Chinese catalogue is complete and well-formed, and no template writes English itself (issue 30)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.i18n.catalogue import PO, entries
from tests.i18n.chrome import untranslated_template_text

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted([*ROOT.glob("templates/**/*.html"), *ROOT.glob("runs/*/templates/**/*.html"),
                    *ROOT.glob("agentlab/*/templates/**/*.html")])


def test_msgfmt_check_is_clean():
    msgfmt = shutil.which("msgfmt")
    if msgfmt is None:
        pytest.fail("msgfmt missing: run scripts/gettext.sh (installs Debian's gettext)")
    result = subprocess.run([msgfmt, "--check", "--statistics", "-o", "/dev/null", str(PO)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # "N translated messages." and nothing fuzzy or untranslated.
    assert "fuzzy" not in result.stderr and "untranslated" not in result.stderr, result.stderr


def test_every_msgid_is_translated():
    found = entries()
    assert len(found) > 900  # the whole interface, not a sample
    untranslated = [e.msgid for e in found if not e.msgstr.strip()]
    fuzzy = [e.msgid for e in found if e.fuzzy]
    assert not untranslated, f"{len(untranslated)} of {len(found)} untranslated: {untranslated[:10]}"
    assert not fuzzy, f"{len(fuzzy)} fuzzy: {fuzzy[:10]}"


def test_placeholders_survive_translation():
    """A translation keeps every %(name)s of its msgid (msgfmt checks python-format only where it is flagged)."""
    import re

    for e in entries():
        names = sorted(re.findall(r"%\((\w+)\)", e.msgid))
        assert sorted(re.findall(r"%\((\w+)\)", e.msgstr)) == names, (e.msgid, e.msgstr)


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_template_writes_english_itself(template):
    """Visible text and labelling attributes (title, placeholder, aria-label, alt) go through the catalogue."""
    assert untranslated_template_text(template.read_text(encoding="utf-8")) == []


def test_the_scanner_sees_english_left_in_a_template():
    """The check above can fail: literal text, a title with a variable, and what it lets through."""
    found = untranslated_template_text(
        '{% load i18n %}<p title="run {{ n }} of the day">Hello <b>{{ name }}</b> there</p>'
        '<code>make demo</code>{% translate "fine" %}<span aria-label="{% translate "ok" %}">CSV</span>'
        '{% blocktranslate %}a {{ n }} b{% endblocktranslate %}')
    assert found == ["run of the day", "Hello", "there"]
