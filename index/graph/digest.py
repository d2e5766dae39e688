"""GraphVersion: a digest of the graph's meaning, not of its files' bytes.

The digest covers a canonical encoding (msgspec JSON, keys and struct fields
sorted, default-valued fields omitted) of every node. Reformatting YAML,
editing comments, reordering nodes or moving them between files leaves it
unchanged; any change a reader of the graph could observe (a title, an alias,
the order of operations) changes it. Source locations are excluded.
"""

from __future__ import annotations

import hashlib

import msgspec

from index.graph.schema import NODE_KINDS, Graph

GRAPH_FORMAT = "lamina.graph/1"


def graph_version(graph: Graph) -> str:
    content = {kind: getattr(graph, kind) for kind in NODE_KINDS}
    payload = msgspec.json.encode(content, order="sorted")
    return hashlib.sha256(GRAPH_FORMAT.encode() + b"\n" + payload).hexdigest()
