/** The side panel's WebviewView: hosts media/panel.js (the renderer) and relays its messages. */
import * as vscode from 'vscode';
import { makeNonce, panelHtml } from './panel/html';
import type { FromPanel, PanelState, ToPanel } from './panel/messages';

export const PANEL_VIEW_ID = 'lamina.panel';

export class PanelView implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private pendingReveal: string | undefined;
  private last: PanelState | undefined;

  constructor(private readonly extensionUri: vscode.Uri, private readonly onMessage: (m: FromPanel) => void) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = panelHtml({
      cspSource: view.webview.cspSource,
      nonce: makeNonce(),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, 'panel.js')).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, 'panel.css')).toString(),
    });
    view.webview.onDidReceiveMessage((m: FromPanel) => {
      if (m.type === 'ready') {
        if (this.last) this.post({ type: 'state', state: this.last });
        if (this.pendingReveal) { this.post({ type: 'reveal', id: this.pendingReveal }); this.pendingReveal = undefined; }
      }
      this.onMessage(m);
    });
    view.onDidDispose(() => { this.view = undefined; });
  }

  setState(state: PanelState): void {
    this.last = state;
    this.post({ type: 'state', state });
  }

  reveal(id: string): void {
    if (!this.view) { this.pendingReveal = id; return; }
    this.view.show?.(true);
    this.post({ type: 'reveal', id });
  }

  private post(m: ToPanel): void { void this.view?.webview.postMessage(m); }
}
