"""Opening zip archives (DOCX) within bounds, before anything is decompressed.

Zip bombs are stopped from the metadata alone: the entry count is read from the
end-of-central-directory record *before* ``zipfile`` parses the directory (so a directory of
millions of entries is never materialised), then every entry's declared size and compression
ratio and the archive's total declared size are checked. Reading is then safe because
``zipfile`` never yields more than an entry's declared size, and only stored or deflated
entries are read (bzip2/LZMA streams decompress without an output bound).
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from typing import IO

from relata.domain.errors import UnsupportedContent
from relata.domain.models import SourceType
from relata.parsing.model import MiB, ParseLimits, too_big, unparseable

ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
# A central-directory record is 46 bytes plus its name; real names are short.
_MAX_DIRECTORY_BYTES_PER_ENTRY = 1024
# Small entries may legitimately compress extremely well (a page of spaces); the ratio bound
# applies to entries that would expand to more than this.
_RATIO_FLOOR_BYTES = 1 * MiB
_READABLE_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})

# Library exceptions that mean "this archive is damaged".
ZIP_ERRORS: tuple[type[BaseException], ...] = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    struct.error,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
    KeyError,
    IndexError,
    OverflowError,
    UnicodeDecodeError,
)


def is_zip(data: bytes) -> bool:
    return data[:4] in ZIP_MAGICS


def damaged(detail: str) -> UnsupportedContent:
    return UnsupportedContent(f"the content is a damaged zip archive ({detail})", field="content")


def _directory_size(data: bytes) -> tuple[int, int]:
    """(entry count, central directory bytes) from the end-of-central-directory records."""
    pos = data.rfind(_EOCD, max(0, len(data) - (_EOCD_SIZE + 0xFFFF)))
    if pos < 0 or len(data) - pos < _EOCD_SIZE:
        raise damaged("no end-of-central-directory record")
    fields = struct.unpack("<4s4H2LH", data[pos : pos + _EOCD_SIZE])
    entries, dir_bytes = int(fields[4]), int(fields[5])
    if entries == 0xFFFF or dir_bytes == 0xFFFFFFFF:
        # Zip64: the 64-bit record sits right before its 20-byte locator.
        loc = pos - 20
        rec = loc - 56
        if rec < 0 or data[loc : loc + 4] != _ZIP64_LOCATOR or data[rec : rec + 4] != _ZIP64_EOCD:
            raise damaged("inconsistent Zip64 records")
        z64 = struct.unpack("<4sQ2H2L4Q", data[rec : rec + 56])
        entries, dir_bytes = int(z64[7]), int(z64[8])
    return entries, dir_bytes


def open_zip(data: bytes, limits: ParseLimits) -> zipfile.ZipFile:
    """Open ``data`` as a zip archive after checking every bound that metadata can show."""
    entries, dir_bytes = _directory_size(data)
    if entries > limits.max_zip_entries:
        raise too_big(f"the archive has {entries} entries; the limit is {limits.max_zip_entries}")
    if dir_bytes > limits.max_zip_entries * _MAX_DIRECTORY_BYTES_PER_ENTRY:
        raise too_big(f"the archive's central directory is too large ({dir_bytes} bytes)")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except ZIP_ERRORS as exc:
        raise damaged(type(exc).__name__) from exc
    if len(infos) > limits.max_zip_entries:
        raise too_big(
            f"the archive has {len(infos)} entries; the limit is {limits.max_zip_entries}"
        )
    total = 0
    for info in infos:
        total += info.file_size
        if info.file_size > _RATIO_FLOOR_BYTES:
            ratio = info.file_size / max(1, info.compress_size)
            if ratio > limits.max_compression_ratio:
                raise too_big(
                    f"an archive entry expands {ratio:.0f}:1, above the limit of "
                    f"{limits.max_compression_ratio:g}:1 (a zip bomb?)"
                )
    if total > limits.max_uncompressed_bytes:
        raise too_big(
            f"the archive expands to {total} bytes; the limit is "
            f"{limits.max_uncompressed_bytes} bytes (a zip bomb?)"
        )
    return archive


def open_member(archive: zipfile.ZipFile, name: str) -> IO[bytes] | None:
    """A reader for entry ``name`` (None when absent); refuses encrypted or exotic entries."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    if info.flag_bits & 0x1:
        raise UnsupportedContent("the document is encrypted", field="content")
    if info.compress_type not in _READABLE_METHODS:
        raise unparseable(f"archive entry {name} uses an unsupported compression method")
    try:
        return archive.open(info)
    except ZIP_ERRORS as exc:
        raise damaged(type(exc).__name__) from exc


#: The part that makes a zip archive an Office document of each type (Open Packaging).
OFFICE_PARTS: dict[str, SourceType] = {
    "word/document.xml": SourceType.DOCX,
    "xl/workbook.xml": SourceType.XLSX,
    "ppt/presentation.xml": SourceType.PPTX,
}


def office_type(names: set[str]) -> SourceType | None:
    """DOCX, XLSX or PPTX when the archive holds that type's main part, else None."""
    for part, source_type in OFFICE_PARTS.items():
        if part in names:
            return source_type
    return None


def describe_zip(names: set[str]) -> str:
    """What a zip archive that is no supported Office document is, for the rejection message."""
    if "META-INF/container.xml" in names:
        return "an EPUB book"
    if "content.xml" in names and "META-INF/manifest.xml" in names:
        return "an OpenDocument file"
    if "META-INF/MANIFEST.MF" in names:
        return "a Java archive"
    return "a zip archive that is not a DOCX, XLSX or PPTX document"


_PROLOG_BYTES = 8 * 1024
_ROOT_START = re.compile(r"<[A-Za-z_]")
_DECLARATION = re.compile(r"<!(?:DOCTYPE|ENTITY)", re.I)


def check_xml_parts(archive: zipfile.ZipFile, limits: ParseLimits, what: str) -> None:
    """Refuse an XLSX/PPTX package whose XML parts a library would read unsafely.

    Every ``.xml``/``.rels`` part, and every other part that begins like XML, must declare at
    most ``max_xml_part_bytes`` (from the zip directory), and none may declare a DTD or
    entities: Office XML never
    needs one, and the libraries that read these parts (openpyxl, python-pptx) do not all
    turn entity expansion off. A DTD can only come before the root element, so each part's
    prolog (at most 8 KiB: Office parts open with their root element) is read, not the whole
    part, so the check costs little even at upload.
    """
    for info in archive.infolist():
        named_xml = info.filename.endswith((".xml", ".rels"))
        if named_xml:
            _check_part_size(info, limits, what)
        if info.is_dir():
            continue
        stream = open_member(archive, info.filename)
        if stream is None:  # pragma: no cover - listed in the directory
            continue
        with stream:
            try:
                head = stream.read(_PROLOG_BYTES)
            except ZIP_ERRORS as exc:
                raise damaged(type(exc).__name__) from exc
        codec = "utf-16" if head.startswith((b"\xff\xfe", b"\xfe\xff")) else "latin-1"
        prolog = head.decode(codec, errors="replace")
        # A part a relationship points at is read as XML whatever its name: check any part
        # that looks like XML, not only the ones named so.
        if not named_xml and not prolog.lstrip("\ufeff\xef\xbb\xbf \t\r\n").startswith("<"):
            continue
        _check_part_size(info, limits, what)
        root = _ROOT_START.search(prolog)
        end = root.start() if root else len(prolog)
        if _DECLARATION.search(prolog, 0, end):
            raise unparseable(
                f"the {what} part {info.filename} declares a DTD or entities (not allowed)"
            )
        if root is None and len(head) == _PROLOG_BYTES:
            raise unparseable(f"the {what} part {info.filename} has an XML prolog over 8 KiB")


def _check_part_size(info: zipfile.ZipInfo, limits: ParseLimits, what: str) -> None:
    if info.file_size > limits.max_xml_part_bytes:
        raise too_big(
            f"the {what} part {info.filename} is {info.file_size} bytes uncompressed; "
            f"the limit is {limits.max_xml_part_bytes} bytes"
        )
