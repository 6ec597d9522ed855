"""Times named in a query (funes.memory.dates): phrasings that resolve, and words that only look like dates."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from funes.memory.dates import DateWindow, EventShift, find_dates, find_events
from funes.memory.ranking import date_matcher

# A Friday afternoon.
REF = datetime(2023, 10, 20, 15, 30, tzinfo=UTC)


def day(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


def one(query: str, ref: datetime = REF) -> DateWindow:
    found = find_dates(query, ref)
    assert len(found) == 1, f"{query!r} -> {found}"
    return found[0]


@pytest.mark.parametrize(
    ("query", "start", "end", "phrase"),
    [
        # absolute days, in the shapes people write them
        ("What did Melanie paint on October 13, 2023?", day(2023, 10, 13), day(2023, 10, 14), "October 13, 2023"),
        ("what did Gina find on 1 February, 2023", day(2023, 2, 1), day(2023, 2, 2), "1 February, 2023"),
        ("the 3rd of May 2021", day(2021, 5, 3), day(2021, 5, 4), "the 3rd of May 2021"),
        ("notes from Sept. 9th 2022", day(2022, 9, 9), day(2022, 9, 10), "Sept. 9th 2022"),
        ("the release 2023-07-14", day(2023, 7, 14), day(2023, 7, 15), "2023-07-14"),
        ("budget for 2022-11", day(2022, 11, 1), day(2022, 12, 1), "2022-11"),
        # months and years
        ("What did Mel paint in July 2023?", day(2023, 7, 1), day(2023, 8, 1), "July 2023"),
        (
            "Which tournament did Nate win in the beginning of November 2022?",
            day(2022, 11, 1),
            day(2022, 12, 1),
            "November 2022",
        ),
        ("what happened in 2022", day(2022, 1, 1), day(2023, 1, 1), "in 2022"),
        ("sepsis has fallen from 2009 to 2014", day(2009, 1, 1), day(2015, 1, 1), "from 2009 to 2014"),
        ("between 2019 and 2021", day(2019, 1, 1), day(2022, 1, 1), "between 2019 and 2021"),
        ("heart failure since 1979", day(1979, 1, 1), REF, "since 1979"),
        ("what changed after 2021", day(2022, 1, 1), REF, "after 2021"),
        ("since April", day(2023, 4, 1), REF, "since April"),
        ("everything after May", day(2023, 6, 1), REF, "after May"),
        ("What state did Joanna visit in summer 2021?", day(2021, 6, 1), day(2021, 9, 1), "summer 2021"),
        ("plans for the winter of 2022", day(2022, 12, 1), day(2023, 3, 1), "winter of 2022"),
        # month with a time word, most recent one at or before the reference
        ("last May", day(2023, 5, 1), day(2023, 6, 1), "last May"),
        ("this month", day(2023, 10, 1), day(2023, 11, 1), "this month"),
        ("last month", day(2023, 9, 1), day(2023, 10, 1), "last month"),
        ("what did we agree last year", day(2022, 1, 1), day(2023, 1, 1), "last year"),
        ("this year", day(2023, 1, 1), day(2024, 1, 1), "this year"),
        ("early March", day(2023, 3, 1), day(2023, 3, 12), "early March"),
        ("last summer", day(2023, 6, 1), day(2023, 9, 1), "last summer"),
        # relative to the reference time
        ("what did she say yesterday?", day(2023, 10, 19), day(2023, 10, 20), "yesterday"),
        ("today", day(2023, 10, 20), day(2023, 10, 21), "today"),
        ("last night", day(2023, 10, 19), day(2023, 10, 20), "last night"),
        ("this week", day(2023, 10, 16), day(2023, 10, 23), "this week"),
        ("last week", day(2023, 10, 9), day(2023, 10, 16), "last week"),
        ("last weekend", day(2023, 10, 14), day(2023, 10, 16), "last weekend"),
        ("last Friday", day(2023, 10, 13), day(2023, 10, 14), "last Friday"),
        ("on Friday", day(2023, 10, 20), day(2023, 10, 21), "on Friday"),
        ("on Monday", day(2023, 10, 16), day(2023, 10, 17), "on Monday"),
        ("three days ago", day(2023, 10, 17), day(2023, 10, 18), "three days ago"),
        ("two weeks ago", day(2023, 10, 2), day(2023, 10, 10), "two weeks ago"),
        ("a few days ago", day(2023, 10, 14), day(2023, 10, 20), "a few days ago"),
        ("the past 3 days", day(2023, 10, 17), day(2023, 10, 21), "the past 3 days"),
        ("in the last two weeks", day(2023, 10, 6), day(2023, 10, 21), "in the last two weeks"),
        ("Where did Caroline move from 4 years ago?", day(2019, 4, 20), day(2020, 4, 20), "4 years ago"),
        ("a hike two years back", day(2021, 4, 20), day(2022, 4, 20), "two years back"),
        # a part of a month
        (
            "Where was Dave in the last two weeks of August 2023?",
            day(2023, 8, 18),
            day(2023, 9, 1),
            "the last two weeks of August 2023",
        ),
        (
            "Where was Calvin in the last week of October 2023?",
            day(2023, 10, 25),
            day(2023, 11, 1),
            "the last week of October 2023",
        ),
        ("the first week of May", day(2023, 5, 1), day(2023, 5, 8), "the first week of May"),
        # a span before or after a date: from the shifted day to the anchor
        (
            "the puppy she got two weeks before August 11, 2023",
            day(2023, 7, 28),
            day(2023, 8, 12),
            "two weeks before August 11, 2023",
        ),
        ("the week before August 3, 2023", day(2023, 7, 27), day(2023, 8, 4), "the week before August 3, 2023"),
        ("three days after 2023-05-01", day(2023, 5, 1), day(2023, 5, 5), "three days after 2023-05-01"),
        # a relative phrase anchored on a date
        (
            "What did Maria do last weekend before April 10, 2023?",
            day(2023, 4, 8),
            day(2023, 4, 11),
            "last weekend before April 10, 2023",
        ),
        (
            "just finished last Friday on 23 January, 2022",
            day(2022, 1, 21),
            day(2022, 1, 24),
            "last Friday on 23 January, 2022",
        ),
    ],
)
def test_phrasings_resolve_to_windows(query: str, start: datetime, end: datetime, phrase: str) -> None:
    window = one(query)
    assert (window.start, window.end, window.phrase) == (start, end, phrase)


@pytest.mark.parametrize(
    ("query", "start"),
    [
        ("When did Melanie go camping in June?", day(2023, 6, 1)),
        ("Which outdoor spot did Joanna visit in May?", day(2023, 5, 1)),
        ("what did i do in may", day(2023, 5, 1)),
        ("in November", day(2022, 11, 1)),  # November 2023 has not come yet on October 20
        ("what did i do on may 3", day(2023, 5, 3)),
        ("Oct 13", day(2023, 10, 13)),
        ("Christmas on December 25", day(2022, 12, 25)),
        ("where were we on the 4th of July", day(2023, 7, 4)),
    ],
)
def test_a_month_without_a_year_is_the_most_recent_and_any_year(query: str, start: datetime) -> None:
    window = one(query)
    assert window.start == start
    assert window.every_year


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what you did?",
        "I may go to the party",
        "this may be wrong",
        "It may rain tomorrow",
        "Maybe we should march on together",
        "can you march 5 miles",
        "may 3 people come",
        "the 2022 report",
        "a 2023 budget line",
        "the year 2000 problem",
        "in June's garden",
        "April said she would call",
        "what did August write",
        "the May Day parade",
        "Tell me about the second project",
        "What is the name of John's one-year-old child?",
        "order 12 of 2000 items",
        "sun and fun",
        "two weeks before the trip",  # an event, not a time: nothing to resolve here
        "next week",  # memory holds the past
        "",
    ],
)
def test_words_that_only_look_like_dates_are_not_dates(query: str) -> None:
    assert find_dates(query, REF) == ()


def test_several_times_in_one_query_are_each_found_once() -> None:
    found = find_dates("compare October 13, 2023 with last May and yesterday", REF)
    assert [w.phrase for w in found] == ["October 13, 2023", "last May", "yesterday"]


def test_a_weekday_with_its_date_is_that_date() -> None:
    assert [w.phrase for w in find_dates("what did we eat on Friday, May 5, 2023", REF)] == ["May 5, 2023"]


def test_a_time_out_of_the_calendar_is_no_window() -> None:
    assert find_dates("999 years ago", datetime(500, 1, 1, tzinfo=UTC)) == ()


def test_last_may_said_in_may_is_the_may_before() -> None:
    in_may = datetime(2023, 5, 20, tzinfo=UTC)
    assert one("last May", in_may).start == day(2022, 5, 1)
    assert one("in May", in_may).start == day(2023, 5, 1)


def test_a_naive_reference_time_is_utc_and_windows_are_aware() -> None:
    window = one("yesterday", datetime(2023, 10, 20, 9, 0))
    assert window.start == day(2023, 10, 19)
    assert window.start.tzinfo is not None


def test_an_impossible_day_is_no_window() -> None:
    assert find_dates("on February 30, 2023", REF) == ()


def test_describe_and_to_dict_name_the_window() -> None:
    window = one("in June")
    assert window.describe() == "'in June' -> 2023-06-01..2023-07-01 (or that date in an earlier year)"
    assert window.to_dict() == {
        "phrase": "in June",
        "start": "2023-06-01T00:00:00+00:00",
        "end": "2023-07-01T00:00:00+00:00",
        "every_year": True,
    }


@given(st.text(max_size=200), st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1)))
def test_any_text_parses_without_error_into_ordered_windows(text: str, ref: datetime) -> None:
    for window in find_dates(text, ref):
        assert window.start < window.end
        assert window.phrase and window.phrase in text


# -- the match ranking reads -------------------------------------------------------------------
def test_a_window_matches_one_inside_and_fades_outside() -> None:
    def closeness(when: datetime, start: datetime, end: datetime) -> float:
        return date_matcher([DateWindow(start, end, "a day")])(when)

    start, end = day(2023, 5, 3), day(2023, 5, 4)
    assert closeness(day(2023, 5, 3) + timedelta(hours=12), start, end) == 1.0
    assert closeness(day(2023, 5, 5), start, end) == pytest.approx(0.5)  # a day after: one half-life
    assert closeness(day(2023, 5, 1), start, end) == pytest.approx(0.25)
    # A month window fades over a week, not a day.
    assert 0.4 < closeness(day(2023, 6, 8), day(2023, 5, 1), day(2023, 6, 1)) < 0.6


def test_a_yearless_window_matches_the_same_month_of_earlier_years_only() -> None:
    june = one("in June")  # June 2023
    assert date_matcher((june,))(day(2021, 6, 15)) == 1.0
    assert date_matcher((june,))(day(2023, 6, 15)) == 1.0
    assert date_matcher((june,))(day(2021, 9, 15)) < 0.01
    explicit = one("June 2023")
    assert date_matcher((explicit,))(day(2021, 6, 15)) < 0.01


@pytest.mark.parametrize(
    ("query", "shift"),
    [
        (
            "What did Melanie buy two weeks before the charity race?",
            EventShift(2, "week", "before", "the charity race", "two weeks before the charity race"),
        ),
        (
            "the week after her sister's wedding in Rome, what did she eat",
            EventShift(
                1, "week", "after", "her sister's wedding in Rome", "the week after her sister's wedding in Rome"
            ),
        ),
        (
            "What did I decide 3 days after the launch and why?",
            EventShift(3, "day", "after", "the launch", "3 days after the launch"),
        ),
        (
            "a few days before my trip to Paris did I pack?",
            EventShift(3, "day", "before", "my trip to Paris", "a few days before my trip to Paris"),
        ),
    ],
)
def test_a_span_around_an_event_names_the_event(query: str, shift: EventShift) -> None:
    assert find_events(query) == (shift,)
    assert find_dates(query, REF) == ()  # only memory can date it: no window from the calendar


@pytest.mark.parametrize(
    "query",
    [
        "two weeks before August 11, 2023",  # a date: find_dates' window
        "a week before yesterday",
        "two weeks before that?",  # nothing that names an event
        "what happened a month after it",
        "two weeks before the",
        "the team met before the launch",  # no span
    ],
)
def test_no_event_where_the_shift_has_a_date_or_no_event(query: str) -> None:
    assert find_events(query) == ()


def test_an_event_window_runs_from_the_shifted_day_to_the_event_or_back() -> None:
    before = EventShift(2, "week", "before", "the trip", "two weeks before the trip")
    window = before.window(datetime(2023, 8, 11, 10, 0, tzinfo=UTC))
    assert (window.start, window.end) == (day(2023, 7, 28), day(2023, 8, 12))
    assert window.phrase == "two weeks before the trip (the trip: 2023-08-11)"
    after = EventShift(3, "day", "after", "the launch", "3 days after the launch").window(datetime(2023, 8, 11, 23))
    assert (after.start, after.end) == (day(2023, 8, 11), day(2023, 8, 15))


@given(st.sampled_from(["", "two weeks before ", "999 years after ", "the day before "]), st.text(max_size=80))
def test_any_text_parses_into_events_and_windows_without_error(lead: str, text: str) -> None:
    for shift in find_events(lead + text):
        assert shift.event and all(w in text for w in shift.event.split()) and shift.direction in ("before", "after")
        window = shift.window(REF)
        assert window.start < window.end
