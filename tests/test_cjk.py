"""Keyword matches for Chinese, Japanese and Korean text (migration 008's trigram index)."""

from __future__ import annotations

from pathlib import Path

import pytest

import funes
from funes.providers.embed import HashEmbedder

CHINESE = "数据库连接超时了，我们把超时时间改成了三十秒"
JAPANESE = "サーバーのタイムアウトを三十秒に設定しました"
KOREAN = "서버가 응답하지 않아서 어젯밤에 재시작했습니다"
ENGLISH = "The database connection timed out, so we raised the limit to thirty seconds"


@pytest.fixture
def cjk_mem(tmp_path: Path) -> funes.Funes:
    """A store holding one sentence in each language (the hash embedder: these tests are about the keyword leg)."""
    service = funes.open(str(tmp_path / "cjk.db"), embedder=HashEmbedder(64))
    for text in (CHINESE, JAPANESE, KOREAN, ENGLISH):
        service.remember(text)
    return service


def _keyword_hits(mem: funes.Funes, query: str) -> list[str]:
    return [h.memory.content for h in mem.search(query, min_relevance=0) if h.explanation.keyword_rank is not None]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("超时", CHINESE),  # a two-character word inside a sentence without spaces
        ("数据库连接", CHINESE),  # a longer run, matched by trigrams
        ("タイムアウト", JAPANESE),  # katakana inside a kana/kanji sentence
        ("設定", JAPANESE),
        ("서버가", KOREAN),  # a Hangul word with its particle
        ("재시작", KOREAN),  # part of 재시작했습니다
    ],
)
def test_cjk_words_match_by_keyword(cjk_mem: funes.Funes, query: str, expected: str) -> None:
    assert _keyword_hits(cjk_mem, query) == [expected]


def test_mixed_script_query_finds_both_scripts(cjk_mem: funes.Funes) -> None:
    found = _keyword_hits(cjk_mem, "database 超时")
    assert set(found) == {CHINESE, ENGLISH}


def test_cjk_index_follows_updates_and_deletes(cjk_mem: funes.Funes) -> None:
    chinese = next(h.memory for h in cjk_mem.search("超时", min_relevance=0) if h.memory.content == CHINESE)
    cjk_mem.update(chinese.id, content="The timeout is now thirty seconds")
    assert _keyword_hits(cjk_mem, "超时") == []
    korean = next(h.memory for h in cjk_mem.search("재시작", min_relevance=0) if h.memory.content == KOREAN)
    cjk_mem.update(korean.id, content="서버를 재시작했습니다")
    assert _keyword_hits(cjk_mem, "재시작") == ["서버를 재시작했습니다"]
    cjk_mem.forget(korean.id)
    assert _keyword_hits(cjk_mem, "재시작") == []
    # The external-content index agrees with its table after all of that.
    with cjk_mem.store.db.write() as conn:
        conn.execute("INSERT INTO memories_cjk (memories_cjk) VALUES ('integrity-check')")


def test_english_records_stay_out_of_the_cjk_index(cjk_mem: funes.Funes) -> None:
    rows = cjk_mem.store.db.reader().execute("SELECT count(*) FROM memories_cjk_docsize").fetchone()[0]
    assert rows == 3


def test_cjk_keywords_respect_tenants(tmp_path: Path) -> None:
    with funes.open(str(tmp_path / "t.db"), embedder=HashEmbedder(64)) as mem:
        mem.remember(CHINESE, tenant="a")
        assert _keyword_hits(mem, "超时") == []
        assert [h.memory.content for h in mem.search("超时", tenant="a", min_relevance=0)] == [CHINESE]
