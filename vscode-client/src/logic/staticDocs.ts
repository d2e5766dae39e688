/**
 * The texts of one-off markdown documents (a prepared packet, status details), bounded.
 *
 * Each Prepare Packet for a new task and each Show Details makes a document of its own, and a
 * content provider must answer for it as long as VS Code may ask (an editor or a preview shows
 * it, or it is reopened). Kept forever, a long session held every packet ever prepared. Only the
 * newest `keep` texts are held unless a tab still shows an older one; a document asked for after
 * it was let go says how to get it back instead of showing an empty page.
 */

/** How many one-off documents are held when no tab shows them. */
export const KEEP_STATIC_DOCS = 16;

export const RELEASED_TEXT = '# No longer kept\n\nLamina keeps the newest one-off documents only. Run the command that opened this one again (Prepare Packet, or Show Details in the status).\n';

export class StaticDocs {
  /** Insertion order is age: `put` moves a document to the newest end. */
  private readonly texts = new Map<string, string>();

  constructor(private readonly keep = KEEP_STATIC_DOCS) {}

  get size(): number { return this.texts.size; }

  /** The text for a document, or the note that it was let go. */
  text(uri: string): string { return this.texts.get(uri) ?? RELEASED_TEXT; }

  /** Holds `text` as the newest, then lets go of the oldest documents beyond `keep` that no tab
   * shows (`shown`); returns the ones let go. */
  put(uri: string, text: string, shown: (uri: string) => boolean): string[] {
    this.texts.delete(uri);
    this.texts.set(uri, text);
    const dropped: string[] = [];
    let excess = this.texts.size - this.keep;
    for (const old of this.texts.keys()) {
      if (excess <= 0 || old === uri) break;
      if (shown(old)) continue;
      this.texts.delete(old);
      dropped.push(old);
      excess -= 1;
    }
    return dropped;
  }
}
