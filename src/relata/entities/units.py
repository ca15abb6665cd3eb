"""Units, currencies and measurement abbreviations are never entities (ADR 50).

spaCy's small model tags "MW", "GW", "kWh", "USD" or "kDa" as organisations: short capitals
that look like acronyms. Two general rules, not a list of one corpus's names:

1. **A table of symbols**: SI units and the units read with them, each with the SI prefixes
   (``kW``, ``MWh``, ``mg``, ``kDa``, ``GHz``, ``nM``...), common non-SI units of science,
   engineering and trade (``psi``, ``mmHg``, ``ppm``, ``rpm``, ``bbl``...), and the ISO 4217
   codes of the most traded currencies. Matched case-sensitively ("mW" and "MW" are units;
   "Mw" is not in the table), so an acronym that happens to be spelled like a unit in another
   case is untouched. Bare one-letter symbols and symbols that are also common words or
   acronyms ("A", "K", "Pa", "We", "ML", "TB", "GB") are left out: the shape rule still
   takes them after a number.
2. **The shape of a measurement**: a single short token (at most four characters, not a
   word in capitals of three or four letters, which is how acronyms of organisations are
   written) that follows a number ("40 MW", "12kt", "3.5 Mt", "250 bp") is the number's unit.
"""

from __future__ import annotations

import re
from typing import Final

_PREFIXES: Final = ("", "k", "M", "G", "T", "P", "m", "µ", "μ", "u", "n", "p", "f", "c", "d", "h")
#: Units taking SI prefixes (symbols only).
_PREFIXED: Final = (
    "W", "Wh", "VA", "var", "V", "J", "eV", "Hz", "g", "m", "L", "l", "s", "Pa", "bar", "N",
    "mol", "M", "Da", "Bq", "Gy", "Sv", "Ω", "ohm", "F", "H", "T", "Wb", "lm", "lx", "cd", "B",
    "b", "bps", "Bps", "t", "cal", "Ah", "W/m2", "W/m²", "g/L", "g/l", "mol/L", "g/dL", "Wp",
    "We", "Wt", "Hz", "bp", "nt", "Mol",
)  # fmt: skip
_OTHER: Final = (
    "kWh", "MWh", "GWh", "TWh", "mAh", "psi", "mmHg", "cmH2O", "ppm", "ppb", "ppt", "rpm", "mph",
    "kph", "km/h", "m/s", "fps", "dB", "dBA", "dBm", "°C", "°F", "ºC", "ha", "km2", "km²", "m2",
    "m²", "m3", "m³", "ft", "lb", "lbs", "oz", "gal", "mi", "yd", "bbl", "bpd", "mpg", "kn",
    "nmi", "IU", "mIU", "kcal", "kJ", "MJ", "GJ", "Btu", "BTU", "MMBtu", "tCO2", "tCO2e",
    "MtCO2", "kbp", "Mbp", "Gbp", "kDa", "kb", "Mb", "Gb", "aa", "CFU", "cfu", "pfu", "PFU",
    "mEq", "mEq/L", "mmol/L", "mg/kg", "mg/dL", "µg/mL", "ng/mL", "pg/mL", "IU/mL", "MWe",
    "MWp", "MWt", "GWe", "kWp", "TB", "GB", "MB", "KB", "kB", "Tbps", "Gbps", "Mbps", "kbps",
)  # fmt: skip
#: ISO 4217 codes of the most traded currencies (and "RMB"), no code that is a common word.
CURRENCIES: Final[frozenset[str]] = frozenset(
    {
        "USD", "EUR", "GBP", "JPY", "CNY", "RMB", "CHF", "AUD", "CAD", "NZD", "SEK", "NOK",
        "DKK", "INR", "BRL", "ZAR", "RUB", "KRW", "HKD", "SGD", "MXN", "PLN", "TRY", "IDR",
        "THB", "MYR", "ILS", "AED", "SAR", "CZK", "HUF", "TWD", "ARS", "CLP", "COP", "EGP",
        "NGN", "KES", "PKR", "VND", "UAH", "RON", "ISK", "QAR", "KWD", "BTC",
    }
)  # fmt: skip
#: Bases whose prefixed symbols in capitals ("MW", "GJ", "kVA") are units; others in capitals
#: ("ML", "GB", "TB", "MT") are as often acronyms of a subject and are left to the shape rule.
_CAPITALS_OK: Final = frozenset({"W", "J", "V", "VA", "Wh"})
UNIT_SYMBOLS: Final[frozenset[str]] = frozenset(
    {
        p + u
        for p in _PREFIXES
        for u in _PREFIXED
        if p and (not (p + u).isupper() or u in _CAPITALS_OK)
    }
    | {u for u in _PREFIXED if len(u) > 1 and not u[0].isupper()}
    | (set(_OTHER) - {"TB", "GB", "MB", "KB", "CFU", "PFU"})
)
_AFTER_NUMBER: Final = re.compile(r"\d(?:[.,]\d+)?\s?(?:-\s?)?$")
_ACRONYM: Final = re.compile(r"[A-Z]{3,4}")


def is_unit(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a unit, a currency or a measurement abbreviation: a
    symbol of the table, or a short token right after a number (see the module docstring)."""
    surface = text[start:end].strip()
    if not surface:
        return False
    if surface in UNIT_SYMBOLS or surface in CURRENCIES:
        return True
    if len(surface) > 4 or " " in surface or _ACRONYM.fullmatch(surface):
        return False
    return bool(_AFTER_NUMBER.search(text[max(0, start - 24) : start]))
