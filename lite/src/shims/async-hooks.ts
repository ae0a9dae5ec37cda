// node:async_hooks' AsyncLocalStorage for the Worker. A browser has no async context tracking; the
// Worker runs one cell at a time, so the store is the running cell's while its synchronous part runs,
// and output written after an await lands on OutputCapture.last, the cell that runs now (the same cell).
export class AsyncLocalStorage<T> {
  private store: T | undefined;
  getStore(): T | undefined {
    return this.store;
  }
  run<R>(store: T, fn: () => R): R {
    const prev = this.store;
    this.store = store;
    try {
      return fn();
    } finally {
      this.store = prev;
    }
  }
}
