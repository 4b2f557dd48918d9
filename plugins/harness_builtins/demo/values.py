"""The value lists of the demo world: occupations, genres, sports, industries, name and title
patterns, and the other words its entities and sentences are made from."""

from __future__ import annotations


OCCUPATIONS: dict[str, tuple[str, ...]] = {
    "writer": ("novelist", "poet", "playwright", "essayist", "writer", "screenwriter"),
    "artist": ("painter", "sculptor", "illustrator", "printmaker", "comics artist"),
    "musician": ("singer", "rapper", "guitarist", "pianist", "composer", "singer-songwriter", "drummer"),
    "director": ("film director",),
    "business": ("businessperson", "entrepreneur", "industrialist", "investor"),
    "politician": ("politician", "diplomat"),
    "scientist": ("physicist", "chemist", "mathematician", "economist", "biologist", "astronomer"),
    "actor": ("actor",),
    "other": ("architect", "journalist", "physician", "lawyer", "engineer", "photographer",
              "teacher", "historian", "philosopher"),
}

#: sport -> (occupation, playing positions, club name patterns)
SPORTS: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "football": ("footballer", ("goalkeeper", "defender", "midfielder", "forward"),
                 ("FC {w}", "{w} United", "{w} Rovers", "Sporting {w}")),
    "basketball": ("basketball player",
                   ("point guard", "shooting guard", "small forward", "power forward", "center"),
                   ("{w} Hawks", "{w} Giants", "{w} Comets")),
    "baseball": ("baseball player", ("pitcher", "catcher", "shortstop", "outfielder", "first baseman"),
                 ("{w} Mariners", "{w} Pioneers", "{w} Foxes")),
    "ice hockey": ("ice hockey player", ("goaltender", "defenceman", "winger", "centre"),
                   ("{w} Wolves", "{w} Blizzard", "HC {w}")),
    "rugby union": ("rugby union player", ("fly-half", "scrum-half", "prop", "lock", "fullback"),
                    ("{w} Rugby Club", "{w} Warriors")),
    "cricket": ("cricketer", ("wicket-keeper", "batsman", "bowler", "all-rounder"),
                ("{w} Cricket Club", "{w} Strikers")),
}

GENRES = ("jazz", "blues", "folk rock", "hip hop", "heavy metal", "synth-pop", "soul", "reggae",
          "punk rock", "electronic music", "country music", "indie pop", "classical music",
          "techno", "gospel", "bossa nova", "bluegrass", "flamenco", "trip hop", "grunge", "disco",
          "ska", "dubstep", "art rock", "chanson", "opera", "tango", "drum and bass", "post-punk",
          "rhythm and blues")

FIELDS = ("law", "medicine", "philosophy", "physics", "chemistry", "economics", "history",
          "architecture", "literature", "music", "fine arts", "engineering", "mathematics")

#: industry -> (company name suffixes, product types it makes; empty: makes nothing)
INDUSTRIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "automotive": (("Motors", "Automobiles", "Motor Works"), ("car", "motorcycle", "tractor")),
    "electronics": (("Electronics", "Systems", "Technologies"),
                    ("smartphone", "laptop", "camera", "television", "game console")),
    "aerospace": (("Aerospace", "Aviation"), ("aircraft", "helicopter")),
    "engineering": (("Engineering", "Works"), ("locomotive", "tram", "crane")),
    "watchmaking": (("Watches", "Horology"), ("wristwatch",)),
    "shipping": (("Shipping Lines", "Maritime"), ()),
    "software": (("Software", "Labs"), ()),
    "banking": (("Bank", "Capital"), ()),
    "food": (("Foods", "Breweries"), ()),
    "pharmaceutical": (("Pharma", "Laboratories"), ()),
    "publishing": (("Publishing", "Press"), ()),
    "media": (("Media", "Broadcasting"), ()),
    "energy": (("Energy", "Power"), ()),
}
PRODUCT_MODELS = ("GT", "Pro", "One", "200", "X", "S", "Mk II", "3", "Classic", "Sport", "Ultra", "500")

REGION_TYPES = ("Province", "County", "District", "Region", "Prefecture")
TOWN_WORDS = ("city", "town", "market town", "port city", "municipality")
COUNTRY_SUFFIXES = ("ia", "and", "ora", "ea", "istan", "avia", "onia", "esh")
LANGUAGE_SUFFIXES = ("ian", "ese", "ic", "ish", "i")
CITY_SUFFIXES = ("", "in", "ar", "ova", "eth", "holm", "burg", "ara", "ico", "ent", "ovo", "ez")
SURNAME_SUFFIXES = ("", "ov", "sen", "ski", "ard", "ez", "ani", "berg", "oux", "is", "ek", "ell")
FEMALE_SUFFIXES = ("a", "ia", "ine", "elle", "ra", "ena", "ette")
MALE_SUFFIXES = ("o", "an", "ek", "ir", "us", "en", "ard", "is")
STEM_SUFFIXES = ("ex", "on", "ia", "tek", "ix", "ara", "is", "", "", "")
UNIVERSITY_PATTERNS = ("{w} University", "University of {w}", "{w} Institute of Technology",
                       "{w} College", "{w} Academy of Fine Arts", "{w} Conservatory")
LABEL_PATTERNS = ("{w} Records", "{w} Music", "{w} Sound", "{w} Recordings")
#: Work titles. ``{w}`` an invented word, ``{t}``/``{t2}`` common title words (shared by many
#: titles, so titles collide as on Wikipedia), ``{c}`` a city of the world, ``{g}`` a given name,
#: ``{pn}`` a person's full name.
BAND_PATTERNS = ("The {w}s", "{w} Collective", "The {w} Brothers", "{w}", "The {t}s", "The {t}s",
                 "{t} Collective", "{t}", "The {t} Brothers", "{c} Ensemble")
BOOK_PATTERNS = ("The {w} Chronicles", "The House of {w}", "The {t}", "{t}", "The Last {t}", "A {t} in {c}",
                 "Letters from {c}", "The {t} of {c}", "{t} and {t2}", "The {t}", "{t}", "The {t}", "{t}",
                 "The Last {t}", "{c}")
FILM_PATTERNS = ("{w}", "The {w} Protocol", "{t}", "The {t}", "Return to {c}", "{t}", "The {t}",
                 "Night Train to {c}", "The {t} Sisters", "{t} in {c}", "{c}")
SONG_PATTERNS = ("{w}", "{t}", "{t} Nights", "Goodbye {c}", "{c} Blue", "Hey {g}", "{c}", "{t}",
                 "Dancing with {t}", "{g}", "{t} Blue", "{t}", "{g}")
ARTWORK_PATTERNS = ("The {w} Triptych", "{t} at Dusk", "View of {c}", "Portrait of {pn}", "{c}",
                    "Still Life with {t}", "The {t} Madonna", "{t}", "The {t}", "Portrait of {pn}", "{t}")
#: Common words of titles, most common first (drawn Zipf-like, so titles share them).
TITLE_WORDS = ("Winter", "River", "Garden", "Night", "Silence", "Shadow", "Rain", "Mirror", "Harbour",
               "Stranger", "Island", "Lantern", "Orchard", "Storm", "Harvest", "Promise", "Widow",
               "Exile", "Summer", "Letter", "Crossing", "Journey", "Mountain", "Daughter", "Stone",
               "Border", "Wedding", "Voyage", "Falcon", "Glass", "Meadow", "Fire", "Dream", "Ocean",
               "Kingdom", "Secret", "Forest", "Ghost", "Lighthouse Keeper", "Silver", "Morning", "Tide",
               "Road", "Window", "Feather", "Prisoner", "Sparrow", "Valley", "Bell", "Snow", "Thunder",
               "Painter", "Sailor", "Moon", "Empire", "Orphan", "Dancer", "Crown", "Wind", "Angel")
#: Generic first words of organisation and landmark names, most common first; many countries have
#: a "National Bank" or an "Old Bridge", so these names repeat (drawn Zipf-like).
GENERIC_WORDS = ("National", "Royal", "Central", "United", "General", "Old", "Grand", "Imperial",
                 "Continental", "Atlantic", "Northern", "Southern", "Union", "Standard", "Pacific",
                 "Federal", "Metropolitan", "Great")
#: University names of the generic kind ("National University", "Technical University").
GENERIC_UNIVERSITIES = ("National University", "Technical University", "State University",
                        "Polytechnic University", "Catholic University", "Open University",
                        "Royal Academy of Music", "Academy of Fine Arts", "Central University")
#: Words that make a new place name from an existing one ("North Ostrelin").
PLACE_PREFIXES = ("North", "South", "East", "West", "New", "Upper", "Lower", "Port", "Old")
BOOK_TYPES = ("novel", "novel", "novel", "poetry collection", "short story collection", "memoir", "play")
FILM_GENRES = ("drama", "comedy", "thriller", "science fiction", "war", "crime", "romance", "documentary")
ARTWORK_MEDIA = ("oil painting", "fresco", "bronze sculpture", "marble sculpture", "watercolour",
                 "mural", "tapestry")
LANDMARK_TYPES = ("Bridge", "Cathedral", "Castle", "Tower", "Stadium", "Palace", "Opera House",
                  "Botanical Garden", "Lighthouse", "Museum")
EVENT_TYPES = (("Music Festival", "music festival"), ("Film Festival", "film festival"),
               ("Marathon", "marathon"), ("Summit", "summit"))
SCRIPTS = ("Latin", "Cyrillic", "Greek", "Armenian", "Georgian")
DIRECTIONS = ("north", "south", "east", "west", "centre", "north-east", "south-west")
FAMILIES = ("farmers", "teachers", "merchants", "musicians", "civil servants", "doctors", "fishermen")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
NUMBER_WORDS = ("no", "one", "two", "three", "four")
ORDINALS = ("first", "second", "third", "fourth", "fifth")

#: Which filler sentences an entity's article draws on, by kind.
FILLER_GROUP = {
    "person": "person", "country": "place", "language": "language", "region": "place",
    "city": "place", "university": "org", "company": "org", "label": "org", "club": "org",
    "band": "band", "book": "work", "film": "work", "song": "work", "artwork": "work",
    "product": "product", "landmark": "place", "event": "event",
}

#: How the subject is referred to after the lead ("the {kw}"), by kind.
KIND_WORDS = {
    "country": "country", "language": "language", "region": "region", "city": "city",
    "university": "university", "company": "company", "label": "label", "club": "club",
    "band": "band", "book": "book", "film": "film", "song": "song", "artwork": "work",
    "product": "product", "landmark": "building", "event": "event",
}
