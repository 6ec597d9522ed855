"""Times named in a search query, resolved to windows against the search's reference time.

``find_dates("what did Melanie paint on October 13, 2023?", as_of)`` returns
the day of October 13, 2023 as a :class:`DateWindow`; ranking
(:mod:`funes.memory.ranking`) boosts records whose own time falls inside it, with
a soft falloff just outside. It is a boost, never a filter: a wrong parse
must not hide the answer.

It is a small regular grammar rather than a general date library. Measured
against dateparser 1.5's ``search_dates`` (the candidate on PyPI): that takes
0.8 s to import and 15 to 55 ms per query (search's whole budget is 40 ms),
reads the modal verb in "May I ask" and "I may go", "march on", "We" and "the
2022 report" as dates, and returns points, not windows ("in June" became
June 20).
This grammar imports in about 10 ms and reads a query in about 0.25 ms
(docs/benchmarks.md). It recognises (case-insensitive, English):

* absolute: ``October 13, 2023``, ``13 October 2023``, ``the 13th of
  October``, ``Oct 13``, ``2023-10-13``, ``2023-10``, ``October 2023``, ``in
  2022`` (a year only after a time word: "the 2022 report" is not a date),
  ``from 2009 to 2014``, ``summer 2021``;
* a month or season with a time word before it: ``in June``, ``last May``,
  ``this summer``, ``early March``, ``since April`` (a bare "May" or "march"
  is not a date, and neither is one followed by a verb: "this may be");
* relative: ``today``, ``yesterday``, ``last night``, ``this/last
  week|month|year|weekend``, ``last Friday``, ``on Monday``, ``two weeks
  ago``, ``a few days ago``, ``4 years back``, ``the past 3 days``;
* a span around a date: ``two weeks before August 11, 2023`` (from the
  shifted day to the anchor: the event and the day it was told about both
  fall inside), ``last weekend before April 10, 2023``, ``the last two weeks
  of August 2023``, ``the first week of May``;
* a span around an event: ``two weeks before the trip``, ``the week after
  her sister's wedding``. Only memory can date the event, so
  :func:`find_events` returns an :class:`EventShift` (the event's words and
  the shift) and the search dates the event by its best hit
  (:meth:`funes.memory.core.Core.search`), then takes :meth:`EventShift.window`.

A month or day without a year ("in June", "May 3") is resolved to the most
recent one at or before the reference time, and marked ``every_year``:
ranking may count the same month of earlier years too (imported history
older than the reference time; see ``YEARLESS_OLDER_WEIGHT`` in
:mod:`funes.memory.ranking`). Pure functions, no I/O, nothing heavy to import.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
WEEKDAYS = {
    name: n
    for n, names in enumerate(
        (
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        )
    )
    for name in names
}
# Northern-hemisphere meteorological seasons: first month and length in months.
SEASONS = {"spring": (3, 3), "summer": (6, 3), "fall": (9, 3), "autumn": (9, 3), "winter": (12, 3)}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
    "the": 1,
}

_MONTH = (
    r"(?P<{0}>january|february|march|april|may|june|july|august|september|october|november|december|"
    r"jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_DAY = r"(?P<{0}>[12][0-9]|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<{0}>(?:19|20)[0-9]{{2}})"
_NUM = (
    r"(?P<{0}>[0-9]{{1,3}}|an?|the|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"(?:a )?couple(?: of)?|(?:a )?few|several)"
)
_UNIT = r"(?P<{0}>day|week|month|year|weekend)s?"
# Words that make a following month, season or year a time ("in May", "last summer", "since 2021").
_LEAD = (
    r"(?P<lead>in|during|since|until|till|by|before|after|from|through|throughout|around|of|"
    r"early|mid|late|last|this|past|previous|the end of|the start of|the beginning of)"
)

# A full date: month-day(-year), day-month(-year), ISO day or month.
_ABSOLUTE = re.compile(
    "|".join(
        (
            rf"\b{_MONTH.format('m1')}\s+{_DAY.format('d1')}(?:\s*,?\s*{_YEAR.format('y1')})?(?![0-9:])",
            rf"\b(?:the\s+)?{_DAY.format('d2')}(?:\s+of)?\s+{_MONTH.format('m2')}(?:\s*,?\s*{_YEAR.format('y2')})?\b",
            rf"\b{_YEAR.format('y3')}-(?P<m3>0[1-9]|1[0-2])(?:-(?P<d3>0[1-9]|[12][0-9]|3[01]))?\b",
            rf"\b{_MONTH.format('m4')}\s*,?\s*(?:of\s+)?{_YEAR.format('y4')}\b",
        )
    ),
    re.IGNORECASE,
)
_LED = re.compile(
    rf"\b{_LEAD}\s+(?:the\s+)?(?:(?P<season>spring|summer|fall|autumn|winter)(?:\s+(?:of\s+)?{_YEAR.format('sy')})?"
    rf"|{_MONTH.format('month')}|{_YEAR.format('year')})\b(?!['’]s|-)",
    re.IGNORECASE,
)
# "from 2009 to 2014", "between 2019 and 2021": every year of the span.
_YEARS = re.compile(
    rf"\b(?:from|between)\s+{_YEAR.format('y1')}\s*(?:to|and|until|till|through|-|–)\s*{_YEAR.format('y2')}\b",
    re.IGNORECASE,
)
_SEASON_YEAR = re.compile(
    rf"\b(?P<season>spring|summer|fall|autumn|winter)\s+(?:of\s+)?{_YEAR.format('year')}\b", re.IGNORECASE
)
_AGO = re.compile(rf"\b{_NUM.format('n')}\s+{_UNIT.format('unit')}\s+(?:ago|back)\b", re.IGNORECASE)
# "the last two weeks of August 2023", "the first week of May": a part of the date that follows.
_PART = re.compile(
    rf"\b(?:the\s+)?(?P<edge>last|first|final)\s+(?:{_NUM.format('n')}\s+)?(?P<unit>day|week|month)s?\s+of\s+",
    re.IGNORECASE,
)
_SHIFT = re.compile(rf"\b{_NUM.format('n')}\s+{_UNIT.format('unit')}\s+(?P<dir>before|after)\s+", re.IGNORECASE)
_PAST = re.compile(
    rf"\b(?:the|in the|over the|during the|within the)\s+(?:past|last)\s+{_NUM.format('n')}\s+{_UNIT.format('unit')}\b",
    re.IGNORECASE,
)
_THIS_LAST = re.compile(
    r"\b(?P<which>this|last|past|previous)\s+(?P<unit>week|month|year|weekend)\b"
    r"|\b(?P<word>today|tonight|yesterday|this morning|this afternoon|this evening|last night|"
    r"the day before yesterday)\b",
    re.IGNORECASE,
)
_DATE_AFTER_WEEKDAY = re.compile(rf",?\s*(?:the\s+)?(?:{_DAY.format('d')}|{_MONTH.format('m')})\b", re.IGNORECASE)
_LINK = re.compile(r"\s+(?:before|on|as of|prior to)\s+", re.IGNORECASE)
_WEEKDAY = re.compile(
    r"\b(?P<lead>on|last|this|past|previous|since|before|after|by)\s+(?:the\s+)?"
    r"(?P<day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b(?!['’]s)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class DateWindow:
    """A span of time a query names: ``[start, end)``, the words it came from, and whether any year's counts.

    ``every_year`` marks a month or day named without a year ("in June"):
    ``start``/``end`` hold the most recent one at or before the reference
    time, and the same span in earlier years may count too.
    """

    start: datetime
    end: datetime
    phrase: str
    every_year: bool = False

    def to_dict(self) -> dict[str, str | bool]:
        """A JSON-ready dict (ISO times)."""
        return {
            "phrase": self.phrase,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "every_year": self.every_year,
        }

    def describe(self) -> str:
        """The window in a few words: ``'May 3' -> 2023-05-03..2023-05-04 (or that date in an earlier year)``."""
        fmt = "%Y-%m-%d" if self.start.time() == self.end.time() == datetime.min.time() else "%Y-%m-%d %H:%M"
        any_year = " (or that date in an earlier year)" if self.every_year else ""
        return f"{self.phrase!r} -> {self.start:{fmt}}..{self.end:{fmt}}{any_year}"


@dataclass(frozen=True)
class EventShift:
    """A span measured from an event the query names but does not date: "two weeks before the trip".

    ``event`` holds the event's words ("the trip"); :meth:`window` gives the
    span once the event has a time, shaped like a span around a date: from
    the shifted day to the event's day ("before") or from the event's day to
    the shifted one ("after").
    """

    n: int
    unit: str
    direction: str  # "before" or "after"
    event: str
    phrase: str

    def window(self, at: datetime) -> DateWindow:
        """The span, the event dated ``at`` (the time of the record that tells of it)."""
        day = _day(at if at.tzinfo else at.replace(tzinfo=UTC))
        phrase = f"{self.phrase} ({self.event}: {day:%Y-%m-%d})"
        if self.direction == "before":
            return DateWindow(_delta(day, self.n, self.unit, "before"), day + timedelta(days=1), phrase)
        return DateWindow(day, _delta(day + timedelta(days=1), self.n, self.unit, "after"), phrase)


# Where an event's words end: punctuation, or a word that starts the rest of the question.
_EVENT_END = re.compile(r"[?.!,;:()\"]")
_EVENT_STOP = frozenset(
    """and or but when while did do does was were is are am be been has have had that which who whom whose what
    where why how because so if then than until till since as i we you he she they it""".split()
)
# Words that do not name an event by themselves ("two weeks before that", "a week after it").
_EVENT_EMPTY = frozenset(
    """the a an my our your his her their its this that these those it them him me us you then now there here
    one some any last first next same""".split()
)
EVENT_WORDS = 6  # an event's name is short: "the trip", "her sister's wedding in Rome"


def find_events(query: str) -> tuple[EventShift, ...]:
    """Spans the query measures from an event it names without a date ("two weeks before the trip").

    A shift followed by a date ("two weeks before August 11, 2023") is a
    plain window of :func:`find_dates`, not an event; so is one followed by
    nothing that names an event ("two weeks before that").
    """
    found: list[EventShift] = []
    for m in _SHIFT.finditer(query):
        try:
            if _anchor_after(query, m.end(), datetime(2000, 1, 1, tzinfo=UTC)) is not None:
                continue  # a date, not an event
        except (ValueError, OverflowError):
            continue
        rest = _EVENT_END.split(query[m.end() :], maxsplit=1)[0].split()
        words: list[str] = []
        for word in rest:
            if word.lower().strip("'’") in _EVENT_STOP or len(words) == EVENT_WORDS:
                break
            words.append(word)
        if not any(w.lower() not in _EVENT_EMPTY and any(c.isalpha() for c in w) for w in words):
            continue
        event = " ".join(words)
        found.append(EventShift(_number(m["n"]), m["unit"].lower(), m["dir"].lower(), event, f"{m[0].strip()} {event}"))
    return tuple(found)


def find_dates(query: str, as_of: datetime) -> tuple[DateWindow, ...]:
    """Every time the query names, as windows resolved against ``as_of`` (aware; naive is read as UTC).

    Overlapping phrases are read once, the longest first ("two weeks before
    August 11, 2023" is one window, not two). A time out of the calendar's
    range ("999 years ago" in year 500) is no window: reading dates must
    never fail a search.
    """
    ref = as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)
    try:
        return _find(query, ref)
    except (ValueError, OverflowError):
        return ()


def _find(query: str, ref: datetime) -> tuple[DateWindow, ...]:
    found: list[tuple[int, int, DateWindow]] = []

    def add(m: re.Match[str], window: DateWindow | None, span: tuple[int, int] | None = None) -> None:
        if window is None or window.end <= window.start:
            return
        a, b = span or m.span()
        if any(a < e and s < b for s, e, _ in found):
            return
        found.append((a, b, window))

    # Longest constructs first, so their parts are not read again alone.
    for m in _YEARS.finditer(query):
        first, last = sorted((int(m["y1"]), int(m["y2"])))
        start, end = datetime(first, 1, 1, tzinfo=ref.tzinfo), datetime(last + 1, 1, 1, tzinfo=ref.tzinfo)
        add(m, DateWindow(start, end, m[0].strip()))
    for m in _PART.finditer(query):
        anchor = _anchor_after(query, m.end(), ref, months=True)
        if anchor is None:
            continue
        end_pos, base = anchor
        n, unit = _number(m["n"]) if m["n"] else 1, m["unit"].lower()
        if m["edge"].lower() == "first":
            start, end = base.start, min(base.end, _delta(base.start, n, unit, "after"))
        else:
            start, end = max(base.start, _delta(base.end, n, unit, "before")), base.end
        add(m, DateWindow(start, end, query[m.start() : end_pos].strip(), base.every_year), (m.start(), end_pos))
    for m in _SHIFT.finditer(query):
        # "two weeks before August 11, 2023": from the shifted day to the anchor day.
        anchor = _anchor_after(query, m.end(), ref)
        if anchor is None:
            continue  # "two weeks before the trip": the anchor is an event, not a time
        end_pos, base = anchor
        n, unit, direction = _number(m["n"]), m["unit"].lower(), m["dir"].lower()
        phrase = query[m.start() : end_pos].strip()
        if direction == "before":
            window = DateWindow(_delta(base.start, n, unit, "before"), base.end, phrase, base.every_year)
        else:
            window = DateWindow(base.start, _delta(base.end, n, unit, "after"), phrase, base.every_year)
        add(m, window, (m.start(), end_pos))
    for pattern, resolve in ((_THIS_LAST, _this_last), (_WEEKDAY, _weekday)):
        # "last weekend before April 10, 2023", "last Friday on 23 January, 2022": relative to that date.
        for m in pattern.finditer(query):
            link = _LINK.match(query, m.end())
            anchor = _anchor_after(query, link.end(), ref) if link else None
            if anchor is None:
                continue
            end_pos, base = anchor
            relative = resolve(m, base.start)
            phrase = query[m.start() : end_pos].strip()
            start, end = min(relative.start, base.start), max(relative.end, base.end)
            add(m, DateWindow(start, end, phrase, base.every_year), (m.start(), end_pos))
    for m in _PAST.finditer(query):
        n, unit = _number(m["n"]), m["unit"].lower()
        add(m, DateWindow(_delta(_day(ref), n, unit, "before"), _day(ref) + timedelta(days=1), m[0].strip()))
    for m in _AGO.finditer(query):
        vague = " ".join(m["n"].lower().split()) in _VAGUE
        add(m, _ago(ref, _number(m["n"]), m["unit"].lower(), m[0].strip(), vague))
    for m in _ABSOLUTE.finditer(query):
        add(m, _absolute(m, ref, query))
    for m in _SEASON_YEAR.finditer(query):
        add(m, _season(m["season"].lower(), int(m["year"]), m[0].strip()))
    for m in _LED.finditer(query):
        add(m, _led(m, ref, query))
    for m in _THIS_LAST.finditer(query):
        add(m, _this_last(m, ref))
    for m in _WEEKDAY.finditer(query):
        if not _DATE_AFTER_WEEKDAY.match(query, m.end()):  # "on Friday, May 5": the date says which Friday
            add(m, _weekday(m, ref))
    found.sort(key=lambda item: item[0])
    return tuple(w for _, _, w in found)


# -- pieces ------------------------------------------------------------------------------------
def _day(t: datetime) -> datetime:
    """Midnight of ``t``'s day."""
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, tz: object) -> datetime:
    return datetime(year, month, 1, tzinfo=tz)  # type: ignore[arg-type]


def _add_months(t: datetime, months: int) -> datetime:
    """``t`` moved by whole months (the day clamped to the month's length)."""
    index = t.year * 12 + (t.month - 1) + months
    year, month = divmod(index, 12)
    day = min(t.day, calendar.monthrange(year, month + 1)[1])
    return t.replace(year=year, month=month + 1, day=day)


def _month_window(year: int, month: int, months: int, phrase: str, tz: object, every_year: bool = False) -> DateWindow:
    start = _month_start(year, month, tz)
    return DateWindow(start, _add_months(start, months), phrase, every_year)


def _number(text: str) -> int:
    word = " ".join(text.lower().split())
    return int(word) if word.isdigit() else NUMBERS.get(word, 1)


def _delta(t: datetime, n: int, unit: str, direction: str) -> datetime:
    """``t`` moved ``n`` units back (``before``) or forward (``after``)."""
    sign = -1 if direction == "before" else 1
    if unit.startswith("month"):
        return _add_months(t, sign * n)
    if unit.startswith("year"):
        return _add_months(t, sign * 12 * n)
    days = {"day": 1, "week": 7, "weekend": 7}[unit.rstrip("s")]
    return t + timedelta(days=sign * days * n)


_VAGUE = frozenset({"a couple of", "a couple", "couple of", "a few", "few", "several"})


def _ago(ref: datetime, n: int, unit: str, phrase: str, vague: bool = False) -> DateWindow:
    """``n`` units before ``ref``: that day, or a span of one unit centred on it; "a few days ago": 1 to 2n units back."""
    unit = unit.rstrip("s")
    today = _day(ref)
    if vague:
        return DateWindow(
            _delta(today, 2 * n, unit, "before"), _delta(today, 1, unit, "before") + timedelta(days=1), phrase
        )
    point = _delta(today, n, unit, "before")
    if unit == "day":
        return DateWindow(point, point + timedelta(days=1), phrase)
    if unit == "year":
        start, end = _add_months(point, -6), _add_months(point, 6)
    else:
        half = timedelta(days=15 if unit == "month" else 4)
        start, end = point - half, point + half
    return DateWindow(start, min(end, today + timedelta(days=1)), phrase)


def _most_recent(ref: datetime, month: int, day: int | None) -> int:
    """The year of the most recent ``month`` (``day``) at or before ``ref``."""
    if day is None:
        return ref.year if month <= ref.month else ref.year - 1
    return ref.year if (month, day) <= (ref.month, ref.day) else ref.year - 1


def _absolute(m: re.Match[str], ref: datetime, query: str | None = None) -> DateWindow | None:
    phrase = m[0].strip().rstrip(",")
    if m["y3"]:
        year, month = int(m["y3"]), int(m["m3"])
        if m["d3"]:
            return _one_day(year, month, int(m["d3"]), phrase, ref, False)
        return _month_window(year, month, 1, phrase, ref.tzinfo)
    if m["m4"]:
        return _month_window(int(m["y4"]), MONTHS[m["m4"].rstrip(".").lower()], 1, phrase, ref.tzinfo)
    word = m["m1"] or m["m2"]
    month = MONTHS[word.rstrip(".").lower()]
    day = int(m["d1"] or m["d2"])
    year_text = m["y1"] or m["y2"]
    if year_text is None and query is not None and not _month_follows(word, query, m.end()):
        return None  # "may 3 people come", "the 2 march north"
    if year_text is None:
        return _one_day(_most_recent(ref, month, day), month, day, phrase, ref, True)
    return _one_day(int(year_text), month, day, phrase, ref, False)


# Month names that are also common English words ("you may", "march on"): as months, they are followed by
# the end of the question, punctuation, a number or one of these words, and a verb follows the verb.
_AMBIGUOUS = frozenset({"may", "march", "mar"})
_AFTER_MONTH = frozenset(
    """about above after against and around as at before but by during for from in into last like near next of off
    on or over since than that the this those these through to toward towards under until when where which while
    who whom whose with within without year ago i we you he she they my our your his her their""".split()
)
_NEXT_WORD = re.compile(r"\s*([A-Za-z]+|[0-9]|[^\sA-Za-z0-9]|$)")


def _month_follows(word: str, query: str, pos: int) -> bool:
    """Whether ``word`` (a month name) at ``query[:pos]`` reads as a month, judging by the next word."""
    return word.rstrip(".").lower() not in _AMBIGUOUS or _followed_by_time_end(query, pos)


def _followed_by_time_end(query: str, pos: int) -> bool:
    """Whether what follows ``pos`` ends a time phrase: the end, punctuation, a number or a linking word."""
    m = _NEXT_WORD.match(query, pos)
    nxt = m.group(1) if m else ""
    return not nxt.isalpha() or nxt.lower() in _AFTER_MONTH


def _one_day(year: int, month: int, day: int, phrase: str, ref: datetime, every_year: bool) -> DateWindow | None:
    try:
        start = datetime(year, month, day, tzinfo=ref.tzinfo)
    except ValueError:
        return None  # February 30
    return DateWindow(start, start + timedelta(days=1), phrase, every_year)


def _season(season: str, year: int, phrase: str, tz: object = UTC) -> DateWindow:
    first, months = SEASONS[season]
    # Winter 2021 is December 2021 to February 2022.
    return _month_window(year, first, months, phrase, tz)


def _led(m: re.Match[str], ref: datetime, query: str) -> DateWindow | None:
    """A month, season or year after a time word: "in June", "last summer", "since 2021", "early March"."""
    lead = m["lead"].lower()
    phrase = m[0].strip()
    tz = ref.tzinfo
    if m["year"]:
        if not _followed_by_time_end(query, m.end()):
            return None  # "of 2000 items", "in 2022 dollars": a number, or a year used as an adjective
        year = int(m["year"])
        return _onwards(
            lead, DateWindow(datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz), phrase), ref
        )
    if m["season"]:
        season = m["season"].lower()
        if m["sy"]:
            return _season(season, int(m["sy"]), phrase, tz)
        first = SEASONS[season][0]
        year = ref.year if first <= ref.month else ref.year - 1
        window = _season(season, year, phrase, tz)
        if lead in ("last", "previous", "past") and window.end > ref:
            window = _season(season, year - 1, phrase, tz)  # we are in it: "last summer" is the one before
        return DateWindow(window.start, window.end, phrase, lead not in ("last", "this", "previous", "past"))
    word = m["month"].rstrip(".").lower()
    month = MONTHS[word]
    if not _month_follows(word, query, m.end()):
        return None  # "this may be", "in march order"
    if len(word) <= 4 and word not in ("may", "june", "july") and lead in ("of", "by", "from", "around"):
        return None  # "of Dec", "by Mar": too often something else
    year = _most_recent(ref, month, None)
    if lead in ("last", "previous", "past") and year == ref.year and month == ref.month:
        year -= 1  # "last May", said in May, is the May before
    if lead == "this":
        year = ref.year
    window = _month_window(year, month, 1, phrase, tz, every_year=lead not in ("last", "this", "previous", "past"))
    if lead == "early":
        return DateWindow(window.start, window.start + timedelta(days=11), phrase, window.every_year)
    if lead == "mid":
        return DateWindow(
            window.start + timedelta(days=9), window.start + timedelta(days=21), phrase, window.every_year
        )
    if lead == "late" or lead == "the end of":
        return DateWindow(window.end - timedelta(days=11), window.end, phrase, window.every_year)
    if lead in _ONWARDS:
        return _onwards(lead, replace(window, every_year=False), ref)
    return window


_ONWARDS = frozenset({"since", "from", "after"})


def _onwards(lead: str, window: DateWindow, ref: datetime) -> DateWindow:
    """ "since 2021" / "from May": from the window's start up to the reference time; "after": from its end.

    Other time words ("in", "before", "by", "until") keep the window itself: a
    record just before it still gains through the falloff.
    """
    if lead not in _ONWARDS:
        return window
    start = window.end if lead == "after" else window.start
    return DateWindow(start, max(ref, start + timedelta(days=1)), window.phrase)


def _this_last(m: re.Match[str], ref: datetime) -> DateWindow:
    """today, yesterday, last night, this/last week, month, year, weekend."""
    today = _day(ref)
    phrase = m[0].strip()
    word = (m["word"] or "").lower()
    if word in ("today", "tonight", "this morning", "this afternoon", "this evening"):
        return DateWindow(today, today + timedelta(days=1), phrase)
    if word in ("yesterday", "last night"):
        return DateWindow(today - timedelta(days=1), today, phrase)
    if word == "the day before yesterday":
        return DateWindow(today - timedelta(days=2), today - timedelta(days=1), phrase)
    which, unit = m["which"].lower(), m["unit"].lower()
    back = 0 if which == "this" else 1
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        start = monday - timedelta(days=7 * back)
        return DateWindow(start, start + timedelta(days=7), phrase)
    if unit == "weekend":
        # The most recent Saturday-Sunday that has begun; "last weekend" on a weekend is the one before.
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if back and today.weekday() >= 5:
            saturday -= timedelta(days=7)
        return DateWindow(saturday, saturday + timedelta(days=2), phrase)
    if unit == "month":
        start = _add_months(today.replace(day=1), -back)
        return DateWindow(start, _add_months(start, 1), phrase)
    start = datetime(ref.year - back, 1, 1, tzinfo=ref.tzinfo)
    return DateWindow(start, start.replace(year=start.year + 1), phrase)


def _weekday(m: re.Match[str], ref: datetime) -> DateWindow:
    """The most recent such weekday: today counts for "on Friday", not for "last Friday"."""
    today = _day(ref)
    back = (today.weekday() - WEEKDAYS[m["day"].lower()]) % 7
    if back == 0 and m["lead"].lower() in ("last", "past", "previous"):
        back = 7
    start = today - timedelta(days=back)
    return DateWindow(start, start + timedelta(days=1), m[0].strip())


_BARE_MONTH = re.compile(rf"{_MONTH.format('month')}\b(?!['’]s)", re.IGNORECASE)


def _anchor_after(query: str, pos: int, ref: datetime, months: bool = False) -> tuple[int, DateWindow] | None:
    """The date right at ``pos`` ("... before August 11, 2023", "... before yesterday"): its end and window.

    With ``months``, a bare month ("... of May") is an anchor too.
    """
    m = _ABSOLUTE.match(query, pos)
    if m is not None:
        window = _absolute(m, ref, query)
        return (m.end(), window) if window is not None else None
    m = _BARE_MONTH.match(query, pos) if months else None
    if m is not None and _month_follows(m["month"], query, m.end()):
        month = MONTHS[m["month"].lower()]
        return m.end(), _month_window(_most_recent(ref, month, None), month, 1, m[0], ref.tzinfo, every_year=True)
    m = _THIS_LAST.match(query, pos)
    if m is not None:
        return m.end(), _this_last(m, ref)
    return None


__all__ = ["DateWindow", "EventShift", "find_dates", "find_events"]
