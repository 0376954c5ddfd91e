"""Tables that fit the terminal: cells shortened in the middle, columns given way in order."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_mtpsweep.base.textwidth import fit_widths, render, shorten_middle


def test_shorten_keeps_the_start_and_the_end() -> None:
    assert shorten_middle("/a/very/long/path/model.gguf", 12) == "/a/ver….gguf"
    assert shorten_middle("short", 12) == "short"
    assert len(shorten_middle("x" * 50, 7)) == 7


@given(st.text(min_size=0, max_size=80), st.integers(1, 80))
def test_shortened_text_never_exceeds_its_width(text: str, width: int) -> None:
    out = shorten_middle(text, width)
    assert len(out) <= width
    assert out == text or "…" in out


@given(st.lists(st.integers(1, 60), min_size=2, max_size=8), st.integers(20, 200))
def test_widths_fit_while_a_shrinkable_column_has_room(natural: list[int], width: int) -> None:
    shrink = {0: 1, 1: 1}
    widths = fit_widths(natural, width, shrink)
    fixed = sum(natural[2:]) + 2 * (len(natural) - 1)
    if fixed + 2 <= width:
        assert sum(widths) + 2 * (len(widths) - 1) <= width
    assert widths[2:] == natural[2:]  # only the shrinkable columns gave way
    if widths[1] < natural[1]:
        assert widths[0] == min(natural[0], 1)  # the first gave all it could before the second


def test_render_rules_and_fits() -> None:
    rows = [["item", "observed"], ["model", "sha256 " + "f" * 64]]
    text = render(rows, width=40, shrinkable={1: 10}, rule=True)
    lines = text.splitlines()
    assert lines[1].startswith("-----") and all(len(line) <= 40 for line in lines)
    assert lines[2].startswith("model  sha256 ff") and lines[2].endswith("ff")
