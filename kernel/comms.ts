// Comms in both directions: targets registered by cells (frontend opens), comms opened by cells.
import { randomUUID } from "node:crypto";
import type { IOPub } from "./wire/protocol.ts";

export type CommHandler = (comm: Comm, openMsg: { data: unknown; metadata: unknown; buffers: Buffer[] }) => void;
type CommType = "comm_open" | "comm_msg" | "comm_close";
/** publishes on iopub, under the parent of the request or cell being handled */
export type Publish = <T extends CommType>(type: T, content: IOPub[T], metadata?: object, buffers?: Buffer[]) => void;

export class Comm {
  private msgHandlers: ((data: any, msg: { metadata: unknown; buffers: Buffer[] }) => void)[] = [];
  private closeHandlers: ((data: any) => void)[] = [];
  closed = false;
  constructor(
    readonly comm_id: string,
    readonly target_name: string,
    private readonly publish: Publish,
    private readonly manager: CommManager,
  ) {}

  send(data: unknown = {}, metadata: object = {}, buffers: Buffer[] = []): void {
    if (this.closed) throw new Error(`comm ${this.comm_id} is closed`);
    this.publish("comm_msg", { comm_id: this.comm_id, data }, metadata, buffers);
  }
  close(data: unknown = {}): void {
    if (this.closed) return;
    this.closed = true;
    this.manager.forget(this.comm_id);
    this.publish("comm_close", { comm_id: this.comm_id, data });
  }
  onMsg(fn: (data: any, msg: { metadata: unknown; buffers: Buffer[] }) => void): this {
    this.msgHandlers.push(fn);
    return this;
  }
  onClose(fn: (data: any) => void): this {
    this.closeHandlers.push(fn);
    return this;
  }
  /** @internal */ deliver(data: unknown, metadata: unknown, buffers: Buffer[]) {
    for (const f of this.msgHandlers) f(data, { metadata, buffers });
  }
  /** @internal */ remoteClose(data: unknown) {
    this.closed = true;
    for (const f of this.closeHandlers) f(data);
  }
}

export class CommManager {
  readonly targets = new Map<string, CommHandler>();
  readonly comms = new Map<string, Comm>();
  /** set by the kernel for each request: publishes on iopub with the current parent */
  publisher: () => Publish = () => () => {};

  /** Runtime API (global `comms`): registerTarget, open, list */
  api() {
    return {
      registerTarget: (name: string, handler: CommHandler) => void this.targets.set(name, handler),
      unregisterTarget: (name: string) => void this.targets.delete(name),
      open: (target_name: string, data: unknown = {}, metadata: object = {}, buffers: Buffer[] = []): Comm => {
        const publish = this.publisher();
        const comm = new Comm(randomUUID().replace(/-/g, ""), target_name, publish, this);
        this.comms.set(comm.comm_id, comm);
        publish("comm_open", { comm_id: comm.comm_id, target_name, data }, metadata, buffers);
        return comm;
      },
      list: () => [...this.comms.values()],
    };
  }

  forget(id: string) {
    this.comms.delete(id);
  }

  /** comm_open from the frontend; returns false when no such target (the caller then closes it). */
  open(content: any, metadata: unknown, buffers: Buffer[]): boolean {
    const handler = this.targets.get(content.target_name);
    if (!handler) return false;
    const comm = new Comm(content.comm_id, content.target_name, this.publisher(), this);
    this.comms.set(comm.comm_id, comm);
    handler(comm, { data: content.data, metadata, buffers });
    return true;
  }

  msg(content: any, metadata: unknown, buffers: Buffer[]): boolean {
    const c = this.comms.get(content.comm_id);
    if (!c) return false;
    c.deliver(content.data, metadata, buffers);
    return true;
  }

  close(content: any): boolean {
    const c = this.comms.get(content.comm_id);
    if (!c) return false;
    this.comms.delete(content.comm_id);
    c.remoteClose(content.data);
    return true;
  }

  info(target?: string): Record<string, { target_name: string }> {
    const out: Record<string, { target_name: string }> = {};
    for (const c of this.comms.values()) if (!target || c.target_name === target) out[c.comm_id] = { target_name: c.target_name };
    return out;
  }
}
