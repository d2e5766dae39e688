/**
 * `lamina-packet:` read-only documents: the current task's packet as markdown (refreshed on
 * `lamina/packetChanged`), and one-off markdown (Prepare Packet, status details).
 */
import * as vscode from 'vscode';

export const PACKET_SCHEME = 'lamina-packet';

/** `lamina-packet:/<folder name>/packet.md?<folder uri>` (the name makes a readable tab title). */
export function packetUri(folder: string): vscode.Uri {
  const name = decodeURIComponent(folder.replace(/\/+$/, '').split('/').pop() || 'workspace');
  return vscode.Uri.from({ scheme: PACKET_SCHEME, path: `/${name}/Lamina Packet.md`, query: folder });
}

export function markdownUri(name: string): vscode.Uri {
  return vscode.Uri.from({ scheme: PACKET_SCHEME, path: `/${name}.md`, query: 'static' });
}

export class PacketDocuments implements vscode.TextDocumentContentProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly fixed = new Map<string, string>();

  constructor(private readonly markdownOf: (folder: string) => Promise<string>) {}

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> | string {
    if (uri.query === 'static') return this.fixed.get(uri.toString()) ?? '';
    return this.markdownOf(uri.query);
  }

  put(uri: vscode.Uri, text: string): void { this.fixed.set(uri.toString(), text); this.emitter.fire(uri); }

  changed(uri: vscode.Uri): void {
    if (vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) this.emitter.fire(uri);
  }

  dispose(): void { this.emitter.dispose(); }
}
