"""report.md split at its `## ` headings, for the tests that read what a report says (the
package's renderers never look a section up by its heading: they render a report model)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """A report split at its `## ` headings: title, what precedes the first, and the rest."""

    title: str
    preamble: str
    sections: tuple[tuple[str, str], ...]

    def section(self, name: str) -> str | None:
        """The body of the first section whose heading starts with `name`."""
        return next((body for title, body in self.sections if title.startswith(name)), None)


def split(markdown: str) -> Document:
    """A report's title, preamble and `## ` sections. A line that starts with `#` is the
    writer's own: free text reaches report.md through report/mdtext.py, which never lets it
    start a line, so no question or name can forge a section (or the headline)."""
    title, preamble = "", list[str]()
    sections: list[tuple[str, list[str]]] = []
    current: list[str] = preamble
    for line in markdown.splitlines():
        if line.startswith("# ") and not title and not sections:
            title = line[2:].strip()
        elif line.startswith("## "):
            current = []
            sections.append((line[3:].strip(), current))
        else:
            current.append(line)
    return Document(
        title, "\n".join(preamble).strip(), tuple((t, "\n".join(b).strip()) for t, b in sections)
    )
