/**
 * The shapes of docs/lsp.md and docs/packet.md that this client reads. Only the fields the client
 * uses are typed; everything else passes through untouched (the packet is copied verbatim).
 */

export interface LspPosition { line: number; character: number }
export interface LspRange { start: LspPosition; end: LspPosition }

export interface WorkflowCandidate {
  workflow_id: string;
  title: string;
  score: number;
  lexical_rank?: number | null;
  dense_rank?: number | null;
  reasons: string[];
}

export interface Selection {
  status: 'selected' | 'multi_workflow' | 'ambiguous' | 'new_workflow_required' | string;
  selected: string[];
  reasons: string[];
  candidates: WorkflowCandidate[];
}

export interface GraphItem { id: string; title: string; text: string; kind: string; steps: string[] }

export interface Operation {
  position: number;
  id: string;
  title: string;
  actor: string;
  authority: string;
  from_state: string;
  to_state: string;
  summary: string;
  implemented_by: string[];
}

export interface WorkflowClosure {
  id: string;
  title: string;
  status: string;
  summary: string;
  defined_at: string;
  operations: Operation[];
  invariants: GraphItem[];
  risks: GraphItem[];
  proof_requirements: GraphItem[];
  [more: string]: unknown;
}

export interface Span {
  id: string;
  file: string;
  symbol: string;
  kind: string;
  start_line: number;
  end_line: number;
  score: number;
  reasons: string[];
  authority?: 'declared' | 'retrieved' | string;
  stale?: boolean;
  stale_reresolved?: boolean;
  declared_by?: string[];
  /** A later chunk of a long declared symbol: the id of its first chunk (one answer, one rank). */
  continues?: string;
  /** The legs that ranked it; none (and score 0) for a declared span this search did not find. */
  legs?: Record<string, { rank: number; score: number }>;
  /** `lamina/search` hits also carry these (LSP, 0-based). */
  uri?: string;
  range?: LspRange;
  [more: string]: unknown;
}

export interface RetrievalInfo {
  retrieval: 'hybrid' | 'hybrid_partial' | 'lexical_degraded' | string;
  generation: number;
  freshness: string;
  pending_embeddings: number;
  notes?: string[];
  [more: string]: unknown;
}

export interface Packet {
  schema: string;
  task: string;
  selection: Selection;
  workflows: WorkflowClosure[];
  span_source: string;
  spans: Span[];
  retrieval: RetrievalInfo;
  graph: { version: string; state: string; problems: unknown[]; warnings: unknown[] };
  budget: { limit: number; used: number; mode: string };
  omitted: { what: string; reason: string; count: number; ids: string[]; tail: string }[];
  notes: string[];
  latency_ms?: number;
  [more: string]: unknown;
}

export type PacketState = 'none' | 'preparing' | 'ready' | 'error' | 'cleared';

export interface LaminaErrorData { code: string; message: string; remedy?: string }

export interface GetPacketResult {
  folder: string;
  task: string;
  packetId?: string | null;
  state: PacketState;
  packet?: Packet | null;
  markdown?: string | null;
  error?: LaminaErrorData | null;
}

export interface PacketChanged {
  folder: string;
  packetId?: string | null;
  task: string;
  state: PacketState;
  outcome?: string | null;
  workflows?: string[];
  spans?: number;
  error?: LaminaErrorData | null;
}

export interface IndexState {
  folder: string;
  generation: number | null;
  files: number;
  chunks: number;
  pending: number;
  retrieval: 'hybrid' | 'hybrid_partial' | 'lexical_degraded' | 'none' | string;
  freshness: 'fresh' | 'syncing' | 'dirty' | 'readonly' | 'no_index' | string;
  mode?: string;
  queued?: number;
  dirty_documents?: number;
  embedding?: boolean | number;
  last_sync_ms?: number | null;
  last_error?: string | null;
  /** The embedding model: `loading` (searches answer on BM25 meanwhile) | `ready` | `unavailable`. */
  model?: 'loading' | 'ready' | 'unavailable' | string;
}

export interface SearchResult { hits: Span[]; retrieval?: string; pending?: number; elapsed_ms?: number; notes?: string[] }

export interface RelevantWorkflow {
  workflow: string;
  title: string;
  status: string;
  uri: string;
  range: LspRange;
  file: string;
  line: number;
  score: number;
  why: string[];
}

export interface RevealedSpan { id: string; rank: number; file: string; symbol: string; uri: string; range: LspRange; stale: boolean }

export interface ShownWorkflow {
  workflow: string;
  title: string;
  status: string;
  summary: string;
  file: string;
  line: number;
  uri?: string;
  range?: LspRange;
  operations: { id: string; title: string; implemented_by: string[] }[];
}

export interface ListedWorkflow { workflow: string; title: string; aliases: string[]; status: string; file: string; line: number; uri?: string }
export interface GraphProblem { file: string; line: number; reason: string; severity: string }
export interface ListWorkflowsResult { workflows: ListedWorkflow[]; problems: GraphProblem[] }

/** The request names of docs/lsp.md, in one place. */
export const Requests = {
  setTask: 'lamina/setTask',
  getPacket: 'lamina/getPacket',
  clearTask: 'lamina/clearTask',
  prepare: 'lamina/prepare',
  selectWorkflow: 'lamina/selectWorkflow',
  search: 'lamina/search',
  goToRelevantWorkflow: 'lamina/goToRelevantWorkflow',
  revealSpan: 'lamina/revealSpan',
  contextStatus: 'lamina/contextStatus',
  contextRebuild: 'lamina/contextRebuild',
  showWorkflow: 'lamina/showWorkflow',
  listWorkflows: 'lamina/listWorkflows',
} as const;

export const Notifications = {
  indexState: 'lamina/indexState',
  packetChanged: 'lamina/packetChanged',
} as const;
