"""The demo corpus ``relata seed`` ingests: five short documents written for Relata.

They describe a fictional tidal-energy project in a fictional harbour town, in Markdown,
plain text and JSON. They share entities (the Meridian Tidal Institute, Kestrel Marine
Systems, the Sabrewing Array, Dr. Ines Vaughan, Tomas Reyes, Port Halloran) and two of them
contradict each other on purpose: the press release says the array entered commercial
operation in March 2019, the harbour council minutes that it was first connected to the grid
in June 2021.

``tour/`` holds two more documents of the same story (a Markdown maintenance log and a JSON
table of seal counts) that are not seeded: the README's tour inspects and ingests them from
a clone (``src/relata/seed/tour/``), so ``relata inspect`` and ``relata ingest`` have real
files to work on.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class DemoDocument:
    filename: str
    created_at: str
    data: bytes


# (file in this package, the document's own date)
_CORPUS: tuple[tuple[str, str], ...] = (
    ("meridian-tidal-institute.md", "2023-05-02"),
    ("sabrewing-array-press-release.txt", "2019-03-14"),
    ("harbour-council-minutes.md", "2022-10-09"),
    ("kestrel-turbine-register.json", "2023-01-20"),
    ("vaughan-field-notes.txt", "2023-04-11"),
)


def demo_documents() -> list[DemoDocument]:
    package = resources.files(__name__)
    return [
        DemoDocument(filename=name, created_at=created, data=package.joinpath(name).read_bytes())
        for name, created in _CORPUS
    ]
