/** The webview's script: wires the renderer to the extension through `acquireVsCodeApi`. */
import { createPanel } from './render';
import type { FromPanel, ToPanel } from './messages';

declare function acquireVsCodeApi(): { postMessage(m: unknown): void; setState(s: unknown): void; getState(): unknown };

const api = acquireVsCodeApi();
const post = (m: FromPanel): void => api.postMessage(m);
const root = document.getElementById('root');
if (root) {
  const panel = createPanel(root, post);
  window.addEventListener('message', (e: MessageEvent<ToPanel>) => {
    const m = e.data;
    if (!m || typeof m !== 'object') return;
    if (m.type === 'state') panel.update(m.state);
    else if (m.type === 'reveal') panel.reveal(m.id);
  });
  post({ type: 'ready' });
}
