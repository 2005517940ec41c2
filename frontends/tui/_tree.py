"""The session/branch navigator (/tree): the session's branches as a tree to walk with
the keyboard. Enter goes to the node's point in the session (the app selects it as the
leaf), Escape closes; it owns focus while open.

Nodes are built only when their branch is opened (see _branches): the path to the
selected entry is opened at the start and the cursor put on it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from smith.text import inert

from ._branches import BranchMap, Spot, label
from ._screens import OVERLAY_CSS

if TYPE_CHECKING:
    from smith.runtime import SessionTree

HINT = "↑↓ move · Enter go there · → or Space open · ← close · Esc cancel"
CURRENT = "● "  # marks the node holding the selected entry


class BranchTree(Tree[Spot]):
    """Textual's Tree with arrow keys to open and close branches."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "open_node", "open", show=False),
        Binding("left", "close_node", "close", show=False),
    ]

    def action_open_node(self) -> None:
        node = self.cursor_node
        if node is not None and node.allow_expand and not node.is_expanded:
            node.expand()

    def action_close_node(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded and node.allow_expand and not node.is_root:
            node.collapse()
        elif node.parent is not None and not node.parent.is_root:
            self.move_cursor(node.parent)


class TreeScreen(ModalScreen[str | None]):
    """Pick a point of the session: an entry id, or None (Escape)."""

    DEFAULT_CSS = (
        OVERLAY_CSS.format(name="TreeScreen")
        + """
    TreeScreen > Vertical { height: 90%; }
    TreeScreen BranchTree { height: 1fr; max-height: 100%; background: $surface; }
    TreeScreen .hint { color: $text-muted; padding-top: 1; }
    """
    )
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, tree: SessionTree) -> None:
        super().__init__()
        self.map = BranchMap(tree)
        self.session_name = tree.name or tree.id
        self._loaded: set[int] = set()  # ids of the tree nodes whose children are built

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("Branches of this session", classes="title", markup=False)
            yield BranchTree(Text(inert(self.session_name), style="bold"))
            yield Static(HINT, classes="hint", markup=False)

    @property
    def branch_tree(self) -> BranchTree:
        return self.query_one(BranchTree)

    def on_mount(self) -> None:
        tree = self.branch_tree
        tree.root.expand()
        for start in self.map.roots:
            self._add_run(tree.root, start)
        self._loaded.add(tree.root.id)
        here = self._open_path()
        tree.focus()
        _ = tree.last_line  # lay the lines out, so the nodes know their lines
        tree.move_cursor(here or tree.root)

    def _open_path(self) -> TreeNode[Spot] | None:
        """Open the runs on the way to the selected entry; its node (a turn if it is in
        one, else its run)."""
        found: TreeNode[Spot] | None = None
        level = self.branch_tree.root
        while True:
            runs = (c for c in level.children if c.data and c.data.kind == "run")
            run = next((c for c in runs if c.data and self.map.on_path(c.data.index)), None)
            if run is None or run.data is None:
                return found
            found = run
            self._load(run)
            run.expand()
            end, _ = self.map.end(run.data.index)
            if self.map.holds_leaf(run.data.index, end):
                return self._leaf_turn(run) or run
            level = run

    def _leaf_turn(self, run: TreeNode[Spot]) -> TreeNode[Spot] | None:
        """The turn node holding the selected entry, loading older pages to reach it."""
        while True:
            for node in run.children:
                spot = node.data
                if spot and spot.kind == "turn" and self.map.holds_leaf(spot.index, spot.target):
                    return node
            more = next((c for c in run.children if c.data and c.data.kind == "more"), None)
            if more is None:
                return None
            self._load_older(more)

    # -- building ----------------------------------------------------------------------

    def _add_run(self, parent: TreeNode[Spot], start: int) -> None:
        m = self.map
        end, length = m.end(start)
        forks = len(m.branches(start))
        text = Text()
        if m.holds_leaf(start, end):
            text.append(CURRENT, style="bold green")
        text.append(f"⎇ {label(m.prompt(start))}", style="bold" if m.on_path(start) else "")
        more = f" · {forks} branches" if forks else ""
        text.append(f"  {length:,} {'entry' if length == 1 else 'entries'}{more}", style="dim")
        parent.add(text, Spot("run", start, m.newest(start)), allow_expand=length > 1 or forks > 0)

    def _turn_label(self, spot: Spot) -> Text:
        text = Text()
        if self.map.holds_leaf(spot.index, spot.target):
            text.append(CURRENT, style="bold green")
        text.append("you ", style="bold cyan")
        text.append(label(spot.text))
        return text

    def _load(self, node: TreeNode[Spot]) -> None:
        """Build a run's children once: its newest turns, then the branches after it."""
        spot = node.data
        if node.id in self._loaded or spot is None or spot.kind != "run":
            return
        self._loaded.add(node.id)
        end, _ = self.map.end(spot.index)
        turns, older = self.map.turns(spot.index, end)
        if older is not None:
            node.add_leaf(Text("… older turns (Enter shows them)", style="dim italic"),
                          Spot("more", older, -1, spot.index))  # fmt: skip
        for turn in turns:
            node.add_leaf(self._turn_label(turn), turn)
        for start in self.map.branches(spot.index):
            self._add_run(node, start)

    def _load_older(self, more: TreeNode[Spot]) -> TreeNode[Spot] | None:
        """Replace the "older turns" node by the page of turns it stands for (and a new
        one for those older still); the newest of them."""
        spot, parent = more.data, more.parent
        if spot is None or parent is None:
            return None
        turns, older = self.map.turns(spot.run, spot.index)
        added = [parent.add_leaf(self._turn_label(t), t, before=more) for t in turns]
        if older is not None:
            parent.add_leaf(more.label, Spot("more", older, -1, spot.run), before=added[0])
        more.remove()
        return added[-1] if added else None

    # -- keys --------------------------------------------------------------------------

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Spot]) -> None:
        self._load(event.node)

    def on_tree_node_selected(self, event: Tree.NodeSelected[Spot]) -> None:
        spot = event.node.data
        if spot is None:
            return
        if spot.kind == "more":
            newest = self._load_older(event.node)
            tree = self.branch_tree
            _ = tree.last_line
            tree.move_cursor(newest)
            return
        self.dismiss(self.map.id(spot.target))

    def action_cancel(self) -> None:
        self.dismiss(None)
