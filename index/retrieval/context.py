"""What every stage of one search may read besides the plan: the store, the dense leg, the config,
and facts the index membership implies, computed once per index generation."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from index.ranking import RankingConfig, module_words, vendored_roots
from index.retrieval.paths import PathSuffixIndex
from index.store import Store

if TYPE_CHECKING:  # the dense leg pulls in numpy / onnxruntime: only the dense legs touch it
    from index.change_refs import ChangeRef, NamedChange
    from index.code_graph import WorkspaceGraph
    from index.dense import DenseLeg
    from index.history import FileVotes

# The history leg's source (index.engine owns the history index): query text, today's paths,
# whether to read the symbols the best commits touched and the text whose vector finds commits
# by meaning ("" for none) -> the files (and symbols) past commits vote for, or None when the
# workspace has no usable history.
HistoryVoter = Callable[[str, Collection[str], bool, str], "FileVotes | None"]
# The code graph's source (index.engine owns the code-graph store): the synced workspace graph, or
# None when there is none yet or a sync holds it (a query never waits: the graph signal is then off).
CodeGraphSource = Callable[[], "WorkspaceGraph | None"]
# Renames the history knows (index.engine owns the history index): today's workspace paths -> paths
# that no longer exist -> today's path they became; empty without a synced history.
MovedSource = Callable[[Collection[str]], Mapping[str, str]]
# Changes a report names (index.engine owns the history index): its refs and today's paths -> the
# reachable commits they name, with what those changed; empty without a synced history.
NamedSource = Callable[[Sequence["ChangeRef"], Collection[str]], "list[NamedChange]"]

T = TypeVar("T")
_GEN_CACHE: weakref.WeakKeyDictionary[Store, dict[str, tuple[int, Any]]] = weakref.WeakKeyDictionary()


def per_generation(store: Store, generation: int, name: str, build: Callable[[], T]) -> T:
    """`build()` once per store and index generation: what the membership implies, reused until it changes."""
    slot = _GEN_CACHE.setdefault(store, {})
    got = slot.get(name)
    if got is None or got[0] != generation:
        got = slot[name] = (generation, build())
    return got[1]


class RetrievalContext:
    """The index side of one search (read-only): store, dense leg, generation, ranking config."""

    def __init__(
        self,
        store: Store,
        dense: DenseLeg | None,
        generation: int,
        cfg: RankingConfig,
        history: HistoryVoter | None = None,
        code_graph: CodeGraphSource | None = None,
        moved: MovedSource | None = None,
        named: NamedSource | None = None,
    ) -> None:
        self.store = store
        self.dense = dense
        self.generation = generation
        self.cfg = cfg
        self.history = history
        self.code_graph = code_graph
        self.moved = moved
        self.named = named
        self._moved_index: tuple[Mapping[str, str], PathSuffixIndex] | None = None

    def cached(self, name: str, build: Callable[[], T]) -> T:
        return per_generation(self.store, self.generation, name, build)

    def suffix_index(self) -> PathSuffixIndex:
        return self.cached("suffix", lambda: PathSuffixIndex(self.store.member_paths()))

    def moved_paths(self) -> tuple[Mapping[str, str], PathSuffixIndex]:
        """Vanished paths -> today's (the history's renames, `analyser.follow_renames`), and a suffix
        index over the vanished ones for frames from another machine; once per search."""
        if self._moved_index is None:
            moved: Mapping[str, str] = {}
            if self.cfg.analyser.follow_renames and self.moved is not None:
                moved = self.moved(self.member_paths())
            self._moved_index = (moved, PathSuffixIndex(sorted(moved), min_components=2))
        return self._moved_index

    def member_paths(self) -> frozenset[str]:
        return self.cached("member_paths", lambda: frozenset(self.store.member_paths()))

    def module_words(self) -> frozenset[str]:
        vendored = self.vendored()  # a variant with the rule off must not read the cache of one with it on
        return self.cached(
            f"module_words:{sorted(vendored)}", lambda: module_words(self.store.member_paths(), vendored)
        )

    def vendored(self) -> frozenset[str]:
        """Folders holding another project's release (ranking.vendored_roots), or none when the rule is off."""
        if not self.cfg.priors.nested_releases:
            return frozenset()

        def build() -> frozenset[str]:
            inits = sorted(p for p in self.member_paths() if p.rsplit("/", 1)[-1] == "__init__.py")
            return vendored_roots(inits, self.store.texts_mentioning(inits, "__version__"))

        return self.cached("vendored", build)

    @property
    def dense_ok(self) -> bool:
        return self.dense is not None and self.dense.available
