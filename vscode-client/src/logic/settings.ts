/** Settings -> `initializationOptions` / `didChangeConfiguration` of docs/lsp.md. */

export interface LaminaSettings {
  python: string;
  indexDirectory: string;
  ignore: string[];
  budget: number;
  packetMode: 'summary' | 'standard' | 'full';
  rankedLenses: boolean;
  topK: number;
  /** How Show Packet opens the packet: the rendered markdown preview, or its markdown source. */
  packetView: 'preview' | 'source';
  /** The history leg's bound; null: the server's environment, else its default (docs/lsp.md). */
  historyMaxCommits: number | null;
  historyMaxYears: number | null;
}

export const DEFAULTS: LaminaSettings = {
  python: '', indexDirectory: '', ignore: [], budget: 8000, packetMode: 'standard', rankedLenses: true, topK: 10, packetView: 'preview',
  historyMaxCommits: null, historyMaxYears: null,
};

export type Getter = <K extends keyof LaminaSettings>(key: K) => LaminaSettings[K] | undefined;

export function readSettings(get: Getter): LaminaSettings {
  const out = { ...DEFAULTS };
  for (const k of Object.keys(DEFAULTS) as (keyof LaminaSettings)[]) {
    const v = get(k);
    if (v !== undefined && v !== null) (out as Record<string, unknown>)[k] = v;
  }
  if (!['summary', 'standard', 'full'].includes(out.packetMode)) out.packetMode = 'standard';
  if (!['preview', 'source'].includes(out.packetView)) out.packetView = 'preview';
  out.budget = clampInt(out.budget, 1, 10_000_000, DEFAULTS.budget);
  out.topK = clampInt(out.topK, 1, 200, DEFAULTS.topK);
  out.ignore = Array.isArray(out.ignore) ? out.ignore.filter((g) => typeof g === 'string' && g.trim() !== '') : [];
  out.historyMaxCommits = out.historyMaxCommits === null ? null : clampInt(out.historyMaxCommits, 1, 1_000_000, 20_000);
  out.historyMaxYears = out.historyMaxYears === null ? null : clampNumber(out.historyMaxYears, 0, 100, 5);
  return out;
}

function clampNumber(v: unknown, lo: number, hi: number, dflt: number): number {
  const n = typeof v === 'number' && Number.isFinite(v) ? v : dflt;
  return Math.min(hi, Math.max(lo, n));
}

function clampInt(v: unknown, lo: number, hi: number, dflt: number): number {
  const n = typeof v === 'number' && Number.isFinite(v) ? Math.round(v) : dflt;
  return Math.min(hi, Math.max(lo, n));
}

/** `executeCommands: false`: this client registers its own `lamina.*` commands and calls `lamina/<name>`. */
export function initializationOptions(s: LaminaSettings): Record<string, unknown> {
  const o: Record<string, unknown> = {
    budget: s.budget, mode: s.packetMode, topK: s.topK, rankedLenses: s.rankedLenses, executeCommands: false,
  };
  if (s.indexDirectory.trim()) o['indexDir'] = s.indexDirectory.trim();
  if (s.ignore.length) o['ignore'] = s.ignore;
  if (s.historyMaxCommits !== null) o['historyMaxCommits'] = s.historyMaxCommits;
  if (s.historyMaxYears !== null) o['historyMaxYears'] = s.historyMaxYears;
  return o;
}

/** The part the server changes at run time. */
export function runtimeSettings(s: LaminaSettings): { lamina: { budget: number; mode: string; topK: number; rankedLenses: boolean } } {
  return { lamina: { budget: s.budget, mode: s.packetMode, topK: s.topK, rankedLenses: s.rankedLenses } };
}

/** Settings whose change needs a new server process. */
export const RESTART_KEYS: (keyof LaminaSettings)[] = ['python', 'indexDirectory', 'ignore', 'historyMaxCommits', 'historyMaxYears'];
export const RUNTIME_KEYS: (keyof LaminaSettings)[] = ['budget', 'packetMode', 'rankedLenses', 'topK'];
