"""The Python word-piece tokenizer gives exactly the ids and offsets of ``tokenizers`` (the reference).

The local embedder tokenizes with ``funes.providers.embed.wordpiece`` so the
``[local]`` install needs no ``tokenizers`` (and no huggingface_hub). The
vectors of every existing store depend on these ids, so they must be the
same, code point by code point.
"""

from __future__ import annotations

import json
import random
import sys
import unicodedata
from pathlib import Path

import pytest

from funes.providers.embed import wordpiece
from funes.providers.embed.local import LocalEmbedder, model_dir
from funes.providers.embed.wordpiece import WordPiece

tokenizers = pytest.importorskip("tokenizers", reason="tokenizers is the reference (the [test] extra installs it)")

TEXTS = [
    "Hello, World! I prefer aisle seats.",
    "Café naïve résumé — İstanbul ΣΊΣΥΦΟΣ straße ﬁne",
    "東京は日本の首都です。北京欢迎你",
    "emoji 😀👍🏽 ok",
    "a\x01b c\u200bd\ufffd e\x85f \x00g",
    "[CLS] x [SEP][MASK]y [UNK]",
    "x" * 150 + " y " + "z" * 100,
    "https://example.com/a?b=c&d=e#f 3.14 $5,000 e=mc^2 ~tilde~ `code` a|b",
    "Tab\there\nnew\r\nline\u3000ideo\u2028sep",
    "ǅungla ﬃ ℌ ① ½ ＡＢＣ ｆｕｌｌｗｉｄｔｈ",
    "\u0301abc e\u0301 \u0378 \U000e0041",
    "Ѐ Ёж ٣٤ العربية हिन्दी ไทย 한국어",
    "",
    "   ",
    "unaffable unbelievableness antidisestablishmentarianism",
]


@pytest.fixture(scope="module")
def pair() -> tuple[object, WordPiece]:
    path = model_dir() / "tokenizer.json"
    reference = tokenizers.Tokenizer.from_file(str(path))
    reference.no_truncation()
    reference.no_padding()
    return reference, WordPiece.from_file(path)


def _same(reference: object, ours: WordPiece, text: str, special: bool = True) -> bool:
    a = reference.encode(text, add_special_tokens=special)  # type: ignore[attr-defined]
    b = ours.encode(text, add_special_tokens=special)
    return a.ids == b.ids and [tuple(o) for o in a.offsets] == b.offsets


def test_fixed_texts_give_the_same_ids_and_offsets(pair: tuple[object, WordPiece]) -> None:
    reference, ours = pair
    for text in TEXTS:
        assert _same(reference, ours, text), text
        assert _same(reference, ours, text, special=False), text
    batch = ours.encode_batch(TEXTS)
    assert [e.ids for e in batch] == [e.ids for e in reference.encode_batch(TEXTS)]  # type: ignore[attr-defined]


def test_every_code_point_is_normalised_and_split_as_tokenizers_does() -> None:
    norm = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True
    )
    pre = tokenizers.pre_tokenizers.BertPreTokenizer()
    wrong = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        rust = norm.normalize_str(c)
        if rust != wordpiece._normalize_char(c):
            wrong.append((hex(cp), "normalised"))
        elif rust == c and (len(pre.pre_tokenize_str(f"a{c}a")) == 3) != wordpiece._is_punctuation(c):
            wrong.append((hex(cp), "punctuation"))
    assert not wrong, f"{len(wrong)} code points differ, e.g. {wrong[:5]}: rerun scripts/wordpiece_table.py"


@pytest.mark.parametrize("pool", ["common", "any"])
def test_random_strings_give_the_same_ids_and_offsets(pair: tuple[object, WordPiece], pool: str) -> None:
    reference, ours = pair
    rng = random.Random(7)
    if pool == "common":
        chars = [chr(i) for i in range(0x20, 0x3100)] + list(" \t\n") * 200 + list("abcdefghij") * 100
    else:
        chars = [chr(i) for i in range(0x110000) if not 0xD800 <= i <= 0xDFFF]
    texts = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 40))) for _ in range(2000)]
    differing = [t for t in texts if not _same(reference, ours, t)]
    assert not differing, f"{len(differing)} of {len(texts)} differ, e.g. {differing[:3]!r}"


def test_runs_of_combining_marks_give_the_same_ids(pair: tuple[object, WordPiece]) -> None:
    """Marks out of canonical order are reordered as NFD does, with tokenizers' positional spans.

    The ids always agree. Offsets agree too, except where a removed control character sits
    between two marks (about 2 in 10,000 of these strings of random marks): tokenizers removes
    it before reordering, which this does not model.
    """
    reference, ours = pair
    rng = random.Random(0)
    marks = [chr(i) for i in range(0x110000) if not 0xD800 <= i <= 0xDFFF and unicodedata.combining(chr(i))]
    base = [chr(i) for i in range(0x20, 0x3100)] + list(" abc") * 50
    texts = [
        "".join(rng.choice(marks) if rng.random() < 0.5 else rng.choice(base) for _ in range(rng.randint(1, 12)))
        for _ in range(3000)
    ]
    assert [reference.encode(t).ids for t in texts] == [ours.encode(t).ids for t in texts]  # type: ignore[attr-defined]
    plain = [t for t in texts if not any(unicodedata.category(c) in ("Cc", "Cf") for c in t)]
    assert [t for t in plain if not _same(reference, ours, t)] == []


def test_a_long_text_splits_at_the_same_offsets(pair: tuple[object, WordPiece]) -> None:
    reference, ours = pair
    text = " ".join(TEXTS) * 20 + (Path(__file__).read_text(encoding="utf-8"))
    assert _same(reference, ours, text, special=False)


def test_the_embedder_never_imports_tokenizers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # importing it raises ImportError
    embedder = LocalEmbedder()
    assert embedder.count_tokens("I prefer aisle seats.") == 5
    assert embedder.token_offsets("aisle seats") == [(0, 5), (6, 11)]
    assert embedder.embed_batch(["I prefer aisle seats."]).shape == (1, 384)


def test_a_tokenizer_of_another_kind_is_refused_with_what_to_do(tmp_path: Path) -> None:
    spec = json.loads((model_dir() / "tokenizer.json").read_text(encoding="utf-8"))
    spec["model"]["type"] = "BPE"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match="pip install tokenizers"):
        WordPiece.from_file(path)
