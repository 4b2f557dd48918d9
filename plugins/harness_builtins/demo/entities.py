"""The demo world's entities and how their names become answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Entity:
    """A thing in the world: its kind, name, title, fame, facts and article passages."""

    __slots__ = ("id", "kind", "name", "title", "aliases", "fame", "facts", "attrs", "passage_ids", "found")

    def __init__(self, id: int, kind: str, name: str, fame: float, aliases: tuple[str, ...] = ()):
        self.id = id
        self.kind = kind
        #: what questions call it (several entities may share a name)
        self.name = name
        #: its article's title: the name, disambiguated when another entity has the same name
        self.title = name
        self.aliases = aliases
        self.fame = fame
        #: relation -> objects (an :class:`Entity` or a value string), in the order they were added
        self.facts: dict[str, list[Entity | str]] = {}
        self.attrs: dict[str, Any] = {}
        #: ids of the passages of this entity's article, in article order
        self.passage_ids: tuple[str, ...] = ()
        #: relation -> indexes (in ``passage_ids``) of the passages whose text contains an answer
        self.found: dict[str, tuple[int, ...]] = {}

    def add(self, relation: str, obj: Entity | str) -> None:
        self.facts.setdefault(relation, []).append(obj)

    def object(self, relation: str) -> Entity | str:
        return self.facts[relation][0]

    def answerable(self, relation: str) -> bool:
        """Whether the text of some passage of this entity's article contains an answer."""
        return bool(self.found.get(relation))

    def __repr__(self) -> str:
        return f"Entity({self.id}, {self.kind!r}, {self.title!r})"


def name_of(obj: Entity | str) -> str:
    return obj.name if isinstance(obj, Entity) else obj


def answers_of(objects: Sequence[Entity | str]) -> tuple[str, ...]:
    """A question's answers: each object's name and aliases."""
    out: list[str] = []
    for obj in objects:
        out.append(name_of(obj))
        if isinstance(obj, Entity):
            out.extend(obj.aliases)
    return tuple(dict.fromkeys(out))


def contains(text: str, answer: str) -> bool:
    """DPR's string match (:func:`harness.scoring.matching.has_answer`) of one answer in one passage text,
    for the generator's texts (NFC, single spaces, no control characters): lowercased, the answer
    must occur where a token boundary lies on each side, unless that side of the answer is a
    punctuation mark (a token by itself). Both arguments lowercased already."""
    if not answer:
        return True
    n = len(answer)
    open_left, open_right = not answer[0].isalnum(), not answer[-1].isalnum()
    start = text.find(answer)
    while start >= 0:
        end = start + n
        if (open_left or start == 0 or not text[start - 1].isalnum()) and \
                (open_right or end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(answer, start + 1)
    return False
