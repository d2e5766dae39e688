/**
 * `lamina-packet:` read-only documents: the current task's packet as markdown (refreshed on
 * `lamina/packetChanged`), and one-off markdown (Prepare Packet, status details).
 */
import * as vscode from 'vscode';
import * as path from 'path';
import { StaticDocs } from './logic/staticDocs';
import { previewedName } from './logic/previewKeepalive';

export const PACKET_SCHEME = 'lamina-packet';

/** `lamina-packet:/<folder name>/Lamina Packet (<folder name>).md?<folder uri>`: a readable tab title,
 * and one per folder (a preview tab shows only the file name, by which Show Packet finds and
 * replaces the preview it opened; one name for all folders replaced another folder's). */
export function packetUri(folder: string): vscode.Uri {
  const name = decodeURIComponent(folder.replace(/\/+$/, '').split('/').pop() || 'workspace');
  return vscode.Uri.from({ scheme: PACKET_SCHEME, path: `/${name}/Lamina Packet (${name}).md`, query: folder });
}

export function markdownUri(name: string): vscode.Uri {
  return vscode.Uri.from({ scheme: PACKET_SCHEME, path: `/${name}.md`, query: 'static' });
}

export class PacketDocuments implements vscode.TextDocumentContentProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly fixed = new StaticDocs();

  constructor(private readonly markdownOf: (folder: string) => Promise<string>) {}

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> | string {
    if (uri.query === 'static') return this.fixed.text(uri.toString());
    return this.markdownOf(uri.query);
  }

  put(uri: vscode.Uri, text: string): void {
    this.fixed.put(uri.toString(), text, shownInTab());
    this.emitter.fire(uri);
  }

  changed(uri: vscode.Uri): void {
    if (vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) this.emitter.fire(uri);
  }

  dispose(): void { this.emitter.dispose(); }
}

function markdownPreviews(): vscode.Tab[] {
  return vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) => t.input instanceof vscode.TabInputWebview && /markdown\.preview/.test(t.input.viewType));
}

/** The file names the open markdown preview tabs show. */
export function previewTabNames(): Set<string> {
  return new Set(markdownPreviews().map((t) => previewedName(t.label)));
}

/** The markdown preview tabs of a document named `name` (a preview's tab says only the file name). */
export function previewTabs(name: string): vscode.Tab[] {
  return markdownPreviews().filter((t) => previewedName(t.label) === name);
}

/** Whether an editor tab or a markdown preview tab (labelled by file name) shows a document. */
function shownInTab(): (uri: string) => boolean {
  const uris = new Set<string>();
  for (const tab of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
    if (tab.input instanceof vscode.TabInputText) uris.add(tab.input.uri.toString());
  }
  const names = previewTabNames();
  return (uri) => uris.has(uri) || names.has(path.posix.basename(vscode.Uri.parse(uri).path));
}
