"""Rendering the demo world's entities as Wikipedia-like article text: fact sentences in several
wordings, hard distractors naming peers, filler, and pronoun or surname references in long
articles. A mixin of the world builder (:mod:`.world`), which owns the state it reads."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.api import Passage

from . import text as T
from . import values as V
from .entities import Entity, answers_of, contains, name_of
from .names import fold

#: Words per passage (DPR's split).
PASSAGE_WORDS = 100
#: Article length by global fame rank r (1-based): about ``LONGEST / r ** LENGTH_DECAY`` passages.
LONGEST = 110
LENGTH_DECAY = 0.62
#: Among entities with the same name, the most famous keeps the bare title ("primary topic") when
#: it is this many times as famous as the next.
PRIMARY_TOPIC = 4.0
#: Share of fact sentences that also name a peer (a hard distractor for the peer's questions).
P_PEER = 0.6


def _article(word: str) -> str:
    return "an" if fold(word)[:1] in ("a", "e", "i", "o", "u") else "a"


def _join(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class _Template:
    """A template with its fields and the relations whose objects it names (``{P19}``...)."""

    __slots__ = ("text", "fields", "relations")
    _cache: dict[str, _Template] = {}

    def __init__(self, text: str):
        self.text = text
        self.fields = T.fields(text)
        self.relations = tuple(f for f in self.fields if f[0] == "P" and f[1:].isdigit())

    @classmethod
    def get(cls, text: str) -> _Template:
        template = cls._cache.get(text)
        if template is None:
            template = cls._cache[text] = cls(text)
        return template


class ArticleWriter:
    """Article text for the builder's entities (``self`` is the world builder)."""


    def resolve(self, f: str, e: Entity, ctx: dict[str, Any]) -> str:
        """The value of field ``f`` in a sentence about ``e``: from ``ctx``, ``e``'s attributes, a
        list of options, a handler, or ``e``'s facts, in that order."""
        if f in ctx:
            return ctx[f]
        handler = self.direct.get(f)
        if handler is not None:  # a handler no attribute or option overrides
            return handler(e, ctx)
        value = e.attrs.get(f)
        if value is not None:
            return value.name if isinstance(value, Entity) else str(value)
        options = self.options.get(f)
        if options is not None:
            return self.rng.choice(options)
        handler = self.handlers.get(f)
        if handler is not None:
            return handler(e, ctx)
        if f[0] == "P" and f[1:].isdigit():
            return _join([name_of(o) for o in e.facts[f]])
        if f[0] == "a" and f[1:].isdigit():
            return _article(name_of(e.facts["P" + f[1:]][0]))
        raise KeyError(f"no value for field {f!r} of {e!r}")

    def _handlers(self) -> dict[str, Callable[[Entity, dict[str, Any]], str]]:
        rng = self.rng

        def ref(f: str):  # {S}, {s}, {P}: name, surname or pronoun; "the company"
            def resolve(e: Entity, ctx: dict[str, Any]) -> str:
                r = rng.random()
                if e.kind == "person":
                    if r >= 0.4:
                        return {"S": ("She", "He"), "s": ("she", "he"), "P": ("Her", "His")}[f][
                            e.attrs["gender"] == "m"]
                    name = e.name if r < 0.12 else e.attrs["surname"]
                elif r < 0.25:
                    name = e.name
                elif r < 0.7:
                    return {"S": "It", "s": "it", "P": "Its"}[f]
                else:
                    name = ("The " if f != "s" else "the ") + kw(e, ctx)
                if f == "P":
                    return name + ("'" if name.endswith("s") else "'s")
                return name
            return resolve

        def mention(e: Entity, ctx: dict[str, Any]) -> str:  # {m}: never a pronoun
            if e.kind == "person":
                return e.name if rng.random() < 0.5 else e.attrs["surname"]
            return e.name if rng.random() < 0.6 else "the " + kw(e, ctx)

        def kw(e: Entity, ctx: dict[str, Any]) -> str:
            a = e.attrs
            return (a.get("ptype") or a.get("ltype") or a.get("etype") or a.get("btype") or a.get("rtype")
                    or a.get("town") or V.KIND_WORDS[e.kind])

        def tense(now: str, then: str):
            return lambda e, ctx: then if e.kind == "person" and e.attrs["y2"] else now

        def year(f: str):  # a year in the subject's life or existence, or its decade
            def resolve(e: Entity, ctx: dict[str, Any]) -> str:
                a = e.attrs
                if e.kind == "person":
                    lo, hi = a["y"] + (25 if f == "ya" else 18), a["y2"] or 2023
                else:
                    lo, hi = max(a.get("y", 1900), 1900), 2023
                value = rng.randint(min(lo, hi), hi)
                if f == "decade":
                    return str(min(value // 10 * 10, 2010))
                ctx["_year"] = value
                return str(value)
            return resolve

        def other(pool: str):
            return lambda e, ctx: self.other(e, pool, ctx).name

        def pick(pool: str):
            return lambda e, ctx: self.pool(pool).pick(rng, mention=True).name

        def listing(pool: str, lo: int, hi: int):  # "A, B, C and D": anyone, famous or not
            def resolve(e: Entity, ctx: dict[str, Any]) -> str:
                members = self.pool(pool).members
                chosen = [rng.choice(members) for _ in range(rng.randint(lo, hi))]
                return _join(list(dict.fromkeys(o.name for o in chosen if o is not e)) or [members[0].name])
            return resolve

        def article_of(field: str):
            return lambda e, ctx: _article(self.resolve(field, e, ctx))

        return {
            "n": lambda e, ctx: e.name,
            "S": ref("S"), "s": ref("s"), "P": ref("P"), "m": mention, "kw": kw,
            "p": lambda e, ctx: ("her" if e.attrs["gender"] == "f" else "his") if e.kind == "person" else "its",
            "pron": lambda e, ctx: ("she" if e.attrs["gender"] == "f" else "he") if e.kind == "person" else "it",
            "is": tense("is", "was"), "has": tense("has", "had"), "plays": tense("plays", "played"),
            "anat": lambda e, ctx: _article(e.attrs["nat"]) + " " + e.attrs["nat"],
            "artype": article_of("rtype"), "atown": article_of("town"), "aind": article_of("industry"),
            "bcountry": lambda e, ctx: e.attrs["home"].name,
            "c1": other("country"), "c2": other("country"), "country": other("country"),
            "country2": other("country"), "person": other("person"), "person2": other("person"),
            "city": other("city"), "city2": other("city"), "company": other("company"),
            "university": other("university"), "event": other("event"), "work": other("work"),
            "publisher": pick("publishing"), "museum": pick("museum"),
            "people": listing("person", 3, 6), "people2": listing("person", 2, 4),
            "works": listing("work", 2, 4),
            "tw": lambda e, ctx: self.title_words.draw(rng).lower(),
            "tw2": lambda e, ctx: self.title_words.draw(rng).lower(),
            "gw": lambda e, ctx: self.generic.draw(rng),
            "fy": year("fy"), "ya": year("ya"), "decade": year("decade"),
            "fy2": lambda e, ctx: str(min(2023, ctx.get("_year", 2000) + rng.randint(1, 12))),
            "yg": lambda e, ctx: str(e.attrs["y"] + rng.randint(21, 26)),
            "yw": lambda e, ctx: str(e.facts["P800"][0].attrs["y"]),
            "age": lambda e, ctx: str(e.attrs["y2"] - e.attrs["y"]),
            "lang": lambda e, ctx: e.attrs["language"].name,
            "k": lambda e, ctx: str(rng.randint(2, 95)),
            "k3": lambda e, ctx: f"{rng.randint(0, 999):03d}",
        }

    def other(self, e: Entity, pool: str, ctx: dict[str, Any]) -> Entity:
        """A popular entity of ``pool`` other than ``e`` and those already named in this sentence."""
        taken = ctx.setdefault("_taken", [e])
        if pool == "country" and "home" in e.attrs:
            taken.append(e.attrs["home"])
        candidates = self.pool(pool)
        for _ in range(20):
            chosen = candidates.pick(self.rng, mention=True)
            if chosen not in taken:
                break
        taken.append(chosen)
        return chosen

    def sentence(self, e: Entity, text: str, ctx: dict[str, Any]) -> str:
        """Render ``text`` about ``e``."""
        template = _Template.get(text)
        return text.format_map({f: self.resolve(f, e, ctx) for f in template.fields})

    def fact_sentence(self, e: Entity, relation: str) -> str:
        """A sentence stating ``e``'s ``relation`` fact, now and then naming a peer of ``e``."""
        rng = self.rng
        ctx = self.fact_context(e, relation)
        peers = T.PEER_FACTS.get(relation)
        if peers and rng.random() < P_PEER:
            peer = rng.choice(self.pool(e.kind).members)  # any peer, famous or not
            if peer.name != e.name:
                ctx["peer"] = peer.name
                return self.sentence(e, rng.choice(peers), ctx)
        return self.sentence(e, rng.choice(T.KIND_FACTS.get((relation, e.kind)) or T.FACTS[relation]), ctx)

    def fact_context(self, e: Entity, relation: str) -> dict[str, Any]:
        objects = e.facts[relation]
        obj = objects[0]
        ctx: dict[str, Any] = {"rel": relation, "o": _join([name_of(o) for o in objects])}
        if isinstance(obj, Entity):
            country = obj.attrs.get("home")
            if country is not None:
                ctx["oc"] = country.name
            if obj.kind == "person":
                occupation = obj.object("P106")
                ctx.update(oocc=occupation, aoocc=_article(occupation))
        else:
            ctx["ao"] = _article(obj)
            ctx["ao_cap"] = ctx["ao"].capitalize()
        if relation == "P40":
            if len(objects) == 1:
                ctx["kids"] = "a daughter" if obj.attrs["gender"] == "f" else "a son"
            else:
                ctx["kids"] = V.NUMBER_WORDS[len(objects)] + " children"
            ctx["pw"] = "mother" if e.attrs["gender"] == "f" else "father"
        return ctx

    def lead_key(self, e: Entity) -> str:
        if e.kind == "person":
            cat, dead = e.attrs["cat"], bool(e.attrs["y2"])
            if cat == "athlete":
                return "athlete_dead" if dead else "athlete"
            if cat == "musician" and not dead:
                return "musician"
            return "person_dead" if dead else "person_alive"
        if e.kind == "city" and e.attrs["capital"]:
            return "capital"
        return e.kind

    def write(self, e: Entity, n_passages: int) -> list[str]:
        """The sentences of ``e``'s article, about ``n_passages`` passages long.

        The lead comes first, then the facts; in a long article most facts are spread over the
        body instead, among sentences that mostly call the subject "she", "it" or by surname.
        """
        rng = self.rng
        leads = [t for t in T.LEADS[self.lead_key(e)]
                 if all(r in e.facts for r in _Template.get(t).relations)]
        lead = rng.choice(leads)
        out = [self.sentence(e, lead, {})]
        covered = _Template.get(lead).relations
        late: list[str] = []
        for relation in e.facts:
            if relation in covered:
                continue
            sentence = self.fact_sentence(e, relation)
            (late if n_passages > 1 and rng.random() < 0.7 else out).append(sentence)
        optional = [(t, dict(v)) for t, v in e.attrs.get("notes", ())]
        if e.kind == "person":
            scholar = e.attrs["cat"] in ("writer", "scientist", "artist", "politician")
            kind_extras = T.EXTRAS["scholar" if scholar else "person"]
        else:
            kind_extras = T.EXTRAS[e.kind]
        if e.kind == "club" and "landmark" not in e.attrs:
            kind_extras = ()
        optional += [(t, {}) for t in rng.sample(kind_extras, len(kind_extras))]
        if e.kind == "company" and e.attrs["products"]:
            names = [p.name for p in e.attrs["products"][:3]]
            optional.append(("Its products include the {plist}.", {"plist": _join(names)}))
        group = T.FILLERS[V.FILLER_GROUP[e.kind]]
        words = sum(len(s.split()) for s in out)
        if n_passages <= 1:  # fill one passage to between about half and all of its 100 words
            limit = rng.randint(45, PASSAGE_WORDS)
            for text, ctx in optional + [(rng.choice(group), {}) for _ in range(rng.randint(0, 3))]:
                s = self.sentence(e, text, ctx)
                n = len(s.split())
                if words + n <= limit:
                    out.append(s)
                    words += n
            return out
        target = n_passages * PASSAGE_WORDS - rng.randint(0, 60)
        words += sum(len(s.split()) for s in late)
        body = [self.sentence(e, text, ctx) for text, ctx in optional]
        words += sum(len(s.split()) for s in body)
        fillers = self.fillers(group)
        while words < target:
            s = self.sentence(e, next(fillers), {})
            body.append(s)
            words += len(s.split())
        for s in late:
            body.insert(rng.randint(0, len(body)), s)
        out.extend(body)
        return out

    def fillers(self, group: Sequence[str]):
        """Endless filler templates from ``group``, each used once before any repeats."""
        templates = list(group)
        while True:
            self.rng.shuffle(templates)
            yield from templates

    def qualifiers(self, e: Entity) -> list[str]:
        """Disambiguators for ``e``'s title, the plainest first ("painter", "painter, born 1957")."""
        a = e.attrs
        if e.kind == "person":
            occupation = e.object("P106")
            return [occupation, f"{occupation}, born {a['y']}", f"{a['nat']} {occupation}, born {a['y']}",
                    f"{occupation}, born {a['d']} {a['y']}"]
        if e.kind == "city":
            return [e.object("P17").name, a["region"].name]
        if e.kind in ("company", "label", "club", "university", "landmark", "event"):
            place = a.get("ucity") or (e.facts.get("P159") or e.facts.get("P276"))[0]
            country = a["home"].name
            return [country, place.name, f"{place.name}, {country}", f"{country}, {a['y']}"]
        word = (a.get("btype") or a.get("medium") or a.get("ptype") or a.get("ltype") or a.get("etype")
                or V.KIND_WORDS[e.kind])
        out = [word]
        creator = a.get("creator") or (e.facts.get("P176") or [None])[0]
        if creator is not None:
            out.append(f"{creator.name} {word}")
        if "y" in a:
            out.append(f"{a['y']} {word}")
        home = a.get("home")
        if home is not None:
            out.append(f"{home.name} {word}")
        return out

    def disambiguate(self) -> None:
        """Wikipedia-style titles for entities that share a name: the primary topic (far more famous
        than the others) keeps the bare name, the others get the plainest qualifier that is free."""
        titles = set(self.names)  # folded titles in use
        for key, group in self.names.items():
            if len(group) < 2:
                continue
            ranked = sorted(group, key=lambda e: (-e.fame, e.id))
            primary = ranked[0].fame >= PRIMARY_TOPIC * ranked[1].fame
            rest = ranked[1:] if primary else ranked
            if not primary:
                titles.discard(key)
            options = {e.id: self.qualifiers(e) for e in rest}
            for level in range(max(len(q) for q in options.values())):
                counts: dict[str, int] = {}
                for e in rest:
                    if e.title == e.name and level < len(options[e.id]):
                        q = fold(options[e.id][level])
                        counts[q] = counts.get(q, 0) + 1
                for e in rest:
                    if e.title != e.name or level >= len(options[e.id]):
                        continue
                    q = options[e.id][level]
                    title = f"{e.name}, {q}" if e.kind == "city" else f"{e.name} ({q})"
                    if counts[fold(q)] == 1 and fold(title) not in titles:
                        e.title = title
                        titles.add(fold(title))
            for e in rest:  # nothing free (practically never): number them
                n = 2
                while e.title == e.name:
                    title = f"{e.name} ({options[e.id][0]} {n})"
                    if fold(title) not in titles:
                        e.title = title
                        titles.add(fold(title))
                    n += 1

    def passages(self) -> list[Passage]:
        rng = self.rng
        ranked = sorted(self.entities, key=lambda e: (-e.fame, e.id))
        length = {e.id: max(1, round(LONGEST / (rank + 1) ** LENGTH_DECAY)) for rank, e in enumerate(ranked)}
        order = list(self.entities)
        rng.shuffle(order)
        passages: list[Passage] = []
        for e in order:
            words = " ".join(self.write(e, length[e.id])).split()
            texts = [" ".join(words[i:i + PASSAGE_WORDS]) for i in range(0, len(words), PASSAGE_WORDS)]
            first = len(passages) + 1
            passages.extend(Passage(id=str(first + i), title=e.title, text=text) for i, text in enumerate(texts))
            e.passage_ids = tuple(str(first + i) for i in range(len(texts)))
            lowered = [text.lower() for text in texts]
            for relation, objects in e.facts.items():
                answers = [a.lower() for a in answers_of(objects)]
                e.found[relation] = tuple(i for i, text in enumerate(lowered)
                                          if any(contains(text, a) for a in answers))
        return passages

    # ------------------------------------------------------------------ questions
