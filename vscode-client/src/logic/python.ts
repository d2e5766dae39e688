/**
 * Which Python runs the server: the `lamina.python` setting, else the Python extension's active
 * interpreter, else `python3` on PATH. Pure logic: the caller supplies the sources and the runner.
 */

export interface PythonChoice {
  command: string;
  source: 'setting' | 'python-extension' | 'path';
}

export function choosePython(setting: string | undefined, extensionInterpreter: string | undefined): PythonChoice {
  const s = (setting ?? '').trim();
  if (s) return { command: s, source: 'setting' };
  const e = (extensionInterpreter ?? '').trim();
  if (e) return { command: e, source: 'python-extension' };
  return { command: 'python3', source: 'path' };
}

export function describeChoice(c: PythonChoice): string {
  switch (c.source) {
    case 'setting': return `${c.command} (setting lamina.python)`;
    case 'python-extension': return `${c.command} (the Python extension's active interpreter)`;
    default: return `${c.command} (on PATH)`;
  }
}

/** The server process: `lamina serve` through the chosen interpreter, so no console script is needed on PATH. */
export const SERVE_ARGS = ['-c', 'import sys; from lsp_server.cli import main; sys.exit(main(["serve"]))'];
export const IMPORT_CHECK_ARGS = ['-c', 'import lsp_server, index; print(lsp_server.__file__)'];

export interface RunResult { code: number | null; stdout: string; stderr: string; error?: string }
export type Runner = (command: string, args: string[], timeoutMs: number) => Promise<RunResult>;

export type ImportCheck =
  | { ok: true; location: string }
  | { ok: false; reason: 'python-missing' | 'lamina-missing' | 'failed'; detail: string };

/** Runs `python -c "import lsp_server"`: tells a missing interpreter from a missing Lamina. */
export async function checkImportable(python: PythonChoice, run: Runner, timeoutMs = 30000): Promise<ImportCheck> {
  const r = await run(python.command, IMPORT_CHECK_ARGS, timeoutMs);
  if (r.error) {
    return { ok: false, reason: 'python-missing', detail: `cannot run ${describeChoice(python)}: ${r.error}` };
  }
  if (r.code === 0) return { ok: true, location: r.stdout.trim() };
  const err = r.stderr.trim();
  if (/ModuleNotFoundError|No module named/.test(err)) {
    return { ok: false, reason: 'lamina-missing', detail: `Lamina is not installed for ${describeChoice(python)}: ${lastLine(err)}` };
  }
  return { ok: false, reason: 'failed', detail: `${describeChoice(python)} exited ${r.code}: ${lastLine(err)}` };
}

function lastLine(s: string): string {
  const lines = s.split(/\r?\n/).filter((l) => l.trim());
  return lines.length ? lines[lines.length - 1]! : '(no output)';
}

/**
 * A Lamina checkout whose `scripts/setup.sh` can make a Python with Lamina: the parent of the
 * interpreter's venv (`<checkout>/.venv/bin/python`), a workspace folder that is one, or the parent
 * of a development extension (`<checkout>/vscode-client`). Undefined when none is known: a
 * "Run Setup" in the user's own project would only fail with "No such file or directory".
 */
export function setupCheckout(python: string, folders: string[], extensionDir: string, exists: (p: string) => boolean): string | undefined {
  const parent = (p: string): string => p.replace(/[\\/]+$/, '').replace(/[\\/][^\\/]*$/, '');
  const candidates: string[] = [];
  if (/[\\/]bin[\\/]python[\d.]*(\.exe)?$/i.test(python) || /[\\/]Scripts[\\/]python(\.exe)?$/i.test(python)) candidates.push(parent(parent(parent(python))));
  candidates.push(...folders, parent(extensionDir));
  return candidates.find((c) => c !== '' && exists(`${c}/scripts/setup.sh`) && exists(`${c}/lsp_server`));
}
