// Control while busy: what the socket thread answers itself on the control channel, at once, whatever
// the main thread is doing (a cell in `while (true) {}` included). A table: each entry answers one
// type and says whether it is done with the message (then its idle status follows). Any type not in
// the table (debug_request, unknown ones) goes to the main thread's queue and handlers.
import type { KernelMessage } from "@jupyterlab/services";
import type { Message } from "../wire/message.ts";
import type { Replies, ReplyType } from "../wire/protocol.ts";
import type { KernelInfo } from "../info.ts";
import { dateMicros } from "./shared.ts";

type ControlType = KernelMessage.ControlMessageType | "kernel_info_request" | "shutdown_request";
type Answer = (msg: Message) => boolean;

/** What the table's entries act through (the socket thread's sockets and shared memory). */
export interface ControlDeps {
  reply<T extends ReplyType>(req: Message, type: T, content: Replies[T]): void;
  /** interrupts the running cell, unless the interrupt is for an earlier one (see control-worker.ts) */
  interrupt(when?: { requestedUs?: number; session?: string }): void;
  /** resolves once the replies sent so far have left */
  flushed(): Promise<void>;
  /** tells the main thread to shut down */
  shutdown(restart: boolean): void;
  kernelInfo: KernelInfo;
}

export function controlTable(d: ControlDeps): Partial<Record<ControlType, Answer>> {
  return {
    interrupt_request(msg) {
      const requestedUs = dateMicros(msg.header.date);
      d.interrupt(Number.isFinite(requestedUs) ? { requestedUs, session: msg.header.session } : {});
      d.reply(msg, "interrupt_reply", { status: "ok" });
      return true;
    },
    kernel_info_request(msg) {
      d.reply(msg, "kernel_info_reply", d.kernelInfo);
      return true;
    },
    shutdown_request(msg) {
      const restart = !!msg.content?.restart;
      d.reply(msg, "shutdown_reply", { status: "ok", restart });
      // the reply leaves first; then the running cell is stopped and the main thread told
      void d.flushed().then(() => {
        d.interrupt();
        d.shutdown(restart);
      });
      // no idle: the kernel is going away (the main thread publishes shutdown_reply on iopub)
      return false;
    },
  };
}

/** The table's answer for a msg_type; own entries only ("constructor" is not a control type). */
export function answerFor(table: Partial<Record<ControlType, Answer>>, type: string): Answer | undefined {
  return Object.hasOwn(table, type) ? table[type as ControlType] : undefined;
}
