// A tiny observable store: reducer + subscribers. Enough for a bookshop, no framework needed.

export type Reducer<S, A> = (state: S, action: A) => S;
export type Listener<S> = (state: S, previous: S) => void;

export interface Store<S, A> {
  getState(): S;
  dispatch(action: A): void;
  subscribe(listener: Listener<S>): () => void;
}

export function createStore<S, A>(reducer: Reducer<S, A>, initial: S): Store<S, A> {
  let state = initial;
  const listeners = new Set<Listener<S>>();
  let dispatching = false;

  return {
    getState: () => state,
    dispatch(action: A) {
      if (dispatching) throw new Error("reducers may not dispatch actions");
      const previous = state;
      dispatching = true;
      try {
        state = reducer(state, action);
      } finally {
        dispatching = false;
      }
      if (state !== previous) listeners.forEach((listener) => listener(state, previous));
    },
    subscribe(listener: Listener<S>) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export function persistTo<S>(store: Store<S, unknown>, key: string, storage: Pick<Storage, "setItem">): () => void {
  return store.subscribe((state) => storage.setItem(key, JSON.stringify(state)));
}
