"""Claims: the statements an item makes about its subjects, and where items disagree.

The pure core (no database, no model): ``sentences`` splits an item's text with offsets,
``facets`` reads the comparable parts of a sentence (dates, quantities, polarity, direction,
predicate), ``extract`` turns sentences about a subject into claims, ``locate`` validates a
model's claims against the source, ``contradict`` finds conflicting facets between claims of
different items about the same subject, and ``bench`` measures that on SciFact.
docs/decisions/0017-claims-and-contradictions.md records the rules.
"""
