"""The small word lists the entity rules share: honorifics, titles, name-shape words.

Everything is lower case (compare with ``word.casefold()`` with any trailing full stop
removed). The lists are deliberately short and general (docs/decisions/0015-entities.md):
they describe how names are *built* in English text ("X Inc", "University of Y", "Dr. Z",
"Lake W"), not which names exist, so they carry over to documents nobody has seen.
"""

from __future__ import annotations

from typing import Final

#: Courtesy, academic and religious forms of address. Stripped from normalised keys and
#: from the front of person mentions; a following capitalised name is a person.
HONORIFICS: Final[frozenset[str]] = frozenset(
    {
        "mr",
        "mrs",
        "ms",
        "miss",
        "mx",
        "dr",
        "prof",
        "professor",
        "sir",
        "dame",
        "lord",
        "lady",
        "rev",
        "revd",
        "reverend",
        "fr",
        "father",
        "sr",
        "sister",
        "rabbi",
        "imam",
        "herr",
        "frau",
        "mme",
        "mlle",
        "messrs",
    }
)

#: Titles of office and rank that precede a person's name ("President Clinton",
#: "Councillor Aileen Marsh"). Not part of the name: the mention starts after them.
TITLES: Final[frozenset[str]] = frozenset(
    {
        "president",
        "vice-president",
        "prime",  # "Prime Minister"
        "minister",
        "secretary",
        "secretary-general",
        "chancellor",
        "senator",
        "sen",
        "governor",
        "gov",
        "mayor",
        "councillor",
        "councilor",
        "cllr",
        "alderman",
        "commissioner",
        "ambassador",
        "judge",
        "justice",
        "king",
        "queen",
        "prince",
        "princess",
        "emperor",
        "sheikh",
        "pope",
        "bishop",
        "archbishop",
        "cardinal",
        "captain",
        "capt",
        "general",
        "gen",
        "colonel",
        "col",
        "major",
        "lieutenant",
        "lt",
        "sergeant",
        "sgt",
        "admiral",
        "commander",
        "inspector",
        "detective",
        "constable",
        "officer",
        "chairman",
        "chairwoman",
        "chair",
        "director",
        "coach",
        "manager",
        "representative",
        "rep",
        "congressman",
        "congresswoman",
        "deputy",
        "leader",
        "spokesman",
        "spokeswoman",
        "spokesperson",
        "treasurer",
        "clerk",
        "principal",
        "dean",
        "chief",
        "executive",
        "master",  # "Harbour Master"
        "premier",
        "mp",
        "mep",
    }
)

#: A span that ends with one of these is an organisation ("Harlow Biotech Ltd").
ORG_SUFFIXES: Final[frozenset[str]] = frozenset(
    {
        "inc",
        "corp",
        "corporation",
        "co",
        "company",
        "ltd",
        "limited",
        "llc",
        "llp",
        "plc",
        "gmbh",
        "ag",
        "sa",
        "nv",
        "bv",
        "ab",
        "asa",
        "spa",
        "srl",
        "pty",
        "oy",
        "group",
        "holdings",
        "bank",
        "airlines",
        "airways",
        "association",
        "federation",
        "council",
        "committee",
        "commission",
        "institute",
        "institutet",
        "institution",
        "university",
        "universität",
        "université",
        "college",
        "academy",
        "foundation",
        "trust",
        "society",
        "agency",
        "authority",
        "party",
        "union",
        "ministry",
        "department",
        "administration",
        "board",
        "bureau",
        "police",
        "army",
        "navy",
        "club",
        "fc",
        "studios",
        "systems",
        "technologies",
        "technology",
        "software",
        "labs",
        "laboratories",
        "pharmaceuticals",
        "therapeutics",
        "biotech",
        "partners",
        "partnership",
        "fund",
        "programme",
        "program",
        "network",
        "alliance",
        "coalition",
        "consortium",
        "organisation",
        "organization",
        "corps",
        "court",
        "parliament",
        "senate",
        "congress",
        "assembly",
        "service",
        "services",
        "industries",
        "enterprises",
        "media",
        "press",
        "news",
        "times",
        "gazette",
        "post",
        "journal",
        "records",
        "motors",
        "energy",
        "mining",
        "capital",
        "securities",
        "insurance",
        "league",
    }
)

#: "<head> of <Name>" is an organisation ("University of Edinburgh", "Ministry of Health").
ORG_HEADS_OF: Final[frozenset[str]] = frozenset(
    {
        "university",
        "ministry",
        "department",
        "bank",
        "institute",
        "college",
        "school",
        "academy",
        "society",
        "council",
        "office",
        "board",
        "museum",
        "church",
        "federation",
        "association",
        "commission",
        "court",
        "house",
        "chamber",
        "league",
        "union",
        "order",
        "centre",
        "center",
    }
)

#: A span that ends with one of these is a place ("Oldham Street", "Baltic Sea").
LOC_SUFFIXES: Final[frozenset[str]] = frozenset(
    {
        "street",
        "road",
        "lane",
        "avenue",
        "boulevard",
        "square",
        "way",
        "quay",
        "river",
        "mountains",
        "mountain",
        "hills",
        "sea",
        "ocean",
        "lake",
        "island",
        "islands",
        "bay",
        "valley",
        "gulf",
        "strait",
        "channel",
        "sound",
        "peninsula",
        "desert",
        "forest",
        "reef",
        "rock",
        "coast",
        "airport",
        "stadium",
        "arena",
        "bridge",
        "harbour",
        "harbor",
        "estuary",
        "county",
        "province",
        "district",
        "region",
        "park",
        "trail",
        "hall",
        "station",
        "beach",
        "falls",
        "canal",
        "ridge",
    }
)

#: "<head> <Name>" is a place ("Mount Si", "Lake Geneva", "Port Halloran").
LOC_PREFIXES: Final[frozenset[str]] = frozenset(
    {"mount", "mt", "lake", "port", "cape", "fort", "isle", "loch", "glen"}
)

#: Name-building words too general to stand for a whole name on their own: never propagated
#: as the short form of a longer name ("Greater" in "Greater Manchester Police").
GENERIC_WORDS: Final[frozenset[str]] = (
    ORG_SUFFIXES
    | LOC_SUFFIXES
    | LOC_PREFIXES
    | ORG_HEADS_OF
    | frozenset(
        {
            "the",
            "a",
            "an",
            "of",
            "and",
            "for",
            "national",
            "international",
            "united",
            "general",
            "royal",
            "new",
            "old",
            "great",
            "greater",
            "north",
            "south",
            "east",
            "west",
            "northern",
            "southern",
            "eastern",
            "western",
            "central",
            "upper",
            "lower",
            "first",
            "american",
            "british",
            "european",
            "world",
            "global",
            "federal",
            "state",
            "city",
            "county",
            "public",
            "community",
            "medical",
            "research",
            "science",
            "health",
            "social",
            "democratic",
            "republican",
            "liberal",
            "people",
            "free",
            "saint",
            "st",
            "san",
            "santa",
            "los",
            "las",
            "el",
            "la",
            "le",
            "de",
            "al",
        }
    )
)

#: Lower-case words inside a name ("Bank of England", "Cortina d'Ampezzo").
NAME_CONNECTORS: Final[frozenset[str]] = frozenset(
    {"of", "and", "&", "for", "de", "du", "des", "la", "le", "von", "van", "der", "den", "di", "da"}
)

#: Calendar words: a span made of these (and numbers) is a date, which is never an entity.
CALENDAR_WORDS: Final[frozenset[str]] = frozenset(
    {
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "today",
        "yesterday",
        "tomorrow",
        "spring",
        "summer",
        "autumn",
        "winter",
        "am",
        "pm",
        "gmt",
        "utc",
        "bst",
        "est",
        "pst",
        "cet",
        "q1",
        "q2",
        "q3",
        "q4",
    }
)


#: Words that begin a sentence or clause but never a name: dropped from the front of a span
#: or run ("Since Kestrel Marine Systems ..." -> "Kestrel Marine Systems").
def _words(block: str) -> frozenset[str]:
    return frozenset(block.split())


LEADING_FUNCTION_WORDS: Final[frozenset[str]] = _words(
    """the a an this that these those our their his her its my your we they he she it i you
    in on at by for from with since after before when while if as but and or so nor yet
    both all some many most every each any no not also however meanwhile then there here
    where what why how who whom which although though because under over into through
    during between among against without within about across despite near via per to of
    re fwd dear thanks thank yes please according like unlike including following would
    could should can might must shall does did is are was were has have had"""
)


#: The section headings of structured documents (research papers and their structured
#: abstracts, reports, minutes, manuals), with the words that join them: in capitals
#: ("BACKGROUND", "MAIN OUTCOME MEASURES", "CONCLUSIONS") a span of only these words is the
#: document's structure, not a name. General knowledge of document layouts, not a list of
#: what some corpus contains.
SECTION_HEADINGS: Final[frozenset[str]] = _words(
    """abstract summary background introduction context rationale objective objectives aim
    aims purpose purposes hypothesis hypotheses importance methods method methodology
    materials design designs setting settings participants patients subjects population
    interventions intervention exposure exposures measurements measures measure main
    primary secondary outcome outcomes results result findings discussion conclusion
    conclusions interpretation implications significance limitations relevance evidence
    synthesis sources selection extraction analysis analyses statistical data study studies
    trial registration funding keywords key points overview appendix references
    acknowledgements acknowledgments notes note contents agenda minutes present apologies
    and of or"""
)
#: Statistical abbreviations written in capitals that are never names ("95% CI").
STATISTICS_ABBREVIATIONS: Final[frozenset[str]] = frozenset({"ci", "iqr", "sem"})
