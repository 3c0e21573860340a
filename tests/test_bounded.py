"""The bounded maps: caches that forget their least recently used entries, by count or by weight,
values kept with what they were made of, and generations whose forgotten keys read as changed."""

from __future__ import annotations

from mvu_store.bounded import BoundedCache, Generations, KeptBy


def test_beyond_its_capacity_the_least_recently_used_entry_goes() -> None:
    cache: BoundedCache[str, int] = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_a_weighed_cache_keeps_what_fits_its_weight() -> None:
    cache: BoundedCache[str, bytes] = BoundedCache(10, weigh=len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    cache.put("a", b"12")  # replaced: its old weight is given back
    cache.put("c", b"123456")  # 2 + 4 + 6 > 10: "b", the least recently used, goes
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"12", None, b"123456")
    cache.put("d", b"x" * 11)  # heavier than the whole cache: not kept, and nothing else goes for it
    assert [cache.get(key) for key in "acd"] == [b"12", b"123456", None]
    cache.put("e", b"x" * 10)
    cache.pop("e")
    cache.pop("missing")
    cache.put("f", b"x" * 10)  # the popped weight was given back
    assert cache.get("f") == b"x" * 10


def test_a_weighed_cache_can_bound_its_number_of_entries_too() -> None:
    cache: BoundedCache[str, bytes] = BoundedCache(100, weigh=len, max_entries=2)
    for key in "abc":
        cache.put(key, b"x")
    assert [cache.get(key) for key in "abc"] == [None, b"x", b"x"]  # light, but one too many
    assert (len(cache), cache.weight) == (2, 2)
    cache.put("d", b"x" * 99)  # too heavy with both others: the least recently used goes first
    assert [cache.get(key) for key in "bcd"] == [None, b"x", b"x" * 99] and cache.weight == 100


def test_a_generation_read_before_a_change_never_matches_again_even_once_forgotten() -> None:
    generations: Generations[str] = Generations(2)
    never = generations.generation("a")  # never bumped: the floor
    generations.bump("a")
    bumped = generations.generation("a")
    assert bumped != never and generations.generation("a") == bumped  # stands until the next bump
    generations.bump("b")
    generations.bump("c")  # "a" is forgotten: it reads as changed, never as the floor it had
    assert len(generations) == 2
    assert generations.generation("a") not in (bumped, never)


def test_forgetting_any_key_moves_the_floor_so_a_never_changed_read_is_not_kept_current() -> None:
    generations: Generations[str] = Generations(1)
    floor = generations.generation("quiet")
    generations.bump("x")
    assert generations.generation("quiet") == floor  # nothing forgotten yet: still current
    generations.bump("y")  # "x" forgotten: whatever was forgotten may have been "quiet" before
    assert generations.generation("quiet") != floor
    assert generations.generation("x") == generations.generation("quiet")  # both at the new floor


def test_a_kept_value_is_given_only_for_what_it_was_made_of() -> None:
    kept: KeptBy[str, int, bytes] = KeptBy(10, weigh=len, max_entries=2)
    kept.put("a", 1, b"1234")
    assert (kept.get("a", 1), kept.get("a", 2), kept.get("b", 1)) == (b"1234", None, None)
    kept.put("a", 2, b"12345")  # the key's value made of something else replaces it
    assert (kept.get("a", 1), kept.get("a", 2)) == (None, b"12345")
    kept.put("b", 1, b"123456")  # 5 + 6 > 10: "a" goes
    assert (kept.get("a", 2), kept.get("b", 1)) == (None, b"123456")
    kept.put("c", 1, b"1")
    kept.put("d", 1, b"1")  # beyond two entries: "b", the least recently used, goes
    assert [kept.get(key, 1) for key in "bcd"] == [None, b"1", b"1"]
