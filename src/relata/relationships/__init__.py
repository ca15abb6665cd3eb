"""Relationships: scored, evidenced links between two items of a workspace.

The pure core (no database, no model call): ``scoring`` turns the features of a candidate
pair (shared entities weighted by rarity, agreeing and contradicting claims, explicit
references, meaning similarity, chronology on a shared subject, a model's opinion) into a
versioned score in [0, 1], a type and every feature's contribution; ``evidence`` is the
bounded record of why two items are related (quotations from both sides at item, chunk and
offsets), the test of whether evidence changed *materially* since a person rejected it, and
the dedupe key of a pair. docs/decisions/0019-relationships.md records the rules.
"""
