"""report.html opened in a real browser: Debian's chromium, headless, from disk, no network.

The runs are made by the plugin itself: a decode run on the STUB llama-server
(tests/stub_llama_server.py, two treatments, four prompts, two cycles) and authoring runs on
the STUB OpenAI-compatible server (tests/stub_openai_server.py). Each page is dumped as the
browser left it after its scripts ran; the page's own recorder puts any script error, console
error or refused request into #js-errors, and marks that it was watching.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from pytest_mtpsweep.report import Markup
from pytest_mtpsweep.report import mdhtml as md
from pytest_mtpsweep.report.assets import ERRORS_JS, PAGE_JS
from pytest_mtpsweep.report.images import PLOTS_INSTALL
from pytest_mtpsweep.report.model import Figure, Page, Report, Section
from pytest_mtpsweep.report.pagetables import filterable
from pytest_mtpsweep.report.save import write_report
from tests.kinds.authoring.project import KEY_ENV, WRONG, function_of, make_project, scripted
from tests.report import mdsplit
from tests.report.dom import Node, parse
from tests.sandbox import FAKE_GGUF, STUB_SERVER, copy_experiments, only_run
from tests.stub_openai_server import Messages, Script, serve

CHROMIUM = shutil.which("chromium")
NO_CHROMIUM = (
    "Debian's chromium is not installed (scripts/dev test installs it: apt-get install chromium)"
)
STUB = STUB_SERVER  # one copy per xdist worker
KEY = "sk-html-0d5e1c7a"
HOSTILE = '</script><script>alert(1)</script> "><img src=x onerror=alert(1)> \u2028 end'
DECODE = """
question = "Is the stub that sleeps less per token faster?"
baseline = "slow"
cycles = 2
max_tokens = 8
[model]
path = "{model}"
id = "stub"
[server]
port = 0
ready_timeout_s = 30
[[treatments]]
key = "slow"
args = ["--stub-token-ms", "3"]
[[treatments]]
key = "fast"
args = ["--stub-token-ms", "1"]
"""


def chromium(tmp: Path, page: Path, *mode: str, fragment: str = "") -> str:
    """Run headless chromium on the page from disk; its stdout."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    args = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
        "--disable-background-networking", "--disable-component-update", "--no-first-run",
        f"--user-data-dir={tmp / 'chromium-profile'}", *mode, page.resolve().as_uri() + fragment,
    ]  # fmt: skip
    done = subprocess.run(args, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def dump(tmp: Path, page: Path, fragment: str = "") -> Node:
    return parse(chromium(tmp, page, "--dump-dom", fragment=fragment))


def screenshot(tmp: Path, page: Path) -> Path:
    shot = tmp / "report.png"
    chromium(tmp, page, f"--screenshot={shot}", "--window-size=1280,2000")
    assert shot.stat().st_size > 10_000
    return shot


def assert_no_js_errors(dom: Node) -> None:
    box = dom.by_id("js-errors")
    assert box.attrs.get("data-watching") == "yes"  # the recorder ran: its silence means something
    assert box.words() == "" and "hidden" in box.attrs, box.words()


def assert_only_the_pages_own_scripts(dom: Node) -> None:
    scripts = dom.find("script")
    running = [s.text() for s in scripts if s.attrs.get("type") != "application/json"]
    assert running == [ERRORS_JS, PAGE_JS]
    assert all("facets" in s.attrs.get("class", "") for s in scripts if s.text() not in running)


def plain(markdown: str) -> str:
    """What a Markdown cell or line reads as on the page."""
    return " ".join(re.sub(r"\*\*|`", "", markdown).replace("\\|", "|").split())


def decode_run(pytester: pytest.Pytester) -> Path:
    copy_experiments(pytester)
    model = pytester.path / "model.gguf"
    model.write_bytes(FAKE_GGUF)
    ladder = pytester.path / "experiments" / "ladders" / "html.toml"
    ladder.write_text(DECODE.format(model=model))
    few = pytester.path / "few"
    few.mkdir()
    for name in ("prose_01", "prose_02", "structured_01", "structured_02"):
        (few / f"{name}.txt").write_text(f"Write two sentences about {name}.")
    result = pytester.runpytest(
        "experiments/", "--ladder=html", f"--server-bin={STUB}", f"--prompts-dir={few}",
        "--no-calibration", "--boot=1000",
    )  # fmt: skip
    result.assert_outcomes(passed=16)
    return only_run(pytester.path)


def authoring_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, reply: Script
) -> Path:
    monkeypatch.setenv(KEY_ENV, KEY)
    with serve(reply) as url:
        make_project(pytester, {"alpha": url}, repeats=1)
        pytester.runpytest("experiments/", "--ladder=tiny", "--no-warmup").assert_outcomes(passed=4)
    return only_run(pytester.path)


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for f in sorted(path.glob("*.jsonl")) for x in f.read_text().splitlines()]


def test_a_decode_report_opens_with_headline_limitations_and_pictures(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    run = decode_run(pytester)
    page = run / "analysis" / "report.html"
    doc = mdsplit.split((run / "analysis" / "report.md").read_text(encoding="utf-8"))
    assert (run / "analysis_interval_basis" / "report.html").is_file()  # beside each report.md
    dom = dump(tmp_path, page)
    assert_no_js_errors(dom)
    assert_only_the_pages_own_scripts(dom)
    # the headline table, cell for cell as report.md has it
    table = [line for line in (doc.section("Headline") or "").splitlines() if line.startswith("|")]
    want = [[plain(c) for c in md._cells(line)] for line in table[2:]]
    headline = dom.by_id("headline")
    got = [[td.words() for td in tr.find("td")] for tr in headline.find("tbody")[0].find("tr")]
    assert got == want and len(want) == 3  # fast on prose, structured, pooled
    # Limitations: open, second, every item report.md names
    sections = dom.find("details", class_="section")
    assert [s.attrs["id"] for s in sections[:3]] == ["question", "limitations", "pictures"]
    limits = dom.by_id("limitations")
    bullets = [
        line[2:] for line in (doc.section("Limitations") or "").splitlines() if line[:2] == "- "
    ]
    assert "open" in limits.attrs and [li.words() for li in limits.find("li")] == [
        plain(b) for b in bullets
    ]
    assert any(b.startswith("**Truncation:**") for b in bullets)  # the stub always hits the cap
    images = dom.find("img")
    if Figure.can_draw():
        assert [i.attrs["alt"] for i in images] == [
            "forest plot",
            "paired dot plot",
            "session timeline",
        ]
        assert all(i.attrs["src"].startswith("data:image/png;base64,") for i in images)
        assert headline.find("img")[0].attrs["alt"] == "forest plot"  # in the first screen
    else:
        assert not images and PLOTS_INSTALL in dom.by_id("pictures").words()
    # the long per-cell lists are filterable tables the page's script equipped
    equivalence = dom.by_id("equivalence-cells")
    assert len(equivalence.find("tr")) == 1 + 16 // 2  # a header and one row per compared cell
    assert any("8 of 8 shown" in f.words() for f in dom.find("div", class_="filters"))
    assert not dom.by_id("content-equivalence").attrs.get("open")  # the detail is collapsed
    screenshot(tmp_path, page)


def test_an_authoring_report_opens_the_cell_its_fragment_names(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = authoring_run(pytester, monkeypatch, Script(reply=scripted, key=KEY))
    page = run / "analysis" / "report.html"
    cell = next(c for c in records(run / "cells") if c["cohort"] == "plain")  # wrong, then right
    name = str(cell["cell"])
    turns = [t for t in records(run / "turns") if t["cell"] == name]
    messages: Messages = json.loads((run / str(cell["conversation"])).read_text())["messages"]
    closed = dump(tmp_path, page)
    assert_no_js_errors(closed)
    assert not [d for d in closed.find("details", class_="cell") if "open" in d.attrs]
    dom = dump(tmp_path, page, fragment=f"#cell={quote(name, safe='')}")
    assert_no_js_errors(dom)
    opened = [d.attrs["id"] for d in dom.find("details", class_="cell") if "open" in d.attrs]
    assert opened == [f"cell-{name}"] and len(dom.find("details", class_="cell")) == 4
    shown = dom.by_id(f"cell-{name}").find("div", class_="turn")
    assert len(shown) == len(turns) == 2
    first = [p.text() for p in shown[0].find("pre")]
    assert first == [
        messages[0]["content"],  # the prompt
        messages[1]["content"],  # the reply
        WRONG[function_of(messages)],  # the artefact taken from it
        turns[0]["error_first_line"],  # what the checker said
    ]
    assert shown[1].find("pre")[0].text() == messages[2]["content"]  # the checker's feedback
    for turn, html in zip(turns, shown, strict=True):
        heading = html.find("h4")[0].words()
        assert str(turn["verdict"]) in heading
        assert f"{turn['prompt_tokens']} prompt + {turn['completion_tokens']} completion" in heading
    bar = dom.find("div", class_="filters")[0]
    labels = {lab.text().split()[0]: lab for lab in bar.find("label")}
    assert list(labels) == ["subject", "cohort", "task", "outcome"]
    assert [o.text() for o in labels["cohort"].find("option")] == ["all", "doctest", "plain"]
    assert_only_the_pages_own_scripts(dom)
    screenshot(tmp_path, page)


def hostile(messages: Messages) -> str:
    """A reply that tries to end the page's scripts, add an image, and break a JS string."""
    name = function_of(messages)
    return f"{HOSTILE}\n```python\ndef {name}(*args):\n    raise ValueError({HOSTILE!r})\n```\n"


def test_a_hostile_reply_is_text_on_the_page_and_runs_nothing(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = authoring_run(pytester, monkeypatch, Script(reply=hostile, key=KEY))
    page = run / "analysis" / "report.html"
    assert KEY not in page.read_text(encoding="utf-8")
    turns = records(run / "turns")
    assert turns and all(t["verdict"] == "fail" for t in turns)
    dom = dump(tmp_path, page)
    assert_no_js_errors(dom)  # an alert would be recorded there
    assert_only_the_pages_own_scripts(dom)
    assert not dom.find("img")
    texts = [p.text() for p in dom.find("pre")]
    replies = [t for t in texts if t.startswith(HOSTILE)]
    assert len(replies) == len(turns)  # every reply, whole, as text (U+2028 included)
    errors = {str(t["error_first_line"]) for t in turns}
    assert any("alert(1)" in e for e in errors) and errors <= set(texts)


def test_strings_that_look_like_markup_stay_text_through_the_pages_script(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    (run / "analysis").mkdir(parents=True)
    (run / "plan.json").write_text(json.dumps({"run_id": HOSTILE}))
    rows = [[HOSTILE, HOSTILE], ["plain", "ok"]]
    body = Markup.concat([Markup.el("p", HOSTILE, title=HOSTILE),
                          filterable("t", ["name", "verdict"], rows, ["verdict"])])  # fmt: skip
    report = Report(HOSTILE, (), (Section(HOSTILE, (Page(body),), open=True),))
    _, page = write_report(report, run / "analysis", run)
    dom = dump(tmp_path, page)
    assert_no_js_errors(dom)
    assert_only_the_pages_own_scripts(dom)
    assert not dom.find("img")
    assert dom.find("title")[0].text() == f"mtpsweep: {HOSTILE}"
    assert [s.text() for s in dom.find("summary")] == [
        "Question and headline",
        "Limitations",
        HOSTILE,
    ]
    assert dom.find("p", title=HOSTILE)[0].text() == HOSTILE
    # the facets went in as JSON and came out of the script as option text, whole
    assert [o.text() for o in dom.find("option")] == ["all", HOSTILE, "ok"]


def test_a_load_report_opens_with_its_headline_and_no_server(tmp_path: Path) -> None:
    from pytest_mtpsweep.kinds.load.analysis.compute import analyse
    from tests.kinds.load.run_fixture import HOSTILE_PROMPT, write_run

    run = write_run(tmp_path)  # records as the load kind writes them; the analysis needs no server
    assert not isinstance(analyse(run, boot=200, seed=1), str)
    page = run / "analysis" / "report.html"
    doc = mdsplit.split((run / "analysis" / "report.md").read_text(encoding="utf-8"))
    dom = dump(tmp_path, page)
    assert_no_js_errors(dom)
    assert_only_the_pages_own_scripts(dom)
    want = [plain(x[2:]) for x in (doc.section("Headline") or "").splitlines() if x[:2] == "- "]
    assert [li.words() for li in dom.by_id("headline").find("li")] == want and want
    assert "open" in dom.by_id("question").attrs and "open" in dom.by_id("limitations").attrs
    if Figure.can_draw():
        assert len(dom.by_id("pictures").find("img")) == 3
    # the page's script built the request table's filters from its JSON facets, whole
    counts = [b.find("span", class_="count")[0].text() for b in dom.find("div", class_="filters")]
    assert counts == ["8 of 8 shown", "48 of 48 shown"]  # every block, every request
    prompts = next(lab for lab in dom.find("label") if lab.text().startswith("prompt"))
    assert HOSTILE_PROMPT in [o.text() for o in prompts.find("option")]
    assert not dom.by_id("requests").attrs.get("open")  # the detail is collapsed
    screenshot(tmp_path, page)


def test_without_matplotlib_the_page_has_the_tables_and_says_how_to_get_pictures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, analyse_run
    from tests.strategies import Design, make_records, noisy, write_run

    monkeypatch.setattr("pytest_mtpsweep.report.model.Figure.can_draw", lambda: False)
    design = Design()
    run = write_run(tmp_path, design, make_records(design, noisy(design, {"ngram": 1.1})))
    result = analyse_run([run], AnalyseOptions(boot=1000))
    assert str(run / "analysis" / "report.html") in result.written
    page = parse((run / "analysis" / "report.html").read_text(encoding="utf-8"))
    assert not page.find("img") and not (run / "analysis" / "forest.png").exists()
    assert PLOTS_INSTALL in page.by_id("pictures").words()
    assert page.by_id("headline").find("table")  # the tables are all there


def test_the_forest_plot_shares_one_x_axis_across_its_panels(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plots extra draws the forest plot")
    from pytest_mtpsweep.kinds.decode.analysis.io import AnalyseOptions, load_and_analyse
    from pytest_mtpsweep.kinds.decode.report.plot import forest_figure
    from tests.strategies import Design, make_records, noisy, write_run

    design = Design()
    # prose barely moves, structured a lot: their own axes would differ
    rates = noisy(design, {"ngram": 1.02}, sd=0.01)
    records = make_records(design, rates)
    for r in records:
        if r["subset"] == "structured" and r["treatment"] == "ngram":
            r["decode_rate_tps_primary"] *= 1.6
    result = load_and_analyse([write_run(tmp_path, design, records)], AnalyseOptions(boot=1000))
    figure = forest_figure(result)
    assert figure is not None
    axes = figure.axes
    assert len(axes) == 3 and len({ax.get_xlim() for ax in axes}) == 1
