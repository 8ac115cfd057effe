"""Long documents for the tests where documents overlap: parents that a text splitter cuts
into children (`ParentDocumentRetriever`, small-to-big retrieval), each about one topic so a
question finds one parent's children."""

from __future__ import annotations

from langchain_core.documents import Document

EIFFEL_PARENT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "It is named after the engineer Gustave Eiffel, whose company designed and built the "
    "tower from 1887 to 1889. The tower is 330 metres tall, about the same height as an "
    "81-storey building, and was the tallest man-made structure in the world until the "
    "Chrysler Building in New York was finished in 1930. It has three levels for visitors, "
    "with restaurants on the first and second levels. The top level's upper platform is "
    "276 metres above the ground, the highest observation deck accessible to the public in "
    "the European Union. Tickets can be bought to ascend by stairs or lift to the first and "
    "second levels; the climb from ground level to the first level is over 300 steps. The "
    "tower is repainted every seven years, which takes about 60 tonnes of paint."
)
EVEREST_PARENT = (
    "Mount Everest is Earth's highest mountain above sea level, located in the Mahalangur "
    "Himal sub-range of the Himalayas. The China-Nepal border runs across its summit point. "
    "Its elevation of 8,849 metres was most recently established in 2020 by the Chinese and "
    "Nepali authorities. Mount Everest attracts many climbers, including highly experienced "
    "mountaineers. There are two main climbing routes, one approaching the summit from the "
    "southeast in Nepal, known as the standard route, and the other from the north in Tibet. "
    "While not posing substantial technical climbing challenges on the standard route, "
    "Everest presents dangers such as altitude sickness, weather, and wind, as well as "
    "hazards from avalanches and the Khumbu Icefall. The first recorded ascent was by "
    "Tenzing Norgay and Edmund Hillary on 29 May 1953."
)
PYTHON_PARENT = (
    "Python is a high-level, general-purpose programming language. Its design philosophy "
    "emphasizes code readability with the use of significant indentation. Python is "
    "dynamically typed and garbage-collected. It supports multiple programming paradigms, "
    "including structured, object-oriented and functional programming. Guido van Rossum "
    "began working on Python in the late 1980s as a successor to the ABC programming "
    "language and first released it in 1991 as Python 0.9.0. Python 2.0 was released in "
    "2000. Python 3.0, released in 2008, was a major revision not completely "
    "backward-compatible with earlier versions. Python consistently ranks as one of the most "
    "popular programming languages, and has gained widespread use in the machine learning "
    "community."
)
PARENTS = [
    Document(page_content=EIFFEL_PARENT, metadata={"source": "wiki/eiffel"}),
    Document(page_content=EVEREST_PARENT, metadata={"source": "wiki/everest"}),
    Document(page_content=PYTHON_PARENT, metadata={"source": "wiki/python"}),
]
