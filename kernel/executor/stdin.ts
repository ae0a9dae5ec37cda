// input() and prompt() block the cell's thread until the frontend answers: the server kernel's main
// thread (its control worker writes the reply) and GradLab Lite's Worker (the page writes it) wait the
// same way, on two shared words and a byte buffer.
import { InterruptError } from "./errors.ts";

/** ctl[0]: 0 waiting, 1 answered (or nobody waiting), 2 interrupted; ctl[1]: the answer's length in
 *  bytes, in `data` (UTF-8). `ask` sends the input_request; an interrupt raises KeyboardInterrupt. */
export function waitForStdin(ctl: Int32Array, data: Uint8Array, interrupted: () => boolean, ask: () => void): string {
  Atomics.store(ctl, 0, 0);
  // after the reset: an interrupt that lands from now on wakes the wait below, one before it is seen here
  if (interrupted()) {
    Atomics.store(ctl, 0, 1);
    throw new InterruptError();
  }
  ask();
  while (Atomics.load(ctl, 0) === 0) Atomics.wait(ctl, 0, 0, 1000);
  const state = Atomics.load(ctl, 0);
  Atomics.store(ctl, 0, 1);
  // interrupted while waiting: raise at once, so the cell stops here whatever runs after prompt()
  if (state === 2) throw new InterruptError();
  // TextDecoder does not read shared memory: a copy
  return new TextDecoder().decode(data.slice(0, Atomics.load(ctl, 1)));
}
