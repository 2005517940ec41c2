"""Keeping a shadow repository bounded (ShadowRepo.gc): drop old snapshots, then delete
every stored object nothing reaches any more."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import pygit2

from smith._atomic import private_mode

if TYPE_CHECKING:
    from smith.vcs._repo import ShadowRepo


def gc(
    shadow: ShadowRepo,
    *,
    keep_days: int,
    keep_count: int,
    dry_run: bool = False,
    needed: Collection[str] = (),
    branch: str,
) -> dict[str, Any]:
    """See ShadowRepo.gc (`branch`: the reference its snapshots are on)."""
    commits = shadow.snapshots()
    cutoff = time.time() - keep_days * 86400
    kept = [
        c for i, c in enumerate(commits) if i == 0 or (i < keep_count and c.commit_time >= cutoff)
    ]
    before = shadow.measure()
    staying = {str(c.tree_id) for c in kept} | {str(shadow.index.write_tree())}
    report: dict[str, Any] = {
        "snapshots": len(commits),
        "pruned": len(commits) - len(kept),
        "bytes_before": before,
        "lost": sorted(t for t in set(needed) - staying if shadow.has_tree(t)),
    }
    if dry_run or not commits:
        return {**report, "bytes_after": before}
    repo = shadow.repo
    if len(kept) < len(commits):
        parent: list[pygit2.Oid] = []
        for old in reversed(kept):
            message, tree = old.message, old.tree_id
            oid = repo.create_commit(None, old.author, old.committer, message, tree, parent)
            parent = [oid]
        repo.lookup_reference(branch).set_target(parent[0])
        private_mode(os.path.join(shadow.path, branch))
    _delete_unreachable(shadow)
    shadow.reopen()  # libgit2 caches objects it has read: deleted ones must not be seen
    after = shadow.measure()
    shadow.save_state(size=after)
    return {**report, "bytes_after": after}


def _delete_unreachable(shadow: ShadowRepo) -> None:
    index, repo = shadow.index, shadow.repo
    reachable: set[str] = {str(entry.id) for entry in index}
    # The index's own tree too: libgit2 caches its subtrees' ids and reuses them
    # without writing them again, so they must stay.
    index_tree = repo[index.write_tree()]
    assert isinstance(index_tree, pygit2.Tree)
    trees: list[pygit2.Tree] = [index_tree]
    for commit in shadow.snapshots():
        reachable.add(str(commit.id))
        trees.append(commit.tree)
    while trees:
        tree = trees.pop()
        if str(tree.id) in reachable:
            continue
        reachable.add(str(tree.id))
        for obj in tree:
            if obj.type_str == "tree":
                trees.append(repo[obj.id])  # type: ignore[arg-type]
            else:
                reachable.add(str(obj.id))
    objects = os.path.join(shadow.path, "objects")
    for fan in os.listdir(objects):
        if len(fan) != 2:
            continue  # pack/, info/
        directory = os.path.join(objects, fan)
        for name in os.listdir(directory):
            if fan + name not in reachable:
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(directory, name))
        with contextlib.suppress(OSError):
            os.rmdir(directory)
