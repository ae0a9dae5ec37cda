// node:crypto's randomUUID for the Worker (display ids, comm ids): the Web Crypto one.
export const randomUUID = (): string => crypto.randomUUID();
