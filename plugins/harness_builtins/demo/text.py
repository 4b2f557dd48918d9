"""The wording of the demo world: sentence templates (the value lists are in :mod:`.values`).

Placeholders (``str.format`` fields):

- ``{n}`` the subject's full name; ``{S}``/``{s}`` a reference to the subject at the start / in the
  middle of a sentence (its name, a pronoun, a surname or "the company"); ``{m}`` one that is not a
  pronoun (for object positions: "a biography of {m}"); ``{P}``/``{p}`` its
  possessive; ``{is}``/``{has}`` verbs in the subject's tense (a dead person "was").
- ``{o}`` the object of the fact a sentence states; in lead sentences a fact's object is named by
  its relation, e.g. ``{P19}``.
- ``{ao}``/``{a106}``... the indefinite article ("a"/"an") for the object or that relation's object.
- ``{peer}`` (in :data:`PEER_FACTS`) another entity of the subject's kind, named beside the fact.
- Filler sentences name other entities: ``{person}``, ``{city}``, ``{country}``, ``{company}``...

Filler states no fact of the 24 relations, but some of it uses their wording ("the town where
she was born"), as real articles do: relation words alone do not point at the answer.
"""

from __future__ import annotations

import functools
import re

from .values import (
    ARTWORK_MEDIA,
    ARTWORK_PATTERNS,
    BAND_PATTERNS,
    BOOK_PATTERNS,
    BOOK_TYPES,
    FAMILIES,
    FIELDS,
    FILM_GENRES,
    FILM_PATTERNS,
    GENERIC_UNIVERSITIES,
    GENERIC_WORDS,
    GENRES,
    INDUSTRIES,
    LABEL_PATTERNS,
    LANDMARK_TYPES,
    MONTHS,
    OCCUPATIONS,
    PLACE_PREFIXES,
    PRODUCT_MODELS,
    REGION_TYPES,
    SCRIPTS,
    SONG_PATTERNS,
    SPORTS,
    TITLE_WORDS,
    TOWN_WORDS,
    UNIVERSITY_PATTERNS,
)

# --------------------------------------------------------------------------- lead sentences
# A lead is chosen among the templates of the subject's kind whose relation fields the subject has.

LEADS: dict[str, tuple[str, ...]] = {
    "person_alive": (
        "{n} (born {y}) is {anat} {P106}.",
        "{n} (born {d} {y} in {P19}) is {anat} {P106}.",
        "{n} is {a106} {P106} from {P19}, {bcountry}.",
        "{n} (born {y}) is {a106} {P106} and public figure from {bcountry}.",
    ),
    "person_dead": (
        "{n} ({y}–{y2}) was {anat} {P106}.",
        "{n} (born {y} in {P19}; died {y2} in {P20}) was {a106} {P106}.",
        "{n} ({d} {y} – {y2}) was {a106} {P106} from {bcountry}.",
    ),
    "athlete": (
        "{n} (born {y}) is {anat} {P106} who plays as {a413} {P413} for {club}.",
        "{n} (born {d} {y}) is {anat} professional {sport} player.",
        "{n} is {a413} {P413} from {P19} who plays for {club}.",
    ),
    "athlete_dead": (
        "{n} ({y}–{y2}) was {anat} {P106} who played as {a413} {P413}.",
        "{n} ({y}–{y2}) was {anat} {sport} player.",
    ),
    "musician": (
        "{n} (born {y}) is {anat} {P136} {P106}.",
        "{n} (born {d} {y} in {P19}) is {a106} {P106} and recording artist.",
        "{n} is {anat} {P106} known for {p} {P136} recordings.",
    ),
    "country": (
        "{n} is a country bordered by {c1} and {c2}.",
        "{n}, officially the Republic of {n}, is a sovereign state.",
        "{n} is a landlocked country with {c1} to the {dir}.",
        "{n} is a country whose capital is {P36}.",
    ),
    "language": (
        "{n} is a language spoken mainly in {home}.",
        "{n} is the official language of {home}.",
    ),
    "region": (
        "{n} is {artype} {rtype} of {P17}.",
        "{n} is an administrative {rtype} in the {dir} of {P17}.",
    ),
    "city": (
        "{n} is {atown} {town} in {P131}, {P17}.",
        "{n} is {atown} {town} in {P131}.",
        "{n} is {atown} {town} in the {dir} of {P17}.",
            ),
    "capital": (
        "{n} is the capital and largest city of {P17}.",
        "{n} is the capital of {P17} and a city in {P131}.",
    ),
    "university": (
        "{n} is a public research university in {ucity}, {P17}.",
        "{n} is a private university in {ucity}.",
        "{n} is an institution of higher education founded in {y}.",
    ),
    "company": (
        "{n} is {aind} {industry} company.",
        "{n} is {aind} {industry} company based in {P159}.",
        "{n} is a multinational {industry} group.",
    ),
    "label": (
        "{n} is an independent record label.",
        "{n} is a record label based in {P159}.",
    ),
    "club": (
        "{n} is a professional {sport} club based in {P159}.",
        "{n} is a {sport} club.",
    ),
    "band": (
        "{n} is {a136} {P136} band formed in {P740} in {y}.",
        "{n} is a band from {bcountry}.",
        "{n} are {a136} {P136} group.",
    ),
    "book": (
        "{n} is a {y} {btype} by {P50}.",
        "{n} is a {btype} published in {y}.",
        "{n} is a {btype} by the {nat} writer {P50}.",
    ),
    "film": (
        "{n} is a {y} {genre} film directed by {director}.",
        "{n} is a {genre} film released in {y}.",
    ),
    "song": (
        "\"{n}\" is a song by {P175}.",
        "\"{n}\" is a {y} single by {P175}.",
        "\"{n}\" is a {y} song.",
    ),
    "artwork": (
        "{n} is {amedium} {medium} by {P170}, completed in {y}.",
        "{n} is {amedium} {medium} made in {y}.",
    ),
    "product": (
        "The {n} is {aptype} {ptype} manufactured by {P176}.",
        "The {n} is {aptype} {ptype} introduced in {y}.",
    ),
    "landmark": (
        "{n} is {altype} {ltype} in {P276}, {P17}.",
        "{n} is {altype} {ltype} in {P276}.",
        "{n} is a historic {ltype} in {P17}.",
    ),
    "event": (
        "The {n} is an annual {etype} held in {P276}.",
        "The {n} is an annual {etype} in {P17}.",
    ),
}

# --------------------------------------------------------------------------- fact sentences

FACTS: dict[str, tuple[str, ...]] = {
    "P17": (
        "{S} lies in the {dir} of {o}.",
        "{S} is situated in {o}, not far from the border with {c1}.",
        "{S} is one of the best known places in {o}.",
        "{S} is in {o}.",
    ),
    "P19": (
        "{S} was born in {o}.",
        "{S} was born in {o}, {oc}, in {y}.",
        "{P} birthplace was {o}.",
        "{S} was born on {d} {y} in {o}.",
        "A native of {o}, {s} grew up in a family of {fam}.",
    ),
    "P20": (
        "{S} died in {o} in {y2}.",
        "{S} died on {d2} {y2} in {o}, aged {age}.",
        "{S} spent {p} last years in {o}, where {pron} died in {y2}.",
        "{S} died in {o}, {oc}.",
    ),
    "P26": (
        "{S} married {o} in {ym}.",
        "{S} {is} married to {o}.",
        "{P} spouse {is} {o}, {aoocc} {oocc}.",
        "In {ym}, {s} married the {oocc} {o}.",
    ),
    "P36": (
        "Its capital and largest city is {o}.",
        "The capital of {n} is {o}.",
        "{P} capital is {o}.",
        "The seat of government of {n} is {o}, which is also its capital.",
    ),
    "P40": (
        "{S} {has} {kids}, {o}.",
        "{S} {is} the {pw} of {o}.",
        "{P} children include {o}.",
    ),
    "P50": (
        "{S} was written by {o} and published in {y}.",
        "The book was written by {o}.",
        "{S} is the {ord} book by {o}.",
        "Its author is {o}.",
    ),
    "P69": (
        "{S} studied {field} at {o}.",
        "{S} was educated at {o}.",
        "{S} graduated from {o} in {yg}.",
        "{S} attended {o}, where {pron} earned a degree in {field}.",
    ),
    "P106": (
        "{S} worked as {ao} {o}.",
        "By profession, {s} {is} {ao} {o}.",
        "{S} {is} known as {ao} {o}.",
    ),
    "P112": (
        "{S} was founded by {o} in {y}.",
        "The {kw} was established in {y} by {o}.",
        "Its founder is {o}.",
        "{S} was started by {o}.",
        "{o} set up the {kw} in {y}.",
        "The {kw} goes back to a workshop opened by {o} in {y}.",
    ),
    "P127": (
        "{S} is owned by {o}.",
        "Since {yo}, {s} has been owned by {o}.",
        "The {kw} is owned by {o}.",
        "Its owner is {o}.",
        "{S} is a subsidiary of {o}.",
        "In {yo}, {o} acquired {m}.",
        "{S} has been part of {o} since {yo}.",
    ),
    "P131": (
        "{S} is located in {o}.",
        "Administratively, {s} belongs to {o}.",
        "{S} lies in {o}, in the {dir} of {oc}.",
        "The {kw} is part of {o}.",
    ),
    "P136": (
        "{P} music is usually described as {o}.",
        "{S} {is} best known for {p} {o} recordings.",
        "Critics describe {p} style as {o}.",
        "{P} repertoire consists mainly of {o}.",
    ),
    "P159": (
        "{S} is headquartered in {o}.",
        "The {kw}'s headquarters are in {o}.",
        "{P} head office is located in {o}, {oc}.",
        "{S} has its headquarters in {o}.",
        "{S} is based in {o}.",
        "{P} main offices are in {o}.",
        "The {kw} is run from offices in {o}.",
    ),
    "P170": (
        "{S} was created by {o} in {y}.",
        "The work was made by {o}.",
        "It is one of the best known works of {o}.",
        "{S} is by {o}.",
    ),
    "P175": (
        "{S} was performed by {o}.",
        "The song was recorded by {o} for the album {album}.",
        "It was released as a single by {o} in {y}.",
        "{S} is a song by {o}.",
    ),
    "P176": (
        "{S} is produced by {o}.",
        "The {kw} is manufactured by {o} at its plant in {city}.",
        "It was made by {o} from {y} to {y2}.",
        "Its manufacturer is {o}.",
    ),
    "P264": (
        "{S} {is} signed to {o}.",
        "{S} released {p} records on {o}.",
        "{S} signed a contract with {o} in {yl}.",
        "{P} albums have been released by {o}.",
    ),
    "P276": (
        "{S} is located in {o}.",
        "The {kw} stands in the centre of {o}.",
        "{S} takes place every year in {o}.",
        "{S} is located in {o}, {oc}.",
        "{S} can be found in {o}.",
    ),
    "P407": (
        "{S} was written in {o}.",
        "The original language of the {kw} is {o}.",
        "{S} was first published in {o}.",
        "It is in {o}.",
    ),
    "P413": (
        "{S} {plays} as {ao} {o} for {club}.",
        "{ao_cap} {o}, {s} joined {club} in {yc}.",
        "{P} usual position {is} {o}.",
        "{S} {is} {ao} {o} by position.",
    ),
    "P495": (
        "{S} was produced in {o}.",
        "The {kw} originated in {o}.",
        "{S} was first released in {o} in {y}.",
        "It comes from {o}.",
    ),
    "P740": (
        "{S} was founded in {o} in {y}.",
        "The {kw} was established in {o}.",
        "{S} traces its origins to {o}, where it was set up in {y}.",
        "{S} was formed in {o}.",
        "{S} began in {o} in {y}.",
        "The {kw} started out in {o}.",
    ),
    "P800": (
        "{S} {is} best known for {o}.",
        "{P} most famous work is {o}.",
        "{S} achieved fame with {o} in {yw}.",
        "{o} is regarded as {p} masterpiece.",
    ),
}

#: Relation-specific templates for some subject kinds (replace the generic ones above).
KIND_FACTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("P17", "event"): (
        "{S} is one of the best known events in {o}.",
        "The {kw} is among the largest in {o}.",
    ),
    ("P276", "event"): (
        "{S} takes place every year in {o}.",
        "The {kw} is held annually in {o}, {oc}.",
        "{S} has been held in {o} since {y}.",
    ),
    ("P276", "landmark"): (
        "{S} is located in {o}.",
        "The {kw} stands in the centre of {o}.",
        "{S} is located in {o}, {oc}.",
    ),
    ("P740", "band"): (
        "{S} formed in {o} in {y}.",
        "The band was formed in {o}.",
        "{S} got together in {o} in {y}.",
    ),
    ("P407", "song"): (
        "{S} is sung in {o}.",
        "The lyrics are in {o}.",
    ),
    ("P407", "film"): (
        "The film is in {o}.",
        "The dialogue of {m} is in {o}.",
        "The original language of the film is {o}.",
    ),
}

#: Fact sentences that also name a peer (``{peer}``: another entity of the subject's kind, drawn
#: regardless of fame). In the peer's own question they are hard distractors: its name and the
#: relation's wording, next to another entity's answer.
PEER_FACTS: dict[str, tuple[str, ...]] = {
    "P17": ("{S} is in {o} and is often compared with {peer}.",),
    "P19": (
        "{S}, a childhood friend of {peer}, was born in {o}.",
        "Born in {o}, {s} later worked with {peer}.",
        "{S} was born in {o}, where {pron} first met {peer}.",
    ),
    "P20": (
        "{S}, a longtime friend of {peer}, died in {o}.",
        "{S} died in {o}; {peer} spoke at the funeral.",
    ),
    "P26": (
        "{S} married {o}, whom {pron} had met through {peer}.",
        "{peer} was a witness when {s} married {o}.",
    ),
    "P40": (
        "{S} and {peer} were close friends; {p} children include {o}.",
        "{S} {is} the {pw} of {o}; {peer} is a family friend.",
    ),
    "P50": (
        "{S} was written by {o} and is often compared with {peer}.",
        "The book was written by {o} in reply to {peer}.",
    ),
    "P69": (
        "{S} studied at {o}, where {pron} met {peer}.",
        "{S} was educated at {o} together with {peer}.",
    ),
    "P106": (
        "{S}, a friend of {peer}, worked as {ao} {o}.",
        "{S} trained as {ao} {o} under {peer}.",
    ),
    "P112": ("{S} was founded by {o} as a rival to {peer}.",),
    "P127": ("{S} is owned by {o}; its main rival is {peer}.",),
    "P131": ("{S} lies in {o} and is twinned with {peer}.",),
    "P136": (
        "{S} {is} best known for {p} {o} recordings, some of them produced by {peer}.",
        "{P} music, usually described as {o}, was championed by {peer}.",
    ),
    "P159": ("{S} is headquartered in {o}; its main rival is {peer}.",),
    "P170": (
        "{S} was created by {o}, who had seen {peer} in {city}.",
        "It is one of the best known works of {o} and is often shown next to {peer}.",
    ),
    "P175": (
        "{S} was performed by {o} and is often confused with {peer}.",
        "The song was recorded by {o} as an answer to {peer}.",
    ),
    "P176": ("{S} is produced by {o} as a rival to the {peer}.",),
    "P264": (
        "{S} signed with {o} on the advice of {peer}.",
        "{P} albums have been released by {o}, with cover art by {peer}.",
    ),
    "P276": ("{S} is located in {o} and is often compared with {peer}.",),
    "P407": ("{S} was written in {o} and is often compared with {peer}.",),
    "P413": (
        "{S} {plays} as {ao} {o}, alongside {peer}.",
        "{S} {is} {ao} {o} by position and a former teammate of {peer}.",
    ),
    "P495": ("{S} was produced in {o} and is often compared with {peer}.",),
    "P740": ("{S} was founded in {o}; its main rival is {peer}.",),
    "P800": ("{S} {is} best known for {o}, a work admired by {peer}.",),
}

# --------------------------------------------------------------------------- other sentences

#: Further sentences about the subject (not one of the 24 relations), by kind.
EXTRAS: dict[str, tuple[str, ...]] = {
    "person": (
        "{S} received the {award} in {ya}.",
    ),
    "scholar": (
        "{S} received the {award} in {ya}.",
        "{S} was elected a member of the {academy} in {ya}.",
    ),
    "country": (
        "The official language is {lang}.",
        "{n} has a population of about {k} million.",
        "{n} is divided into {k} administrative regions.",
    ),
    "language": (
        "It has about {k} million speakers.",
        "{n} is written in the {script} alphabet.",
    ),
    "region": (
        "Its administrative centre is {centre}.",
        "{n} has an area of {k},{k3} square kilometres.",
    ),
    "city": (
        "It has a population of {k},{k3} inhabitants.",
        "The {kw} lies on the river {river}.",
    ),
    "university": (
        "It has about {k},{k3} students.",
        "The university was established in {y}.",
    ),
    "company": ("The company employs about {k},{k3} people.",),
    "label": ("The label has released records by {person} and {person2}.",),
    "club": ("The club plays its home games at {landmark}.",),
    "band": ("The band's line-up includes {person} and {person2}.",),
    "book": ("It was published by {publisher}.",),
    "film": ("It stars {person} and {person2}.",),
    "song": ("It was released as the {ord} single from the album {album}.",),
    "artwork": ("It is held in the collection of {museum}.",),
    "product": ("Production took place in {city}.",),
    "landmark": ("It was completed in {y}.",),
    "event": ("It was first held in {y}.",),
}

#: Generic sentences that pad long articles; they mention other (mostly popular) entities.
FILLERS: dict[str, tuple[str, ...]] = {
    "person": (
        "In {fy}, {s} moved to {city}, where {pron} worked alongside {person}.",
        "{P} work was praised by {person} and {person2}.",
        "During the {decade}s, {s} travelled widely in {country} and {country2}.",
        "In {fy}, {s} collaborated with {person} on a project in {city}.",
        "{S} gave a series of lectures at {university} in {fy}.",
        "Critics have compared {p} style to that of {person}.",
        "{S} was a close friend of {person}.",
        "A biography of {m}, written by {person}, appeared in {fy}.",
        "In {fy}, {s} appeared alongside {person} at the {event}.",
        "{S} spent several years in {city} before returning to {city2}.",
        "{P} correspondence with {person} was published in {fy}.",
        "{S} made a long visit to {country} in {fy}.",
        "{S} took part in a campaign supported by {company}.",
        "In {fy}, {s} was invited to {city} by {person}.",
        "{P} early influences included {person} and {work}.",
        "{S} often spoke about the influence of {person}.",
        "In {fy}, {pron} began a long association with {company}.",
        "{S} declined an invitation to teach at {university} in {fy}.",
        "A portrait of {m} by {person} hangs in {city}.",
        "Between {fy} and {fy2}, {s} lived mostly in {city}.",
        "In {fy}, {s} and {person} toured {country} together.",
        "{S} was awarded an honorary degree by {university} in {fy}.",
        "{P} archive was acquired by {university} in {fy}.",
        "Later in life, {s} wrote about {p} years in {city}.",
        "{S} publicly supported {person} in the {decade}s.",
        "{S} often returned to the town where {pron} was born.",
        "{S} rarely spoke about {p} birthplace.",
        "As a child, {s} lived for a time in {city}.",
        "{S} {has} spoken about {p} education in several interviews.",
        "Friends recall that {s} married young.",
        "{S} learned to play the piano as a child.",
        "{S} became famous in the {decade}s.",
        "{P} work in {city} is less well known.",
        "{S} {has} been represented by several agents.",
        "In {fy}, {s} was named one of the most famous people of {country}.",
        "{S} played a key role in a campaign led by {person}.",
        "A documentary about {p} life and work appeared in {fy}.",
        "Guests at {p} wedding included {people}.",
        "{P} students included {people}.",
        "In {fy}, {s} shared the stage with {people}.",
        "{S} was photographed in {fy} with {people2}.",
        "Among {p} friends were {people}.",
        "{P} favourite subjects were the {tw} and the {tw2}.",
        "{S} once wrote a short essay on the {tw}.",
        "In {fy}, {s} received the {gw} Award of {country}.",
        "Images of the {tw} recur in {p} later work.",
    ),
    "place": (
        "The {kw} was visited by {person} in {fy}.",
        "A railway connecting {m} with {city} opened in {fy}.",
        "In {fy}, {s} signed a cooperation agreement with {city}.",
        "{S} hosts a regional office of {company}.",
        "The economy of {m} grew rapidly after {fy}, driven by {company}.",
        "Notable people from {m} include {person} and {person2}.",
        "The {kw} appears in {work}.",
        "In {fy}, floods along the river {river} damaged much of {m}.",
        "{S} maintains close ties with {country}.",
        "Trade with {country} and {country2} expanded in the {decade}s.",
        "In {fy}, {person} described the {kw} as a place of great beauty.",
        "{S} was the setting of {work}.",
        "A large fire destroyed parts of {m} in {fy}.",
        "In {fy}, {company} opened a large factory near {m}.",
        "The {kw} was the site of a conference attended by {person} in {fy}.",
        "Tourism grew strongly in the {decade}s, with many visitors from {country}.",
        "The {event} has brought visitors to {m} since {fy}.",
        "In {fy}, a new bridge over the river {river} was opened.",
        "Much of the old quarter was rebuilt between {fy} and {fy2}.",
        "{person} lived in {m} for several years.",
        "The {kw} is located on the main railway line to {city}.",
        "Many famous people were born in {m}.",
        "Notable people from {m} include {people}.",
        "People associated with {m} include {people}.",
        "Residents of the {kw} have included {people}.",
        "Local legends about the {tw} and the {tw2} are well known in {m}.",
        "The {gw} Library of {m} opened in {fy}.",
        "The {kw} has a {gw} Theatre and a {gw} Hospital.",
        "The region where {m} is located was settled early.",
    ),
    "org": (
        "In {fy}, the {kw} signed a partnership with {company}.",
        "{person} served as chief executive from {fy} to {fy2}.",
        "The {kw} opened an office in {city} in {fy}.",
        "In {fy}, {s} expanded into {country}.",
        "{S} sponsored the {event} in {fy}.",
        "The {kw} was criticised by {person} in {fy}.",
        "In the {decade}s, {s} worked closely with {company}.",
        "Its annual report for {fy} was presented by {person}.",
        "In {fy}, {s} moved its offices to a new building in {city}.",
        "{person} joined the {kw} in {fy} and left in {fy2}.",
        "The {kw} celebrated its anniversary in {fy} with a reception in {city}.",
        "During the {decade}s the {kw} faced strong competition from {company}.",
        "{S} received an award from {university} in {fy}.",
        "In {fy}, {person} was appointed chair of the board.",
        "A dispute with {company} was settled in {fy}.",
        "The {kw} has been a partner of the {event} since {fy}.",
        "Its archives for the years {fy} to {fy2} are kept in {city}.",
        "In {fy}, {s} celebrated the anniversary of its founding.",
        "The {kw} moved its headquarters twice in the {decade}s.",
        "Ownership of the {kw} changed several times after {fy}.",
        "The {kw} has produced a book about its own history.",
        "Former staff of the {kw} include {people}.",
        "Its board has included {people}.",
        "Its logo shows the {tw}.",
        "In {fy}, the {kw} received the {gw} Award for industry.",
        "It is listed on the {gw} Stock Exchange.",
    ),
    "work": (
        "{S} was praised by {person}.",
        "A new edition appeared in {fy} with a foreword by {person}.",
        "The {kw} was shown in {city} in {fy}.",
        "{person} later called it a turning point.",
        "It was discussed at length by {person} and {person2}.",
        "In {fy}, the {kw} was presented at the {event}.",
        "It has been compared to {work}.",
        "{person} has cited it as an early influence.",
        "In {fy}, it was the subject of an exhibition in {city}.",
        "A restored version was presented in {city} in {fy}.",
        "It was largely ignored until {person} championed it in the {decade}s.",
        "{P} reception in {country} was mixed.",
        "The {kw} was reissued in {fy} to mark an anniversary.",
        "In {fy}, {person} and {person2} discussed it on a radio programme.",
        "It inspired {work}.",
        "Scholars at {university} have studied it since {fy}.",
        "The author of a study of the {kw}, {person}, called it a masterpiece.",
        "It was created over several years.",
        "It has been performed and translated into several languages.",
        "It was written during a stay in {city}.",
        "Admirers of the {kw} have included {people}.",
        "It is often listed with {works}.",
        "Its themes include the {tw} and the {tw2}.",
        "The {tw} is a recurring image in it.",
        "In {fy}, it won the {gw} Prize for the arts.",
    ),
}

FILLERS["language"] = (
    "{person} wrote a grammar of {n} in {fy}.",
    "The first dictionary of {n} appeared in {fy}.",
    "{n} is also spoken by communities in {country} and {country2}.",
    "A spelling reform was introduced in {fy}.",
    "{n} is taught at {university}.",
    "Many loanwords in {n} come from the language of {country}.",
    "{work} is among the best known works written in {n}.",
    "Radio broadcasts in {n} began in {fy}.",
    "The standard form is based on the speech of {city}.",
    "{person} has written about the history of {n}.",
)

FILLERS["band"] = (
    "In {fy}, the band toured {country} and {country2}.",
    "{person} joined the band in {fy} and left in {fy2}.",
    "The band recorded its second album in {city} in {fy}.",
    "{S} performed at the {event} in {fy}.",
    "In {fy}, {s} supported {person} on a tour of {country}.",
    "Critics have compared the band to {person}.",
    "The band took a break between {fy} and {fy2}.",
    "{P} songs have been covered by {person} and {person2}.",
    "In the {decade}s, the band often played in {city}.",
    "A documentary about the band, directed by {person}, appeared in {fy}.",
    "Former members include {people}.",
    "Their songs are often about the {tw} and the {tw2}.",
    "The band has worked with {people}.",
)
FILLERS["event"] = (
    "In {fy}, the {kw} drew visitors from {country} and {country2}.",
    "{person} took part in the {kw} in {fy}.",
    "The {fy} edition was opened by {person}.",
    "{company} has supported the {kw} since {fy}.",
    "In {fy}, the {kw} was cancelled because of storms.",
    "The {kw} was broadcast in {country} for the first time in {fy}.",
    "{person} and {person2} were guests of honour in {fy}.",
    "Attendance grew strongly in the {decade}s.",
    "Past guests include {people}.",
    "Winners of its prizes include {people}.",
)

FILLERS["product"] = (
    "The {kw} was praised by {person}.",
    "An improved version was introduced in {fy}.",
    "Sales were strong in {country} and {country2}.",
    "In {fy}, {person} reviewed the {kw} favourably.",
    "The {kw} was shown at the {event} in {fy}.",
    "{company} answered with a competing model in {fy}.",
    "{person} used one during a tour of {country} in {fy}.",
    "In the {decade}s, the {kw} was popular in {city}.",
    "An example is kept at {museum}.",
    "Critics compared it with {work}.",
    "Well-known owners have included {people}.",
)

_FIELD = re.compile(r"\{(\w+)\}")


def fields(template: str) -> tuple[str, ...]:
    """The distinct field names of a template, in order."""
    return tuple(dict.fromkeys(_FIELD.findall(template)))


@functools.cache
def vocabulary() -> frozenset[str]:
    """Every lowercase word the templates and value lists use (invented names must avoid them)."""
    words: list[str] = []
    groups = [LEADS.values(), FACTS.values(), KIND_FACTS.values(), PEER_FACTS.values(), EXTRAS.values(),
              FILLERS.values()]
    for group in groups:
        for templates in group:
            for template in templates:
                words.extend(re.findall(r"[a-z]+", _FIELD.sub(" ", template).lower()))
    values = [*GENRES, *FIELDS, *REGION_TYPES, *TOWN_WORDS, *LANDMARK_TYPES, *SCRIPTS, *FAMILIES,
              *MONTHS, *ARTWORK_MEDIA, *BOOK_TYPES, *FILM_GENRES, *PRODUCT_MODELS, *TITLE_WORDS,
              *PLACE_PREFIXES, *GENERIC_WORDS, *GENERIC_UNIVERSITIES, *UNIVERSITY_PATTERNS,
              *LABEL_PATTERNS, *BAND_PATTERNS, *BOOK_PATTERNS, *FILM_PATTERNS, *SONG_PATTERNS,
              *ARTWORK_PATTERNS]
    for occupations in OCCUPATIONS.values():
        values.extend(occupations)
    for occupation, positions, clubs in SPORTS.values():
        values.extend((occupation, *positions, *clubs))
    for suffixes, products in INDUSTRIES.values():
        values.extend((*suffixes, *products))
    for value in values:
        words.extend(re.findall(r"[a-z]+", value.lower()))
    return frozenset(words)
