"""Fuzzy matching of project paths, as fzf ranks them, fast over 100,000 of them.

A query matches a path when its characters appear in the path in order (a subsequence),
ignoring case unless the query has a capital letter (smart case). The best matches:

- every matched character scores; a gap between two matched characters costs, more
  the longer it is;
- a character at the start of a path segment (after `/`, or the path's start) earns a
  bonus, one after `_ - .` or space a smaller one, an upper-case letter after a lower-case
  one (camelCase) a smaller still; the query's first character earns its bonus twice;
- a run of consecutive matched characters keeps the bonus of its first;
- each character matched in the basename earns a bonus (`editor` ranks `tui/_editor.py`
  above `editor/x/y.md`), and matching the basename's first character another;
- equal scores go to the shorter path, then the alphabetically first.

Scoring every path in Python costs about 1.5 ms per 1,000 paths, 150 ms at 100,000, three
times the budget (50 ms for the first suggestions), so frizbee (a SIMD Smith-Waterman matcher in
Rust, with fzf-like bonuses) ranks the whole list twice, once by whole path and once by
basename, and only the best `PREFILTER` of each are scored here; benchmarks/bench_complete.py
measures it against a plain substring filter of the same list.
"""

from __future__ import annotations

from collections.abc import Sequence

import frizbee

PREFILTER = 64  # candidates frizbee hands over from each of its two rankings
SCORE_MATCH = 16
GAP_START = -3
GAP_EXTEND = -1
BONUS_SEGMENT = 10  # after '/', or the path's first character
BONUS_DELIMITER = 8  # after _ - . or space
BONUS_CAMEL = 7  # an upper-case letter after a lower-case one
BONUS_CONSECUTIVE = 4  # at least this much for a character continuing a run
BONUS_BASENAME = 5  # for each character matched in the basename
BONUS_BASENAME_START = 8  # for matching the basename's first character
STARTS = 16  # starting points tried for one path (occurrences of the query's first char)

Match = tuple[str, tuple[int, ...]]  # the path and the indices of its matched characters


def basename_start(path: str) -> int:
    """Where the last segment of `path` begins (a directory's keeps its trailing /)."""
    return path.rfind("/", 0, len(path) - 1) + 1


def _fold(text: str) -> str:
    """`text` in lower case, character for character (so indices stay the same)."""
    folded = text.lower()
    if len(folded) == len(text):
        return folded
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _bonus(path: str, i: int) -> int:
    if i == 0:
        return BONUS_SEGMENT
    before, here = path[i - 1], path[i]
    if before == "/":
        return BONUS_SEGMENT
    if before in "_-. ":
        return BONUS_DELIMITER
    if here.isupper() and before.islower():
        return BONUS_CAMEL
    return 0


def _points(path: str, positions: Sequence[int], base: int) -> int:
    score = sum(BONUS_BASENAME for i in positions if i >= base)
    if base in positions:
        score += BONUS_BASENAME_START
    prev = -2
    run = 0  # the bonus of the current run's first character
    for k, i in enumerate(positions):
        bonus = _bonus(path, i)
        if k == 0:
            bonus *= 2
            run = bonus
        elif i == prev + 1:
            bonus = max(bonus, run, BONUS_CONSECUTIVE)
        else:
            score += GAP_START + GAP_EXTEND * (i - prev - 2)
            run = bonus
        score += SCORE_MATCH + bonus
        prev = i
    return score


def _best(
    query: str, folded: str, path: str, lo: int, base: int
) -> tuple[int, tuple[int, ...]] | None:
    """The best-scoring greedy match of `query` in `folded[lo:]`, trying each of the
    first STARTS occurrences of its first character as the start."""
    best: tuple[int, tuple[int, ...]] | None = None
    start = folded.find(query[0], lo)
    tries = 0
    while start >= 0 and tries < STARTS:
        positions = [start]
        at = start
        for c in query[1:]:
            at = folded.find(c, at + 1)
            if at < 0:
                return best  # later starts cannot match either
            positions.append(at)
        score = _points(path, positions, base)
        if best is None or score > best[0]:
            best = (score, tuple(positions))
        start = folded.find(query[0], start + 1)
        tries += 1
    return best


def score(query: str, path: str) -> tuple[int, tuple[int, ...]] | None:
    """How well `query` matches `path` and which characters it matched; None: no match."""
    if not query:
        return 0, ()
    sensitive = query != query.lower()
    q = query if sensitive else _fold(query)
    folded = path if sensitive else _fold(path)
    base = basename_start(path)
    found = _best(q, folded, path, 0, base)
    if found is None:
        return None
    # The starts tried may all lie before the basename: try it on its own too.
    inside = _best(q, folded, path, base, base) if base else None
    return inside if inside is not None and inside[0] > found[0] else found


class PathIndex:
    """A list of paths ready to be matched again and again (the slow part, handing the
    strings to frizbee, is done once)."""

    def __init__(self, paths: Sequence[str]) -> None:
        # Shorter first: frizbee breaks ties by position, and so does `top` here.
        self.paths = sorted(paths, key=lambda p: (len(p), p))
        self._whole = frizbee.Haystacks(self.paths)
        self._base = frizbee.Haystacks([p[basename_start(p) :] for p in self.paths])

    def __len__(self) -> int:
        return len(self.paths)

    def top(self, query: str, limit: int = 8, *, skip: str = "") -> list[Match]:
        """The best `limit` matches of `query`, best first (`skip`: a path left out,
        the one already typed)."""
        paths = self.paths
        if not query:
            none: tuple[int, ...] = ()
            return [(p, none) for p in paths[: limit + 1] if p != skip][:limit]
        matcher = frizbee.Matcher(query, casing="smart", max_items=PREFILTER)
        candidates = {m.index for m in matcher.match_list(self._whole)}
        candidates.update(m.index for m in matcher.match_list(self._base))
        ranked: list[tuple[int, int, tuple[int, ...]]] = []
        for index in candidates:
            found = score(query, paths[index])
            if found is not None and paths[index] != skip:
                ranked.append((-found[0], index, found[1]))
        ranked.sort()
        return [(paths[index], positions) for _, index, positions in ranked[:limit]]


__all__ = ["Match", "PathIndex", "basename_start", "score"]
