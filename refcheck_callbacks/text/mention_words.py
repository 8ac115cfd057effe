"""The words figures, dates and names are written with: number words, scales, units,
currencies, months, hedges, and the words names are joined or qualified by.

Tables only, read by `text.mentions` (reading) and `text.agreement` (comparing).
"""

from __future__ import annotations

NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80}
NUMBER_WORDS |= {"ninety": 90, "hundred": 100, "dozen": 12}
ORDINALS = {
    word: value
    for value, word in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
        "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
        "twentieth".split(),
        start=1,
    )
}
ORDINAL_SUFFIXES = frozenset({"st", "nd", "rd", "th"})
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9}
SCALES |= {"mn": 1e6, "dozen": 12.0}
MONEY_SCALES = {"k": 1e3, "m": 1e6, "mn": 1e6, "bn": 1e9, "b": 1e9, "tn": 1e12}
"""Scales glued to an amount of money: `$8.2m`, `£3bn` (after a number alone, `m` is metres)."""
MONTHS = {
    name: number
    for number, name in enumerate(
        "january february march april may june july august september october november "
        "december".split(),
        start=1,
    )
}
MONTHS |= {
    short: MONTHS[name]
    for name in MONTHS
    for short in (name[:3], name[:4])
    if short not in ("may", "mar", "marc", "june", "july")
}
"""Month names, and abbreviations (`Dec`, `Sept`) read as months when next to a number."""
WEEKDAYS = {
    name: number
    for number, name in enumerate(
        "monday tuesday wednesday thursday friday saturday sunday".split(), start=1
    )
}

_UNIT_TABLE = """
length 1 m metre metres meter meters
length 1000 km kilometre kilometres kilometer kilometers
length 0.01 cm centimetre centimetres centimeter centimeters
length 0.001 mm millimetre millimetres millimeter millimeters
length 0.3048 ft foot feet
length 1609.344 mi mile miles
length 0.9144 yd yard yards
length 0.0254 inch inches
mass 1 kg kilogram kilograms kilo kilos
mass 0.001 g gram grams
mass 1e-6 mg milligram milligrams
mass 1000 t tonne tonnes ton tons
mass 0.45359 lb lbs
area 10000 ha hectare hectares
area 4046.86 acre acres
volume 1 l litre litres liter liters
volume 0.001 ml millilitre millilitres milliliter milliliters
volume 3.78541 gallon gallons
time 1 second seconds sec secs
time 60 minute minutes min mins
time 3600 hour hours hr hrs
time 86400 day days
time 604800 week weeks
time 2629800 month months
time 31557600 year years yr yrs
time 315576000 decade decades
time 3155760000 century centuries
percent 1 % percent
"""
UNITS: dict[str, tuple[str, float]] = {
    word: (dimension, float(factor))
    for dimension, factor, *words in (line.split() for line in _UNIT_TABLE.strip().splitlines())
    for word in words
}
"""Unit word -> (dimension, size in the dimension's base unit)."""
CURRENCIES = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy", "dollars": "usd"}
CURRENCIES |= {"euros": "eur", "usd": "usd", "eur": "eur", "gbp": "gbp"}

APPROXIMATE = frozenset(
    "about around approximately roughly nearly almost some circa estimated approx ca".split()
)
AT_LEAST = frozenset("over more above exceeding least upwards".split())
AT_MOST = frozenset("under less fewer below most up".split())
RANGE_WORDS = frozenset({"to", "and", "or"})
NAME_JOINERS = frozenset({"of", "de", "da", "del", "von", "van", "der", "la", "le", "du"})
GENERIC_NAME_WORDS = frozenset(
    """new the saint st san santa north south east west northern southern eastern western
    united university city county state states river lake mount national international
    company group inc ltd corporation co bank school college republic kingdom island islands
    department ministry party association society institute centre center president king
    queen prince princess sir dr mr mrs ms general senator governor minister pope lord lady
    captain professor judge chief leader""".split()
)

EXCLUSIVE_TERMS = {
    word: group
    for group, words in (
        (
            "field",
            "physics chemistry biology medicine physiology economics literature "
            "mathematics astronomy geology",
        ),
        ("medal", "gold silver bronze"),
        ("direction", "north south east west northern southern eastern western"),
        ("season", "spring summer autumn winter"),
        ("sex", "male female"),
    )
    for word in words.split()
}
"""Lower-case words of closed sets whose members rule each other out in one place: a Nobel
Prize in biology is not one in physics, a silver medal not a gold one. Read as `term`
mentions; two of a set disagree, like two names in one place."""
COUNT_NOUNS = {
    word: "people"
    for word in "people persons residents inhabitants citizens population individuals".split()
}
"""Nouns that count the same thing: `3 million people` and `2.1 million residents` are two
figures for one population."""
UNIQUE_WORDS = frozenset({"only", "first", "last", "sole", "most", "least"})
"""Words of a description only one thing fits (`the only`, `the first`, `the largest`)."""
