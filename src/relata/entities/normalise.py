"""Entity identity: a name -> its normalised key (docs/decisions/0015-entities.md).

One entity per (workspace, type, normalised key): the unique index holds the type, the key
does not, so "Jordan" the person and "Jordan" the country share a key and stay two
entities. ``normalise_name`` applies, in order:

1. Unicode NFKC (full-width letters, ligatures, non-breaking spaces become plain ones);
2. typographic quotes, apostrophes and dashes become ASCII ones;
3. whitespace runs collapse to one space;
4. surrounding quotes, brackets and Markdown emphasis are removed;
5. a trailing possessive is removed ("Kestrel's", "Williams'");
6. leading honorifics are removed ("Dr.", "Mr", "Prof.", "Sir"), while a word remains;
7. a leading "the" is removed, while a word remains;
8. case folding (``str.casefold``);
9. full stops, apostrophes and hyphens between a letter and a digit are deleted ("U.S." =
   "US", "O'Brien" = "OBrien", "IL-6" = "IL6"); other punctuation separates words
   ("Smith-Jones" = "Smith Jones"), except ``& + #``, which are kept ("AT&T", "C++", "C#").

Diacritics are kept: "Warnemünde" and "Warnemunde" are two keys, and the spelling-variant
alias rule proposes the pair to a person instead of merging it silently. A name with no
letter or digit has the empty key, which identifies nothing (callers skip it).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from relata.domain.models import EntityType
from relata.entities.lexicon import HONORIFICS

_TYPOGRAPHIC: Final = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u02bc": "'",
        "`": "'",
        "\u00b4": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2039": '"',
        "\u203a": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
    }
)
_SURROUNDING: Final = "\"'()[]{}<>*_ "
_WHITESPACE: Final = re.compile(r"\s+")
_POSSESSIVE: Final = re.compile(r"(?:'s|(?<=s)')$", re.IGNORECASE)
_DELETED: Final = re.compile(r"[.']|(?<=[^\W\d_])-(?=\d)|(?<=\d)-(?=[^\W\d_])")
_SEPARATORS: Final = re.compile(r"[^\w&+#]+")


def clean_name(name: str) -> str:
    """The display form of a name: steps 1-5 of the key (NFKC, ASCII quotes, one space,
    no surrounding quotes, no possessive), keeping its case and honorifics."""
    text = unicodedata.normalize("NFKC", name).translate(_TYPOGRAPHIC)
    text = _WHITESPACE.sub(" ", text).strip(_SURROUNDING)
    while True:
        stripped = _POSSESSIVE.sub("", text).strip(_SURROUNDING)
        if stripped == text:
            return text
        text = stripped


def split_honorifics(name: str) -> tuple[tuple[str, ...], str]:
    """(the leading honorifics, the rest) of a cleaned name; the rest keeps at least one
    word: ``"Dr. Ines Vaughan"`` -> ``(("Dr.",), "Ines Vaughan")``, ``"Dr"`` -> ``((), "Dr")``.
    """
    words = clean_name(name).split(" ")
    honorifics: list[str] = []
    while len(words) > 1 and is_honorific(words[0]):
        honorifics.append(words.pop(0))
    return tuple(honorifics), " ".join(words)


def is_honorific(word: str) -> bool:
    return word.casefold().rstrip(".") in HONORIFICS


def normalise_name(name: str) -> str:
    """The key of a name (see the module docstring); ``""`` when nothing identifies it."""
    _, rest = split_honorifics(name)
    words = rest.split(" ")
    if len(words) > 1 and words[0].casefold() == "the":
        words = words[1:]
    folded = " ".join(words).casefold()
    folded = _DELETED.sub("", folded)
    return _WHITESPACE.sub(" ", _SEPARATORS.sub(" ", folded).replace("_", " ")).strip()


def key_tokens(name: str) -> tuple[str, ...]:
    """The words of a name's key."""
    key = normalise_name(name)
    return tuple(key.split(" ")) if key else ()


def entity_identity(name: str, entity_type: EntityType) -> tuple[EntityType, str]:
    """What makes two mentions one entity in a workspace: the type and the key."""
    return EntityType(entity_type), normalise_name(name)
