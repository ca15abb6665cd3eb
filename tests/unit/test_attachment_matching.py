"""How a message's new parts are paired with its old attachment items
(``relata.ingest.attachment_versions.match``, docs/decisions/0048): by content first (the
same bytes are the same item, whatever their name), then by name (a changed attachment), each
item once; the parts left are new, the items left are removed; unreadable parts are neither."""

from __future__ import annotations

from datetime import UTC, datetime

from relata.domain.models import Item, SourceType
from relata.ids import content_hash
from relata.ingest.attachment_versions import match
from relata.parsing.eml import EmailAttachment

NOW = datetime(2026, 12, 6, tzinfo=UTC)


def _item(item_id: str, data: bytes) -> Item:
    return Item(
        id=item_id,
        workspace_id="ws",
        title=item_id,
        source_type=SourceType.TEXT,
        content_hash=content_hash(data),
        size_bytes=len(data),
        ingested_at=NOW,
    )


def _part(number: int, name: str, data: bytes | None) -> EmailAttachment:
    reason = None if data is not None else "its content could not be decoded"
    return EmailAttachment(number, name, "text/plain", data=data, reason=reason)


def test_same_bytes_stay_changed_bytes_under_a_name_are_a_version_the_rest_new_or_removed() -> None:
    old = [
        ("a.txt", _item("A", b"alpha")),
        ("b.txt", _item("B", b"beta")),
        ("c.txt", _item("C", b"gamma")),
        ("d.txt", _item("D", b"delta")),
    ]
    parts = [
        _part(1, "renamed-a.txt", b"alpha"),  # the same bytes under another name
        _part(2, "b.txt", b"beta, corrected"),  # changed
        _part(3, "e.txt", b"epsilon"),  # new
        _part(4, "d.txt", None),  # unreadable: neither paired nor new
    ]
    m = match(old, parts)
    assert m.same == {1: "A"}
    assert m.changed == {2: "B"}
    assert m.new == [3]
    assert m.removed == ["C", "D"]


def test_content_wins_over_a_name_and_each_item_pairs_once() -> None:
    old = [("x.txt", _item("X", b"one")), ("y.txt", _item("Y", b"two"))]
    # x.txt now holds what y.txt held; y.txt holds something new; "one" appears twice.
    parts = [
        _part(1, "x.txt", b"two"),
        _part(2, "y.txt", b"three"),
        _part(3, "z.txt", b"one"),
        _part(4, "again.txt", b"one"),
    ]
    m = match(old, parts)
    assert m.same == {1: "Y", 3: "X"}
    assert m.changed == {}
    assert m.new == [2, 4]
    assert m.removed == []


def test_no_old_attachments_makes_every_readable_part_new() -> None:
    m = match([], [_part(1, "a.txt", b"a"), _part(2, "b.txt", None)])
    assert (m.same, m.changed, m.new, m.removed) == ({}, {}, [1], [])
