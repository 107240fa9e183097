"""Facts every reader of a task knows: codes and the names they stand for.

An agent that writes "US dollars" for "USD", "Germany" for "DE" or "kilograms"
for "kg" has not made anything up. This table is deliberately small and
general — currencies, countries, units — and holds no one domain's
vocabulary (issue 26: grounding from structure, common knowledge as data in
one place). Each entry: a code, and the names that code is written as.
"""

from __future__ import annotations

CURRENCIES = {
    "usd": ("us dollar", "dollar", "dollars", "$"), "eur": ("euro", "euros", "€"), "gbp": ("pound", "pounds", "sterling", "£"),
    "jpy": ("yen", "japanese yen", "¥"), "cny": ("yuan", "renminbi", "rmb", "人民币"), "inr": ("rupee", "rupees"),
    "cad": ("canadian dollar", "canadian dollars"), "aud": ("australian dollar", "australian dollars"),
    "chf": ("swiss franc", "swiss francs", "franc", "francs"), "krw": ("won",), "mxn": ("mexican peso", "pesos"),
    "brl": ("real", "reais"), "rub": ("ruble", "rubles"), "sek": ("krona", "kronor"), "hkd": ("hong kong dollar",),
}
COUNTRIES = {
    "us": ("united states", "usa", "america"), "usa": ("united states", "america"), "uk": ("united kingdom", "britain"),
    "gb": ("united kingdom", "great britain", "britain"), "de": ("germany",), "fr": ("france",), "es": ("spain",),
    "it": ("italy",), "cn": ("china", "中国"), "jp": ("japan",), "kr": ("korea", "south korea"), "in": ("india",),
    "ca": ("canada",), "au": ("australia",), "br": ("brazil",), "mx": ("mexico",), "ru": ("russia",),
    "nl": ("netherlands", "holland"), "ch": ("switzerland",), "se": ("sweden",), "hk": ("hong kong",),
    "sg": ("singapore",), "ie": ("ireland",), "nz": ("new zealand",), "za": ("south africa",),
}
UNITS = {
    "kg": ("kilogram", "kilograms", "kilo", "kilos"), "g": ("gram", "grams"), "lb": ("pound", "pounds"), "lbs": ("pounds",),
    "km": ("kilometer", "kilometers", "kilometre", "kilometres"), "m": ("meter", "meters", "metre", "metres"),
    "cm": ("centimeter", "centimeters"), "mm": ("millimeter", "millimeters"), "mi": ("mile", "miles"),
    "ft": ("foot", "feet"), "in": ("inch", "inches"), "l": ("liter", "liters", "litre", "litres"),
    "ml": ("milliliter", "milliliters"), "h": ("hour", "hours"), "hr": ("hour", "hours"), "min": ("minute", "minutes"),
    "s": ("second", "seconds"), "sec": ("second", "seconds"), "gb": ("gigabyte", "gigabytes"), "mb": ("megabyte", "megabytes"),
    "tb": ("terabyte", "terabytes"), "mph": ("miles per hour",), "kmh": ("kilometers per hour",),
}
# Sizes are written as words or letters ("a medium helmet" is size "M").
SIZE_LETTERS = {"small": "s", "medium": "m", "large": "l", "extra large": "xl", "x-large": "xl"}

# Name (lower case, as written) -> the words of every name of the same thing
# and its code, both ways.
_SAME: dict[str, set[str]] = {}
for _table in (CURRENCIES, COUNTRIES, UNITS):
    for _code, _names in _table.items():
        _group = {_code, *_names}
        for _name in _group:
            _SAME.setdefault(_name, set()).update(_group)


def same_as(text_words: set[str], text_pairs: set[str]) -> set[str]:
    """The names and codes of what the text's words or word pairs name."""
    out: set[str] = set()
    for key in (text_words | text_pairs) & _SAME.keys():
        out |= _SAME[key]
    return out
