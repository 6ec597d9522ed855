"""An agent-memory set for bench/quality.py: stores of 3 to 300 short facts, preferences and decisions.

Written for issue 28 and kept here (it is small and ours): what an assistant
or an agent remembers about people and a project, asked back in other words
("Where does Ana like to sit?" of "Ana always books a window seat."), plus
off-topic questions that nothing in the store answers. Each store is one
tenant; a store of ``n`` memories holds the first people's facts and the
first decisions, so the answer must be told apart from many memories of the
same kind about other people.

Nothing here is tuned to Funes: facts and questions were written as a user
would write them, with the question avoiding the fact's own key words where
a person naturally would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PEOPLE = (
    "Ana", "Bruno", "Chloe", "Dmitri", "Esther", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Kemi", "Lucas", "Mei", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tomas",
)  # fmt: skip

# (fact template, question template, values, one per person in order): the question paraphrases the fact.
ATTRIBUTES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "{p} always books a {v} seat.",
        "Where does {p} like to sit?",
        ("window", "aisle", "front-row", "quiet-carriage", "exit-row"),
    ),
    ("{p} is {v}.", "What diet does {p} follow?", ("vegetarian", "vegan", "pescatarian", "on a gluten-free diet")),
    (
        "{p} prefers to be contacted by {v}, never by phone.",
        "How should I get in touch with {p}?",
        ("email", "text message", "Slack", "Signal"),
    ),
    ("{p}'s birthday is on {v}.", "When should we celebrate {p}'s birthday?", ("March 3", "May 21", "January 9", "October 30")),
    (
        "{p} is allergic to {v}.",
        "Does {p} have any food allergies?",
        ("peanuts", "shellfish", "eggs", "sesame", "kiwi"),
    ),
    ("{p} drives a {v}.", "What car does {p} have?", ("blue Toyota Corolla", "red Fiat 500", "grey Tesla Model 3", "green Volvo estate")),
    (
        "{p} works as a {v}.",
        "What is {p}'s job?",
        ("nurse at the city hospital", "high-school maths teacher", "tax accountant", "civil engineer", "pastry chef"),
    ),
    ("{p} lives in {v}.", "Which city is {p}'s home?", ("Lisbon", "Montreal", "Osaka", "Nairobi", "Krakow", "Porto Alegre")),
    (
        "{p} has {v}.",
        "Does {p} have any pets?",
        ("two cats named Miso and Tofu", "an old beagle called Rex", "a parrot that swears", "three goldfish"),
    ),
    ("{p} plays the {v} in a community orchestra.", "Which instrument does {p} play?", ("cello", "oboe", "trumpet", "viola")),
    ("{p} speaks {v}.", "Which languages does {p} know?", ("Portuguese and French", "Japanese", "Swahili and English", "Polish and German")),
    (
        "{p} {v} every morning before work.",
        "How does {p} exercise?",
        ("runs five kilometres", "swims forty lengths", "cycles to the gym", "does an hour of yoga"),
    ),
    ("{p} prefers {v}.", "What should I offer {p} to drink?", ("green tea to coffee", "sparkling water, no alcohol", "a flat white with oat milk")),
    (
        "{p} is afraid of flying and takes the {v} whenever possible.",
        "Does {p} like flying?",
        ("train", "night bus", "ferry"),
    ),
    (
        "{p} wants meetings {v}.",
        "When is a good time to schedule a call with {p}?",
        ("only in the morning", "after 2 pm", "on Tuesdays and Thursdays", "never on Fridays"),
    ),
)  # fmt: skip

# Project decisions: (memory, paraphrased question).
DECISIONS: tuple[tuple[str, str], ...] = (
    ("We decided to use PostgreSQL for the billing service instead of MongoDB.", "Which database did we pick for invoicing?"),
    ("Releases ship on Tuesdays; nothing is deployed on Fridays.", "On which weekday are we allowed to deploy?"),
    ("The team agreed to drop the legacy SOAP API at the end of the quarter.", "What is happening to the old XML web service?"),
    ("Code reviews need two approvals before merging to main.", "How many people must sign off on a pull request?"),
    ("We chose Stripe as the payment provider after comparing it with Adyen.", "Who processes our card payments?"),
    ("The office moves to the fourth floor of the Harbour building in June.", "Where will we be working after the move?"),
    ("Customer data must stay in EU data centres.", "Can we store client records in the US?"),
    ("The mobile app will be written in Flutter, not React Native.", "What framework is the phone app built with?"),
    ("Acme Corp is on probation after the failed supplier audit.", "Which vendors are on probation after the audit?"),
    ("The design system uses Inter as its only typeface.", "What font do we use in the UI?"),
    ("On-call rotations last one week and swap on Mondays.", "How long is a pager shift?"),
    ("We budgeted 40,000 euros for the marketing campaign.", "How much money can marketing spend?"),
    ("The quarterly planning offsite will be in Sintra.", "Where is the next planning retreat?"),
    ("Interns get a MacBook Air, engineers a MacBook Pro.", "What laptop does a new intern receive?"),
    ("Logs are kept for 90 days and then deleted.", "How long do we retain log files?"),
)  # fmt: skip

# Questions no store answers: general knowledge, chores, and people the stores never mention.
OFF_TOPIC: tuple[str, ...] = (
    "What is the capital of Australia?",
    "How do I reset my home router?",
    "Who won the football World Cup in 1998?",
    "What's a good recipe for banana bread?",
    "How many moons does Jupiter have?",
    "Explain how photosynthesis works.",
    "What is the boiling point of water at high altitude?",
    "Recommend a science fiction novel.",
    "How do I change a flat bicycle tyre?",
    "What is the square root of 1764?",
    "When did the Berlin Wall fall?",
    "What's the weather usually like in Reykjavik in winter?",
    "How do vaccines train the immune system?",
    "Translate 'good morning' into Italian.",
    "What are the rules of cricket?",
    "Where does Zoltan like to sit?",
    "What is Wilhelmina's favourite film?",
    "Which car does Bartholomew drive?",
    "How tall is Mount Kilimanjaro?",
    "Who painted the Sistine Chapel ceiling?",
)

# People no store mentions, asked the stores' own questions ("What diet does Yusuf follow?"): the question
# matches a memory about someone else word for word except the name, and that memory does not answer it.
UNSEEN_PEOPLE = ("Yusuf", "Zofia", "Viktor", "Wanda", "Xiomara")

SIZES = (3, 10, 30, 100, 300)


@dataclass
class AgentStore:
    """One store: its memories (text, type) with the question each answers, and off-topic questions."""

    tenant: str
    memories: list[tuple[str, str]]
    questions: list[tuple[str, int]]  # (question, index of the memory that answers it)
    off_topic: list[str] = field(default_factory=list)
    record_to_unit: dict[str, str] = field(default_factory=dict)


def facts() -> list[tuple[str, str, str]]:
    """Every (memory, question, type) pair: decisions first, then each person's facts in turn."""
    out = [(m, q, "decision") for m, q in DECISIONS]
    for n, person in enumerate(PEOPLE):
        for fact, question, values in ATTRIBUTES:
            kind = "preference" if ("prefer" in fact or "likes" in fact or "wants" in fact) else "fact"
            out.append((fact.format(p=person, v=values[n % len(values)]), question.format(p=person), kind))
    return out


def stores(sizes: tuple[int, ...] = SIZES) -> list[AgentStore]:
    """Stores of the given sizes, built from the same pool (3 memories: Ana's seat, diet and contact)."""
    pool = facts()
    ana = [i for i, (m, _, _) in enumerate(pool) if m.startswith("Ana ")]
    out = []
    for size in sizes:
        # The smallest stores hold one person's facts (the "three-memory store" of issue 28).
        chosen = ana[:size] if size <= len(ana) else list(range(min(size, len(pool))))
        memories = [(pool[i][0], pool[i][2]) for i in chosen]
        questions = [(pool[i][1], n) for n, i in enumerate(chosen)]
        out.append(AgentStore(f"agent-{size}", memories, questions, [*OFF_TOPIC, *unseen_questions()]))
    return out


def unseen_questions() -> list[str]:
    """The first attributes' questions about people no store mentions (off-topic: nothing answers them)."""
    return [question.format(p=p) for p, (_, question, _) in zip(UNSEEN_PEOPLE, ATTRIBUTES, strict=False)]


def ingest_agent(mem: Any, store: AgentStore) -> AgentStore:
    """The store's memories through ``remember``, each mapped to its unit id (its index)."""
    mem.embed_records([m for m, _ in store.memories])
    for n, (text, kind) in enumerate(store.memories):
        record = mem.remember(text, tenant=store.tenant, type=kind)
        store.record_to_unit[record.id] = str(n)
    return store
