/**
 * Which packet documents a markdown preview still shows, so the host keeps them open.
 *
 * A preview re-renders on its document's change events, and the packet document only changes
 * while it is open. An editor keeps a document open; a preview does not, and VS Code releases a
 * document an extension opened 3 minutes after (its BoundModelReferenceCollection): the preview
 * then froze on an old packet while the panel moved on. The host opens each previewed document
 * again every minute while a preview tab of it exists, and lets it go once the tab is gone.
 */

/** How often a shown preview's document is opened again: well inside VS Code's 3 minutes. */
export const PREVIEW_KEEPALIVE_MS = 60_000;

/** The file name a markdown preview tab shows (`[Preview] Lamina Packet.md` -> `Lamina Packet.md`). */
export function previewedName(tabLabel: string): string {
  return tabLabel.replace(/^\[[^\]]*\]\s*/, '');
}

/** One tick: the documents (URI strings) to open again, and those whose preview is gone. */
export function keepaliveTick(previewed: Iterable<string>, shownNames: ReadonlySet<string>, nameOf: (uri: string) => string): { reopen: string[]; drop: string[] } {
  const reopen: string[] = [];
  const drop: string[] = [];
  for (const uri of previewed) (shownNames.has(nameOf(uri)) ? reopen : drop).push(uri);
  return { reopen, drop };
}
