// node:url for the Worker: kernel/repo.ts derives GradLab's root from its own URL (see repo.ts here).
export const fileURLToPath = (u: string | URL): string => String(u);
export const pathToFileURL = (p: string): URL => new URL(p, self.location.href);
