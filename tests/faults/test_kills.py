"""kill -9 real `lamina` processes during rebuild and sync (seeded): every check afterwards holds,
and no kill leaves a database quick_check rejects. The soak (bench/soak.py) does 50+ of these."""

from __future__ import annotations

from bench.soak import soak


def test_a_handful_of_kills_and_a_corruption_all_hold() -> None:
    rep = soak(kills=4, corruptions=1, seed=7, model=False, modules=120, verbose=False)
    assert rep["corrupt_after_kill"] == 0
    assert not rep["failures"], rep["failures"]
    classes = rep["classes"]
    assert classes["kill -9 during rebuild"] == {"tried": 2, "held": 2}  # type: ignore[index]
    assert classes["kill -9 during sync"] == {"tried": 2, "held": 2}  # type: ignore[index]
    assert classes["corrupt sqlite"] == {"tried": 1, "held": 1}  # type: ignore[index]
