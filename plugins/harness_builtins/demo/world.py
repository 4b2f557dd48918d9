"""The generator of the demo world: entities, facts, articles, passages and questions.

Everything is drawn from one ``random.Random(seed)`` in a fixed order, and nothing iterates a set
or depends on string hashing, so a seed gives the same world on every call and every machine.

Shape of the world (the style of EntityQuestions over DPR's Wikipedia):

- Entities of 17 kinds (people, cities, companies, books...) with invented names and facts for
  the 24 EntityQuestions relations; a fact's object is another entity or a value (an occupation,
  a genre, a playing position).
- Names are shared as real names are: people draw given names and surnames from pools where a few
  names are very common, spouses and children share family names, some people are named after
  famous ones, companies and clubs carry the names of cities and families ("Ostrelin Motors",
  "FC Ostrelin"), places the names of other places ("North Ostrelin"), and works common words
  ("The Last Winter"). Entities with exactly the same name get Wikipedia-style disambiguated
  titles ("Varenko Tilsa (painter)"); questions name them as EntityQuestions does, ambiguously.
- Each entity has a "fame" drawn from a Pareto distribution. Facts pick their objects by fame, so
  popular cities are the birthplace of many people, and fame decides article length: a handful of
  entities have long articles (tens of passages), most fit in one passage.
- Each entity's article is a lead sentence, one sentence per fact (wording drawn from several
  templates per relation, shared by all articles; some also name a peer, which makes them hard
  distractors for the peer's questions), a few other sentences, and for popular entities filler
  that mentions other entities and uses relation wording. In long articles facts are spread over
  the article and the subject is mostly a pronoun or a surname. Articles are split into 100-word
  passages titled with the entity's title.
- Questions instantiate the relation's EntityQuestions template with the subject's name; the
  answer is the object's name (and its alias). Only facts whose answer matches (by DPR's string
  rule) the text of some passage of the subject's article are asked.
- Training splits (``demo-train``, ``demo-dev``): questions about the 12 :data:`TRAIN_RELATIONS`
  over the same world and corpus, drawn after the test questions from the subjects left (so the
  test suite is exactly what it was before the splits existed), subjects disjoint between test,
  dev and train.
"""

from __future__ import annotations

import json
import random
from bisect import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from itertools import accumulate

from harness.api import Corpus, InMemoryCorpus, Part, Passage, Question, Suite

from . import text as T
from . import values as V
from .names import NameForge, Zipf, fold
from .entities import Entity, answers_of
from .render import ArticleWriter, _article

DEFAULT_SEED = 20240521
QUESTIONS_PER_RELATION = 42
CORPUS_NAME = "demo-synthetic-wiki"

#: The relations the ``demo-train`` and ``demo-dev`` splits ask about: every other relation in
#: relation-id order, starting with the second (P19, P26, P40, ...). The test suite ``demo`` asks
#: all 24, so it has 12 *seen* and 12 *unseen* relations (EntityQuestions' headline: a dense
#: retriever trained on a relation's question pattern generalises to new entities, not to unseen
#: relations). This alternation was chosen over the one starting with P17 because each of its
#: relations has at least a hundred answerable subjects left after the test questions (P36,
#: P127, P176 and P276 have fewer than 90), and because it puts the place-of-birth (P19) and
#: headquarters (P159) relations of the EntityQuestions analyses among the seen ones, while their
#: near neighbours place-of-death (P20) and creator (P170) stay unseen.
TRAIN_RELATIONS: tuple[str, ...] = (
    "P19", "P26", "P40", "P69", "P112", "P131", "P159", "P175", "P264", "P407", "P495", "P800",
)
#: The most questions per training relation in ``demo-train`` and ``demo-dev`` (fewer where the
#: world has fewer answerable subjects left; dev is drawn first, so it is always full).
TRAIN_QUESTIONS_PER_RELATION = 200
DEV_QUESTIONS_PER_RELATION = 30
#: The training splits in the order they are drawn, with their sizes per relation.
SPLITS: tuple[tuple[str, int], ...] = (("dev", DEV_QUESTIONS_PER_RELATION), ("train", TRAIN_QUESTIONS_PER_RELATION))

#: Pareto shape of fame (smaller is more skewed); facts weigh their objects by
#: ``min(fame, FACT_FAME_CAP) ** FACT_FAME_EXPONENT`` (a long tail of birthplaces, labels...).
FAME_ALPHA = 1.15
FACT_FAME_CAP = 100.0
FACT_FAME_EXPONENT = 0.35

#: Sizes of the pools people's names are drawn from, and the Zipf exponent of the draws. The pools
#: are small and skewed on purpose: in a world of a few thousand passages they give a common name
#: as many competing passages as "John Smith" has among Wikipedia's millions.
GIVEN_NAMES = 80
SURNAMES = 150
NAME_EXPONENT = 1.2
#: Share of people named after a famous person of their gender (exact namesakes), and of sons
#: named after their father.
P_NAMESAKE = 0.25
P_JUNIOR = 0.5

DESCRIPTION = (
    "SYNTHETIC demo suite: a made-up, entity-centric world in the style of EntityQuestions "
    "(24 relations, invented names, Wikipedia-like 100-word passages), generated by code in well "
    "under a second with no downloads. For trying the harness and plugins offline; its numbers "
    "are not comparable to any published benchmark."
)

SPLIT_DESCRIPTIONS = {
    split: (
        f"SYNTHETIC {split} questions of the demo world (same corpus as 'demo'; subjects disjoint "
        f"from 'demo' and from the other split) for the 12 training relations "
        f"{', '.join(TRAIN_RELATIONS)}: 'demo' then has seen and unseen relations. For trying "
        "training offline; its numbers are not comparable to any published benchmark."
    )
    for split, _size in SPLITS
}


def load_templates() -> dict[str, str]:
    """The 24 EntityQuestions relations and their question templates, in the file's order
    (P30 has a template but no questions in EntityQuestions; the ``*_similar`` variants are
    paraphrases)."""
    path = resources.files("harness_builtins") / "data" / "relation_query_templates.json"
    raw: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return {rel: tpl for rel, tpl in raw.items() if "_" not in rel and rel != "P30"}


@dataclass(frozen=True)
class World:
    """A generated world and the suite made from it."""

    seed: int
    entities: tuple[Entity, ...]
    passages: tuple[Passage, ...]
    parts: tuple[Part, ...]
    #: question id -> (subject, relation)
    subjects: Mapping[str, tuple[Entity, str]]
    templates: Mapping[str, str]
    #: split name ("train", "dev") -> its parts, one per relation of :data:`TRAIN_RELATIONS`
    splits: Mapping[str, tuple[Part, ...]] = field(default_factory=dict)
    #: question id of a split -> (subject, relation)
    split_subjects: Mapping[str, tuple[Entity, str]] = field(default_factory=dict)

    def suite(self) -> Suite:
        return Suite(
            name="demo",
            parts=self.parts,
            corpus=InMemoryCorpus(CORPUS_NAME, self.passages),
            match="string",
            default_k=(1, 5, 20, 100),
            synthetic=True,
            description=DESCRIPTION,
        )

    def split_suite(self, split: str, corpus: Corpus | None = None) -> Suite:
        """The suite ``demo-<split>`` ("train" or "dev") over the same corpus as :meth:`suite`
        (pass ``corpus`` to share one already built)."""
        if split not in self.splits:
            raise KeyError(f"the demo world has no split {split!r}; it has {', '.join(self.splits)}")
        return Suite(
            name=f"demo-{split}",
            parts=self.splits[split],
            corpus=corpus if corpus is not None else InMemoryCorpus(CORPUS_NAME, self.passages),
            match="string",
            default_k=(1, 5, 20, 100),
            synthetic=True,
            description=SPLIT_DESCRIPTIONS[split],
        )


class _Pool:
    """Entities drawn at random by fame.

    Facts draw their objects with weight ``min(fame, FACT_FAME_CAP) ** FACT_FAME_EXPONENT``: popular
    cities are the birthplace of many people, yet no object answers a large share of a relation's
    questions. Mentions in filler draw with weight ``fame``, so a few entities are named in many
    articles; namesakes take the name of a famous person with weight ``fame ** 0.6``.
    """

    __slots__ = ("members", "_cum")

    WEIGHTS: dict[str, Callable[[float], float]] = {
        "fact": lambda fame: min(fame, FACT_FAME_CAP) ** FACT_FAME_EXPONENT,
        "mention": lambda fame: fame,
        "namesake": lambda fame: fame ** 0.6,
    }

    def __init__(self) -> None:
        self.members: list[Entity] = []
        self._cum: dict[str, list[float]] = {}

    def add(self, entity: Entity) -> None:
        self.members.append(entity)
        for mode, cum in self._cum.items():  # keep the running sums current
            cum.append(cum[-1] + self.WEIGHTS[mode](entity.fame) if cum else self.WEIGHTS[mode](entity.fame))

    def pick(self, rng: random.Random, avoid: Entity | None = None, *, mention: bool = False,
             mode: str | None = None) -> Entity | None:
        """A member other than ``avoid`` (None when there is none)."""
        mode = mode or ("mention" if mention else "fact")
        cum = self._cum.get(mode)
        if cum is None:
            cum = self._cum[mode] = list(accumulate(self.WEIGHTS[mode](e.fame) for e in self.members))
        for _ in range(20):
            chosen = self.members[bisect(cum, rng.random() * cum[-1])]
            if chosen is not avoid:
                return chosen
        return next((e for e in self.members if e is not avoid), None)

    def __len__(self) -> int:
        return len(self.members)


class _Builder(ArticleWriter):
    """Builds the world's entities and facts; :class:`ArticleWriter` renders their articles."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.forge = NameForge(self.rng, reserved=T.vocabulary())
        self.entities: list[Entity] = []
        self.pools: dict[str, _Pool] = {}
        #: folded name -> the entities of that name, in creation order
        self.names: dict[str, list[Entity]] = {}

    # ------------------------------------------------------------------ entities

    def pool(self, key: str) -> _Pool:
        pool = self.pools.get(key)
        if pool is None:
            pool = self.pools[key] = _Pool()
        return pool

    def new(self, kind: str, name: str, boost: float = 1.0, aliases: tuple[str, ...] = (),
            pools: tuple[str, ...] = ()) -> Entity:
        fame = min(self.rng.paretovariate(FAME_ALPHA), 400.0) * boost
        entity = Entity(len(self.entities), kind, name, fame, aliases)
        self.entities.append(entity)
        self.names.setdefault(fold(name), []).append(entity)
        for pool in (kind, *pools):
            self.pool(pool).add(entity)
        return entity

    def taken(self, name: str) -> bool:
        return fold(name) in self.names

    def named(self, pattern: str, **word_options) -> tuple[str, str]:
        """A name from ``pattern`` with a fresh invented word in ``{w}``, and that word."""
        word = self.forge.word(**word_options)
        return pattern.format(w=word), word

    def free(self, make: Callable[[], str]) -> str:
        """The first name ``make`` gives that no entity has yet."""
        while True:
            name = make()
            if not self.taken(name):
                return name

    def clash(self, name: str, city: Entity) -> bool:
        """Whether something named ``name`` after ``city`` exists: the "FC Ostrelin" of one city is
        unique, but another city called Ostrelin may have its own."""
        return any(e.attrs.get("named_after") is city or e.attrs.get("named_after") is None
                   for e in self.names.get(fold(name), ()))

    def city_name(self) -> str:
        """The name of a city of the world, popular ones more often (names are reused)."""
        return self.pool("city").pick(self.rng, mention=True).name

    def build(self) -> None:
        rng, forge = self.rng, self.forge
        self.rivers = [forge.word() for _ in range(40)]
        self.awards = [self.named(rng.choice(("{w} Prize", "Order of {w}", "{w} Medal")))[0]
                       for _ in range(24)]
        self.academies = [self.named("{w} Academy of Sciences")[0] for _ in range(8)]
        self.given = {
            "f": Zipf([forge.word(V.FEMALE_SUFFIXES, syllables=(1, 2, 2), accent=0.06)
                       for _ in range(GIVEN_NAMES)], NAME_EXPONENT),
            "m": Zipf([forge.word(V.MALE_SUFFIXES, syllables=(1, 2, 2), accent=0.06)
                       for _ in range(GIVEN_NAMES)], NAME_EXPONENT),
        }
        self.surnames = Zipf([forge.word(V.SURNAME_SUFFIXES, accent=0.05) for _ in range(SURNAMES)],
                             NAME_EXPONENT)
        self.title_words = Zipf(V.TITLE_WORDS, 1.3)
        self.generic = Zipf(V.GENERIC_WORDS, 1.3)
        self.options: dict[str, Sequence[str]] = {
            "dir": V.DIRECTIONS, "fam": V.FAMILIES, "field": V.FIELDS, "river": self.rivers,
            "award": self.awards, "academy": self.academies, "script": V.SCRIPTS, "ord": V.ORDINALS,
        }
        self.handlers = self._handlers()
        self.build_places()
        self.build_people()
        self.build_organisations()
        self.build_works()
        self.build_landmarks()
        self.disambiguate()
        shadowed = {key for e in self.entities for key in e.attrs} | set(self.options)
        self.direct = {f: h for f, h in self.handlers.items() if f not in shadowed}

    def build_places(self) -> None:
        rng, forge = self.rng, self.forge
        for _ in range(120):
            while True:
                stem = forge.word(syllables=(1, 2), register=False)
                if stem[-1] in "aeiouy":
                    continue
                country = stem + rng.choice(V.COUNTRY_SUFFIXES)
                language = stem + rng.choice(V.LANGUAGE_SUFFIXES)
                if forge.take(stem) and forge.take(country):
                    if forge.take(language):
                        break
            c = self.new("country", country, boost=8.0)
            lang = self.new("language", language, boost=2.5)
            c.attrs.update(language=lang, k=rng.randint(1, 90))
            lang.attrs.update(home=c, k=rng.randint(1, 90))
        countries = self.pool("country").members
        regions: list[Entity] = []
        for i in range(140):
            country = countries[i] if i < len(countries) else rng.choice(countries)
            rtype = rng.choice(V.REGION_TYPES)
            name, word = self.named("{w} " + rtype)
            # a third of the regions are named after their main city ("Vass County", seat Vass)
            after_city = rng.random() < 0.33
            r = self.new("region", name, boost=1.5, aliases=() if after_city else (word,))
            r.add("P17", country)
            r.attrs.update(rtype=rtype.lower(), home=country, dir=rng.choice(V.DIRECTIONS),
                           seat_name=word if after_city else None)
            regions.append(r)
        plain: dict[int, list[str]] = {}  # country id -> its one-word city names
        for i in range(440):
            region = regions[i] if i < len(regions) else rng.choice(regions)
            country = region.attrs["home"]
            capital = i < len(countries)  # the first region of each country holds its capital
            r = rng.random()
            if region.attrs["seat_name"] and "centre" not in region.attrs:
                name = region.attrs["seat_name"]
            elif not capital and r < 0.12 and plain.get(country.id):  # "North Ostrelin", same country
                name = f"{rng.choice(V.PLACE_PREFIXES)} {rng.choice(plain[country.id])}"
                if self.taken(name):
                    name = forge.word(V.CITY_SUFFIXES, accent=0.08)
            elif not capital and r < 0.45 and len(plain) > 1:  # a namesake of a city in another country
                model = self.pool("city").pick(rng, mention=True)
                while " " in model.name or any(c.kind == "city" and c.attrs["home"] is country
                                               for c in self.names[fold(model.name)]):
                    model = self.pool("city").pick(rng, mention=True)
                name = model.name
            else:
                name = forge.word(V.CITY_SUFFIXES, accent=0.08)
            city = self.new("city", name, boost=14.0 if capital else 1.0)
            if " " not in name:
                plain.setdefault(country.id, []).append(name)
            city.add("P131", region)
            city.add("P17", country)
            city.attrs.update(home=country, region=region, capital=capital, dir=rng.choice(V.DIRECTIONS),
                              town="city" if capital else rng.choice(V.TOWN_WORDS))
            region.attrs.setdefault("centre", city)
            if capital:
                country.add("P36", city)
        cities = self.pool("city")
        for _ in range(130):
            r = rng.random()
            named_after = None
            if r < 0.2:  # "National University": one in many countries
                name = rng.choice(V.GENERIC_UNIVERSITIES)
                city = cities.pick(rng)
            elif r < 0.45:  # "University of Ostrelin", in Ostrelin
                city = cities.pick(rng)
                name = rng.choice(V.UNIVERSITY_PATTERNS).format(w=city.name)
                if self.clash(name, city):
                    name = self.named(rng.choice(V.UNIVERSITY_PATTERNS))[0]
                    city = cities.pick(rng)
                else:
                    named_after = city
            elif r < 0.6:  # named after a person: "Tilsa University"
                name = self.free(lambda: rng.choice(V.UNIVERSITY_PATTERNS[:1] + V.UNIVERSITY_PATTERNS[3:])
                                 .format(w=self.surnames.draw(rng)))
                city = cities.pick(rng)
            else:
                name = self.named(rng.choice(V.UNIVERSITY_PATTERNS))[0]
                city = cities.pick(rng)
            u = self.new("university", name, boost=2.0)
            u.attrs["named_after"] = named_after
            u.add("P17", city.attrs["home"])
            u.attrs.update(ucity=city, home=city.attrs["home"], y=rng.randint(1400, 1990))

    def person(self, cat: str, *, surname: str | None = None, born: int | None = None,
               gender: str | None = None, given: str | None = None) -> Entity:
        rng = self.rng
        gender = gender or rng.choice(("f", "m"))
        namesakes = self.pool("person:" + gender)
        if surname is None and namesakes.members and rng.random() < P_NAMESAKE:
            model = namesakes.pick(rng, mode="namesake")  # named after a famous person
            given, surname = model.attrs["given"], model.attrs["surname"]
        else:
            given = given or self.given[gender].draw(rng)
            surname = surname or self.surnames.draw(rng)
        name = f"{given} {surname}"
        born = born if born is not None else rng.randint(1900, 2001)
        p_dead = 1.0 if born < 1925 else 0.7 if born < 1945 else 0.3 if born < 1965 else 0.04
        died = None
        if born + 28 <= 2023 and rng.random() < p_dead:
            died = rng.randint(born + 28, min(2023, born + 98))
        boost = 1.3 if cat in ("business", "politician", "actor") else 1.0
        p = self.new("person", name, boost=boost, pools=(cat, "person:" + gender))
        birthplace = self.pool("city").pick(rng)
        p.add("P19", birthplace)
        if died is not None:
            p.add("P20", birthplace if rng.random() < 0.3 else self.pool("city").pick(rng))
        country = birthplace.attrs["home"]
        if cat == "athlete":
            sport = rng.choice(tuple(V.SPORTS))
            occupation, positions, _ = V.SPORTS[sport]
            p.add("P106", occupation)
            p.add("P413", rng.choice(positions))
            p.attrs["sport"] = sport
        else:
            p.add("P106", rng.choice(V.OCCUPATIONS[cat]))
        if rng.random() < (0.2 if cat == "athlete" else 0.55):
            p.add("P69", self.pool("university").pick(rng))
        p.attrs.update(
            cat=cat, gender=gender, given=given, surname=surname, y=born, y2=died, home=country,
            nat=country.attrs["language"].name, d=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)}",
            d2=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)}", notes=[],
        )
        return p

    def build_people(self) -> None:
        rng = self.rng
        quotas = (("writer", 240), ("artist", 180), ("musician", 200), ("athlete", 260),
                  ("director", 70), ("business", 170), ("politician", 140), ("scientist", 130),
                  ("actor", 100))
        base = [self.person(cat) for cat, count in quotas for _ in range(count)]
        spouse_cats = ("other", "other", "actor", "politician", "scientist", "writer", "business")
        for p in base:
            born = p.attrs["y"]
            if rng.random() < 0.3:
                gender = "m" if p.attrs["gender"] == "f" else "f"
                partner_born = min(2001, max(1900, born + rng.randint(-6, 6)))
                # half the wives carry their husband's family name
                shared = p.attrs["surname"] if gender == "f" and rng.random() < 0.5 else None
                spouse = self.person(rng.choice(spouse_cats), born=partner_born, gender=gender, surname=shared)
                year = max(born, partner_born) + rng.randint(20, 35)
                year = min(2023, p.attrs["y2"] or 2023, spouse.attrs["y2"] or 2023, year)
                for a, b in ((p, spouse), (spouse, p)):
                    a.add("P26", b)
                    a.attrs["ym"] = year
            if born <= 1980 and rng.random() < 0.22:
                parents = [p, *p.facts.get("P26", ())]
                father = next((q for q in parents if q.attrs["gender"] == "m"), p)
                junior = father.attrs["gender"] == "m" and rng.random() < P_JUNIOR
                for _ in range(rng.choice((1, 1, 2, 2, 3))):
                    child_born = min(2005, born + rng.randint(24, 38))
                    gender = rng.choice(("f", "m"))
                    given = father.attrs["given"] if junior and gender == "m" else None
                    junior = junior and given is None  # one son at most bears his father's name
                    child = self.person(rng.choice([c for c, _ in quotas] + ["other"] * 3), gender=gender,
                                        surname=father.attrs["surname"], born=child_born, given=given)
                    for parent in parents:
                        parent.add("P40", child)
                    child.attrs["notes"].append(
                        ("{S} {is} the {cw} of {parent}.",
                         {"cw": "daughter" if child.attrs["gender"] == "f" else "son", "parent": p.name}))

    def build_organisations(self) -> None:
        rng = self.rng
        industries = tuple(V.INDUSTRIES)
        for i in range(150):
            industry = industries[i % len(industries)] if i < 2 * len(industries) else rng.choice(industries)
            suffixes, products = V.INDUSTRIES[industry]
            pools = ("maker",) if products else ()
            r = rng.random()
            founder = hq = None
            aliases: tuple[str, ...] = ()
            stem = ""
            generic = False
            if r < 0.3:  # "Vebrax": the founder's surname alone
                founder = self.pool("business").pick(rng)
                c = self.new("company", founder.attrs["surname"], boost=2.0, pools=pools + (industry,))
                c.attrs.update(industry=industry, products=[], k=rng.randint(1, 99), stem=c.name)
                self.found(c, ("business",), owner_pools=("company", "business"), p_owner=0.35, since=1850,
                           founder=founder)
                continue
            named_after = None
            if r < 0.45:  # "Ostrelin Motors", mostly based in Ostrelin
                named_after = self.pool("city").pick(rng, mention=True)
                stem = named_after.name
                hq = named_after if rng.random() < 0.6 else None
            elif r < 0.55:  # "Tilsa Motors", founded by a Tilsa
                founder = self.pool("business").pick(rng)
                stem = founder.attrs["surname"]
            elif r < 0.85:  # "National Bank": many countries have one
                stem, generic = self.generic.draw(rng), True
            name = f"{stem} {suffixes[0] if generic else rng.choice(suffixes)}"
            if named_after is not None and self.clash(name, named_after) or \
                    not stem or (self.taken(name) and not generic and named_after is None):
                founder = hq = named_after = None
                stem = self.forge.word(V.STEM_SUFFIXES)
                name, aliases = f"{stem} {rng.choice(suffixes)}", (stem,)
            c = self.new("company", name, boost=2.0, aliases=aliases, pools=pools + (industry,))
            c.attrs.update(industry=industry, products=[], k=rng.randint(1, 99), stem=stem,
                           named_after=named_after)
            self.found(c, ("business",), owner_pools=("company", "business"), p_owner=0.35, since=1850,
                       hq=hq, founder=founder)
        for _ in range(120):
            r = rng.random()
            founder = hq = None
            aliases = ()
            if r < 0.25:
                founder = self.pool("musician").pick(rng)
                name = f"{founder.attrs['surname']} {rng.choice(V.LABEL_PATTERNS).split()[-1]}"
            elif r < 0.45:
                hq = self.pool("city").pick(rng)
                name = rng.choice(V.LABEL_PATTERNS).format(w=hq.name)
            elif r < 0.65:
                name = rng.choice(V.LABEL_PATTERNS).format(w=self.generic.draw(rng))
            else:
                name = ""
            if not name or (r < 0.25 and self.taken(name)) or (hq is not None and self.clash(name, hq)):
                founder = hq = None
                name, word = self.named(rng.choice(V.LABEL_PATTERNS), suffixes=V.STEM_SUFFIXES)
                aliases = (word,)
            label = self.new("label", name, boost=1.5, aliases=aliases)
            label.attrs["named_after"] = hq
            self.found(label, ("musician", "business"), owner_pools=("media", "business"), p_owner=0.4,
                       since=1920, hq=hq, founder=founder)
        for i in range(42):
            sport = tuple(V.SPORTS)[i % len(V.SPORTS)]
            hq = None
            if rng.random() < 0.65:  # "FC Ostrelin", in Ostrelin
                hq = self.pool("city").pick(rng, mention=True)
                name = rng.choice(V.SPORTS[sport][2]).format(w=hq.name)
                if self.clash(name, hq):
                    hq = None
            if hq is None:
                name, _word = self.named(rng.choice(V.SPORTS[sport][2]))
            club = self.new("club", name, boost=2.5, pools=("club:" + sport,))
            club.attrs.update(sport=sport, named_after=hq)
            self.found(club, ("business", "politician"), owner_pools=("company", "business"), p_owner=0.5,
                       since=1870, hq=hq)
        for _ in range(70):
            name = self.work_title(V.BAND_PATTERNS)  # bands share names too
            band = self.new("band", name, boost=1.5, pools=("performer",))
            city = self.pool("city").pick(rng)
            band.add("P136", rng.choice(V.GENRES))
            band.add("P740", city)
            band.add("P264", self.pool("label").pick(rng))
            year = rng.randint(1955, 2018)
            band.attrs.update(y=year, yl=min(2023, year + rng.randint(0, 6)), home=city.attrs["home"],
                              nat=city.attrs["home"].attrs["language"].name)
        for m in self.pool("musician").members:
            m.add("P136", rng.choice(V.GENRES))
            if rng.random() < 0.8:
                m.add("P264", self.pool("label").pick(rng))
                m.attrs["yl"] = min(2023, m.attrs["y"] + rng.randint(18, 35))
            self.pool("performer").add(m)
        for a in self.pool("athlete").members:
            club = self.pool("club:" + a.attrs["sport"]).pick(rng)
            a.attrs.update(club=club.name, yc=min(2023, a.attrs["y"] + rng.randint(17, 24)))

    def found(self, org: Entity, founder_pools: tuple[str, ...], owner_pools: tuple[str, ...],
              p_owner: float, since: int, hq: Entity | None = None, founder: Entity | None = None) -> None:
        """Founding facts of an organisation: P112, P159, P740, P127."""
        rng = self.rng
        cities = self.pool("city")
        hq = hq or cities.pick(rng)
        org.add("P159", hq)
        org.add("P740", hq if rng.random() < 0.6 else cities.pick(rng))
        year = rng.randint(since, 2015)
        if founder is None and rng.random() < 0.75:
            founder = self.pool(rng.choice(founder_pools)).pick(rng)
        if founder is not None:
            org.add("P112", founder)
            year = min(2020, founder.attrs["y2"] or 2020, max(since, founder.attrs["y"] + rng.randint(25, 50)))
            founder.attrs["notes"].append(("{S} founded {org} in {yf}.", {"org": org.name, "yf": year}))
        org.attrs.update(y=year, home=hq.attrs["home"])
        if rng.random() < p_owner:
            owner = self.pool(rng.choice(owner_pools)).pick(rng, avoid=org)
            if owner is not None and org not in owner.facts.get("P127", ()):  # no mutual ownership
                org.add("P127", owner)
                org.attrs["yo"] = rng.randint(year, 2023)

    def work_title(self, patterns: Sequence[str]) -> str:
        """A title from one of ``patterns`` (see :data:`text.BOOK_PATTERNS`); titles may repeat."""
        rng = self.rng
        pattern = rng.choice(patterns)
        values: dict[str, str] = {}
        if "{w}" in pattern:
            values["w"] = self.forge.word(accent=0.04)
        if "{t}" in pattern:
            values["t"] = self.title_words.draw(rng)
        if "{t2}" in pattern:
            values["t2"] = self.title_words.draw(rng)
        if "{c}" in pattern:
            values["c"] = self.city_name()
        if "{g}" in pattern:
            values["g"] = self.given[rng.choice(("f", "m"))].draw(rng)
        if "{pn}" in pattern:
            values["pn"] = rng.choice(self.pool("person").members).name
        title = pattern.format_map(values)
        if title.startswith("A ") and _article(title[2:]) == "an":
            title = "An" + title[1:]
        words = title.split()
        if len(set(words)) < len(words) or any(w + "s" in words for w in words):
            return self.work_title(patterns)  # "Night Nights"
        return title

    def works(self, kind: str, creators: _Pool, count: int, relation: str, patterns: Sequence[str],
              boost: float = 1.0, notable: bool = True) -> None:
        """``count`` works of ``kind``: one per creator first, the rest to creators by fame."""
        rng = self.rng
        order = list(creators.members) + [creators.pick(rng) for _ in range(count - len(creators))]
        for creator in order:
            name = self.work_title(patterns)
            while any(w.attrs.get("creator") is creator for w in self.names.get(fold(name), ())):
                name = self.work_title(patterns)  # one creator never makes two works of one title
            work = self.new(kind, name, boost=boost, pools=("work",))
            work.add(relation, creator)
            c_year = creator.attrs.get("y") or 1950
            last = creator.attrs.get("y2") or 2023
            work.attrs["y"] = min(2023, last, c_year + rng.randint(20, 45)) if creator.kind == "person" \
                else rng.randint(max(c_year, 1950), 2023)
            lang = creator.attrs["home"].attrs["language"]
            if kind != "artwork":
                work.add("P407", lang if rng.random() < 0.9 else self.pool("language").pick(rng))
            if kind != "song" or rng.random() < 0.6:
                work.add("P495", creator.attrs["home"] if rng.random() < 0.85 else self.pool("country").pick(rng))
            if notable and creator.kind == "person" and "P800" not in creator.facts:
                creator.add("P800", work)
            work.attrs["creator"] = creator

    def build_works(self) -> None:
        rng = self.rng
        self.works("book", self.pool("writer"), 240, "P50", V.BOOK_PATTERNS)
        for book in self.pool("book").members:
            book.attrs.update(btype=rng.choice(V.BOOK_TYPES), nat=book.object("P50").attrs["nat"])
        self.works("film", self.pool("director"), 90, "P57", V.FILM_PATTERNS, boost=1.5)
        for film in self.pool("film").members:
            film.attrs.update(director=film.facts.pop("P57")[0].name, genre=rng.choice(V.FILM_GENRES))
        self.works("song", self.pool("performer"), 260, "P175", V.SONG_PATTERNS)
        for song in self.pool("song").members:
            song.attrs["album"] = self.work_title(V.FILM_PATTERNS)
        self.works("artwork", self.pool("artist"), 140, "P170", V.ARTWORK_PATTERNS)
        for art in self.pool("artwork").members:
            medium = rng.choice(V.ARTWORK_MEDIA)
            art.attrs.update(medium=medium, amedium=_article(medium))
        makers = self.pool("maker")
        for _ in range(130):
            company = makers.pick(rng)
            ptype = rng.choice(V.INDUSTRIES[company.attrs["industry"]][1])
            r = rng.random()
            if r < 0.35:  # the maker's brand: "Ostrelin GT" by Ostrelin Motors
                brand = company.attrs["stem"]
                name = f"{brand} {rng.choice(V.PRODUCT_MODELS)}"
                if self.taken(name):
                    models = V.PRODUCT_MODELS
                    name = self.free(lambda: f"{brand} {rng.choice(models)} {rng.choice(models)}")
            elif r < 0.7:  # a common word, as many cars and phones are named: "Falcon", "Falcon GT"
                name = self.title_words.draw(rng)
                if rng.random() < 0.5:
                    name += " " + rng.choice(V.PRODUCT_MODELS)
            else:
                name = f"{self.forge.word(V.STEM_SUFFIXES)} {rng.choice(V.PRODUCT_MODELS)}"
            product = self.new("product", name, pools=("work",))
            product.add("P176", company)
            y = rng.randint(max(company.attrs["y"], 1900), 2023)
            product.attrs.update(ptype=ptype, aptype=_article(ptype), y=y, y2=min(2023, y + rng.randint(2, 20)))
            company.attrs["products"].append(product)

    def build_landmarks(self) -> None:
        rng = self.rng
        cities = self.pool("city")
        for i in range(140):
            city = cities.pick(rng)
            r = rng.random()  # named after the city ("Ostrelin Cathedral"), generic ("Old Bridge"), invented
            if i % 5 == 4:
                etype_name, etype = rng.choice(V.EVENT_TYPES)
                name, named_after = self.place_name(city, etype_name, r, 0.35)
                e = self.new("event", name, boost=1.5)
                e.attrs.update(etype=etype, y=rng.randint(1950, 2020), named_after=named_after)
            else:
                ltype = "Museum" if i == 0 else rng.choice(V.LANDMARK_TYPES)  # one museum at least
                if ltype == "Stadium":  # the home ground of a club, in the club's city
                    home = self.pool("club").pick(rng)
                    city = home.object("P159")
                name, named_after = self.place_name(city, ltype, r, 0.2)
                if ltype == "Stadium":
                    home.attrs.setdefault("landmark", name)
                e = self.new("landmark", name, boost=1.5, pools=("museum",) if ltype == "Museum" else ())
                e.attrs.update(ltype=ltype.lower(), altype=_article(ltype), y=rng.randint(1100, 2015),
                               named_after=named_after)
                if ltype in ("Stadium", "Tower", "Palace", "Castle", "Opera House") and rng.random() < 0.5:
                    e.add("P127", self.pool(rng.choice(("company", "club", "business"))).pick(rng))
                    e.attrs["yo"] = rng.randint(max(e.attrs["y"], 1900), 2023)
            e.add("P276", city)
            e.add("P17", city.attrs["home"])
            e.attrs.update(home=city.attrs["home"])

    def place_name(self, city: Entity, kind: str, r: float, p_city: float) -> tuple[str, Entity | None]:
        """The name of a landmark or event of ``kind`` in ``city`` and the city it is named after:
        the city's ("Ostrelin Cathedral", share ``p_city``), generic ("Old Bridge") or invented."""
        name = f"{city.name} {kind}"
        if r < p_city and not self.clash(name, city):
            return name, city
        if r < p_city + 0.45:
            return f"{self.generic.draw(self.rng)} {kind}", None
        return self.named("{w} " + kind)[0], None

    def questions(self, templates: Mapping[str, str], per_relation: int
                  ) -> tuple[list[Part], dict[str, tuple[Entity, str]]]:
        rng = self.rng
        used: set[int] = set()  # membership only
        parts: list[Part] = []
        subjects: dict[str, tuple[Entity, str]] = {}
        answerable: dict[str, list[Entity]] = {relation: [] for relation in templates}
        for e in self.entities:
            for relation in e.facts:
                if relation in answerable and e.answerable(relation):
                    answerable[relation].append(e)
        for relation, template in templates.items():
            candidates = [e for e in answerable[relation] if e.id not in used]
            rng.shuffle(candidates)
            questions: list[Question] = []
            asked: set[str] = set()  # question texts of this part (membership only)
            for e in candidates:
                if len(questions) == per_relation:
                    break
                text = template.replace("[X]", e.name)
                if text in asked:  # two subjects of the same name: ask about one of them
                    continue
                asked.add(text)
                used.add(e.id)
                qid = f"{relation}-{len(questions) + 1:04d}"
                questions.append(Question(id=qid, text=text, answers=answers_of(e.facts[relation])))
                subjects[qid] = (e, relation)
            parts.append(Part(name=relation, questions=tuple(questions)))
        return parts, subjects

    def split_questions(self, templates: Mapping[str, str], asked: Mapping[str, tuple[Entity, str]],
                        parts: Sequence[Part], relations: Sequence[str] = TRAIN_RELATIONS,
                        splits: Sequence[tuple[str, int]] = SPLITS
                        ) -> tuple[dict[str, tuple[Part, ...]], dict[str, tuple[Entity, str]]]:
        """Questions of the training splits, drawn after the test questions (``parts``, whose
        subjects are ``asked``) so that the random stream that made them is untouched.

        Each split asks about ``relations``, up to its size per relation, subjects no earlier split
        (the test questions included) asked about; within a split one subject may be asked about
        for several relations. A question text an earlier split asked (a namesake's) is skipped.
        """
        rng = self.rng
        taken = {e.id for e, _relation in asked.values()}  # membership only
        texts = {q.text for part in parts for q in part.questions}  # membership only
        out: dict[str, tuple[Part, ...]] = {}
        subjects: dict[str, tuple[Entity, str]] = {}
        answerable: dict[str, list[Entity]] = {relation: [] for relation in relations}
        for e in self.entities:
            for relation in e.facts:
                if relation in answerable and e.answerable(relation):
                    answerable[relation].append(e)
        for split, per_relation in splits:
            split_parts: list[Part] = []
            split_taken: set[int] = set()
            split_texts: set[str] = set()
            for relation in relations:
                template = templates[relation]
                candidates = [e for e in answerable[relation] if e.id not in taken]
                rng.shuffle(candidates)
                questions: list[Question] = []
                for e in candidates:
                    if len(questions) == per_relation:
                        break
                    text = template.replace("[X]", e.name)
                    if text in texts or text in split_texts:
                        continue
                    split_texts.add(text)
                    split_taken.add(e.id)
                    qid = f"{relation}-{split}-{len(questions) + 1:04d}"
                    questions.append(Question(id=qid, text=text, answers=answers_of(e.facts[relation])))
                    subjects[qid] = (e, relation)
                split_parts.append(Part(name=relation, questions=tuple(questions)))
            taken |= split_taken
            texts |= split_texts
            out[split] = tuple(split_parts)
        return out, subjects


def generate_world(seed: int = DEFAULT_SEED, *, questions_per_relation: int = QUESTIONS_PER_RELATION) -> World:
    """Generate the demo world from ``seed`` (deterministic)."""
    templates = load_templates()
    builder = _Builder(seed)
    builder.build()
    passages = builder.passages()
    parts, subjects = builder.questions(templates, questions_per_relation)
    # drawn last: the test questions above come out of the random stream exactly as before
    splits, split_subjects = builder.split_questions(templates, subjects, parts)
    return World(seed=seed, entities=tuple(builder.entities), passages=tuple(passages),
                 parts=tuple(parts), subjects=subjects, templates=templates,
                 splits=splits, split_subjects=split_subjects)
