import { test } from 'node:test';
import assert from 'node:assert/strict';
import { groupSpans, entryLabel } from '../../src/panel/render';
import type { Span } from '../../src/protocol';

const span = (id: string, file: string, symbol: string, start: number, end: number, continues?: string): Span =>
  ({ id, file, symbol, kind: 'function', start_line: start, end_line: end, score: 1, reasons: ['bm25 symbol: x'], authority: 'declared', ...(continues ? { continues } : {}) });
const shape = (spans: Span[]): string[][] => groupSpans(spans).map((e) => e.spans.map((s) => s.id));

test('span groups: the later chunks of one declared symbol fold into its first chunk, in rank order', () => {
  const groups = groupSpans([
    span('a', 'p/r.py', 'Policy.ok', 23, 38),
    span('b1', 'p/r.py', 'Service.refund', 56, 78),
    span('b2', 'p/r.py', 'Service.refund', 76, 88, 'b1'),
    span('c', 'p/g.py', 'Gateway.refund', 84, 93),
  ]);
  assert.deepEqual(groups.map((e) => e.spans.map((s) => s.id)), [['a'], ['b1', 'b2'], ['c']]);
  assert.equal(groups[1]!.head.id, 'b1');
  assert.equal(entryLabel(groups[1]!), 'p/r.py:56-88');
  assert.equal(entryLabel(groups[0]!), 'p/r.py:23-38');
});

test('span groups: not adjacent, three chunks, or a continuation ranked before its first chunk', () => {
  const groups = groupSpans([
    span('x3', 'f.py', 'Big.run', 100, 130, 'x1'),
    span('o', 'g.py', 'other', 1, 2),
    span('x1', 'f.py', 'Big.run', 10, 60),
    span('x2', 'f.py', 'Big.run', 58, 102, 'x1'),
  ]);
  assert.deepEqual(groups.map((e) => e.spans.map((s) => s.id)), [['x1', 'x2', 'x3'], ['o']], 'the entry keeps its best rank, chunks in line order');
  assert.equal(groups[0]!.head.id, 'x1', 'it opens the first chunk');
  assert.deepEqual([groups[0]!.startLine, groups[0]!.endLine], [10, 130]);
});

test('span groups: only `continues` folds, and only onto a listed span', () => {
  // same file and symbol, overlapping, adjacent: two retrieved hits
  assert.deepEqual(shape([span('r1', 'f.py', 'S', 1, 30), span('r2', 'f.py', 'S', 28, 50)]), [['r1'], ['r2']]);
  // its first chunk is not in the packet (an agent excluded it): an entry of its own
  const orphan = groupSpans([span('k', 'f.py', 'S', 40, 60, 'gone')]);
  assert.deepEqual(orphan.map((e) => [e.head.id, e.spans.length]), [['k', 1]]);
  assert.deepEqual(groupSpans([]), []);
});
