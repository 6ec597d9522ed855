"""A query's vector with the names in it turned down: what it asks, not only whom it asks about (issue 28).

A name dominates a short text's embedding. "How should I get in touch with
Bruno?" is nearer "Bruno lives in Montreal." than Bruno's contact preference,
and a LoCoMo question naming a speaker is near every turn that speaker wrote
("Caroline: ..."). So a query that names someone is searched with

    normalize((1 - w) * embed(query) + w * embed(query without its names))

where ``w`` is ``name_free_query_weight``. A cosine with that vector is,
up to one constant per query, ``(1 - w)`` times the cosine with the query plus
``w`` times the cosine with its name-free text: the names still count (they
tell people apart, and the keyword leg matches them exactly), the rest of
the question counts more. There is one vector per record as before, no schema
change, and one more query embedding, batched with the query's, only when
the query names someone; the embedding cache keys each of the two texts.

Which words are names is :func:`funes.memory.relevance.named_terms`' rule:
capitalised, not all capitals, not first in a sentence, not a month or a
weekday. Every capitalised occurrence of such a word goes (a name first in
the question as well, once it is written again further on), with its
possessive ("Ana's", "James'"). A name only at the very start ("Ana's seat?")
is not recognised, as ``named_terms`` does not; none of LoCoMo's 1,536
questions or the agent set's 443 starts with a person's name. Lower-case occurrences stay ("rose"
of "Rose").

The default is 0 (the query's own vector). At 0.3 LoCoMo's own-turn R@10
rises from 0.694 to 0.726 and the agent-memory set's top-1 from 0.912 to
0.935, SciFact unchanged; but the relevance constants were fitted on plain
cosines, so a named query's answers show lower relevance, and refitted
leaving one data set out, the agent set's off-topic abstention drops
(docs/benchmarks.md, "Fourth pass"). Relevance models reading the plain
and the name-free cosine as separate signals, or fitted with named and
unnamed queries balanced, do not remove that drop, and paired bootstraps
of the fit show it is not noise ("Sixth pass", ``bench/quality_names.py``).

May import: ``funes.errors``, ``funes.models``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInput
from .relevance import named_terms
from .turns import blend

if TYPE_CHECKING:
    from .embedding import Embedding

# A word with the possessive that may follow it: "Ana's", "Ana’s", "James'".
_WORD = re.compile(r"\w+(?:['’]s\b|(?<=s)['’](?!\w))?", re.UNICODE)
_SPACES = re.compile(r"\s+")
_BEFORE_STOP = re.compile(r"\s+([,.;:?!])")


def name_free(query: str) -> str | None:
    """The query without the names it contains, or None when it names no one (or is nothing but names)."""
    names = named_terms(query)
    if not names:
        return None

    def dropped(match: re.Match[str]) -> str:
        word = re.sub(r"['’]s?$", "", match.group(0))
        return "" if word[:1].isupper() and word.lower() in names else match.group(0)

    out = _BEFORE_STOP.sub(r"\1", _SPACES.sub(" ", _WORD.sub(dropped, query))).strip()
    return out if any(c.isalnum() for c in out) else None


def names_text(query: str, names: set[str] | None = None) -> str:
    """The names a query is asked about, alone and in its own spelling ("Bruno", "Ana James"): what a record
    that is only about them is near (:mod:`funes.memory.relevance`'s ``name_excess``)."""
    names = named_terms(query) if names is None else names
    found: dict[str, None] = {}
    for match in _WORD.finditer(query):
        word = re.sub(r"['’]s?$", "", match.group(0))
        if word[:1].isupper() and word.lower() in names:
            found[word] = None
    return " ".join(found)


def query_vector(embedding: Embedding, query: str, weight: float) -> np.ndarray:
    """The unit vector a search uses for ``query``: its own, mixed with its name-free text's by ``weight``."""
    if not 0.0 <= weight <= 1.0:
        raise InvalidInput(
            f"name_free_query_weight must be between 0 and 1, not {weight:g}.",
            hint="Set it with `funes config set name_free_query_weight 0.3` (0 turns the mixing off).",
        )
    other = name_free(query) if weight > 0 else None
    if other is None:
        return embedding.embed_query(query)
    texts = (embedding.parts(query), embedding.parts(other))
    vectors = embedding.embed([*texts[0], *texts[1]], query=True)  # one call (and one cache read) for both
    own, free = vectors[: len(texts[0])].mean(axis=0), vectors[len(texts[0]) :].mean(axis=0)
    return blend(unit(own), unit(free), 1.0 - weight)  # the unit vector of (1 - w) own + w free


def unit(vector: np.ndarray) -> np.ndarray:
    """The vector scaled to length 1 (a zero vector as it is)."""
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


__all__ = ["name_free", "names_text", "query_vector"]
