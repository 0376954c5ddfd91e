"""report.md onto the page: the blocks the reports write, every character as text."""

from __future__ import annotations

from pytest_mtpsweep.report import mdhtml as md
from tests.report import mdsplit
from tests.report.dom import parse

REPORT = """# mtpsweep analysis: demo/r1

**Question (pre-registered):** Is it faster?

## Headline (published endpoint)

| treatment | change | decision |
|---|---|---|
| ngram | +3.10% | **faster** |
| a\\|b | <img src=x> | `x` |

## Limitations

- **Multiplicity:** 2 treatment(s)
- **Truncation:** none
1. **analysed** — 3 records
   - model_id = m; seed = 1

```
subject  cohort
alpha    plain
```
"""


def test_split_finds_title_preamble_and_sections() -> None:
    doc = mdsplit.split(REPORT)
    assert doc.title == "mtpsweep analysis: demo/r1"
    assert doc.preamble == "**Question (pre-registered):** Is it faster?"
    assert [t for t, _ in doc.sections] == ["Headline (published endpoint)", "Limitations"]
    assert (doc.section("Headline") or "").startswith("| treatment |")
    assert doc.section("Census") is None


def test_tables_lists_code_and_emphasis_render_and_markup_stays_text() -> None:
    doc = mdsplit.split(REPORT)
    page = parse(md.render(doc.section("Headline") or "").html)
    rows = [[td.text() for td in tr.find("td")] for tr in page.find("tr")[1:]]
    assert rows == [["ngram", "+3.10%", "faster"], ["a|b", "<img src=x>", "x"]]
    assert page.find("strong")[0].text() == "faster" and not page.find("img")
    limits = parse(md.render(doc.section("Limitations") or "").html)
    items = [li.words() for li in limits.find("ul")[0].find("li")]
    assert items == ["Multiplicity: 2 treatment(s)", "Truncation: none"]
    (ordered,) = limits.find("ol")
    assert ordered.find("li")[0].words().startswith("analysed — 3 records")
    assert ordered.find("ul")[0].words() == "model_id = m; seed = 1"
    assert limits.find("pre")[0].text() == "subject  cohort\nalpha    plain"
