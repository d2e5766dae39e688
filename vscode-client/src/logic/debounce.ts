/** One pending call at a time: repeated triggers within `ms` collapse into the last one. */
export function debounce<A extends unknown[]>(fn: (...args: A) => void, ms: number,
  timers: { set: typeof setTimeout; clear: typeof clearTimeout } = { set: setTimeout, clear: clearTimeout }) {
  let handle: ReturnType<typeof setTimeout> | undefined;
  const call = (...args: A): void => {
    if (handle !== undefined) timers.clear(handle);
    handle = timers.set(() => { handle = undefined; fn(...args); }, ms);
  };
  call.cancel = (): void => { if (handle !== undefined) timers.clear(handle); handle = undefined; };
  call.pending = (): boolean => handle !== undefined;
  return call;
}
