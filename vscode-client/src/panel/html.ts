/** The panel's HTML page: strict CSP (nonce for the one script, no remote anything). No VS Code API. */

export function makeNonce(rand: () => number = Math.random): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) s += chars.charAt(Math.floor(rand() * chars.length));
  return s;
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `style-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    `img-src ${cspSource}`,
    `font-src ${cspSource}`,
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

export function panelHtml(o: { cspSource: string; nonce: string; scriptUri: string; styleUri: string }): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(o.cspSource, o.nonce)}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${o.styleUri}">
<title>Lamina</title>
</head>
<body>
<main id="root" aria-label="Lamina packet"></main>
<script nonce="${o.nonce}" src="${o.scriptUri}"></script>
</body>
</html>`;
}
