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
import struct
import zipfile
import zlib
from typing import IO

from relata.domain.errors import UnsupportedContent
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


def describe_zip(names: set[str]) -> str | None:
    """What a non-DOCX zip archive is, for the rejection message; None for a DOCX."""
    if "word/document.xml" in names:
        return None
    if "xl/workbook.xml" in names:
        return "an Excel workbook (.xlsx), not a DOCX"
    if "ppt/presentation.xml" in names:
        return "a PowerPoint presentation (.pptx), not a DOCX"
    if "META-INF/container.xml" in names:
        return "an EPUB book, not a DOCX"
    if "content.xml" in names and "META-INF/manifest.xml" in names:
        return "an OpenDocument file, not a DOCX"
    if "META-INF/MANIFEST.MF" in names:
        return "a Java archive, not a DOCX"
    return "a zip archive without word/document.xml (not a DOCX)"
