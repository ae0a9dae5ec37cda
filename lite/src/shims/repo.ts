// kernel/repo.ts for the Worker: GradLab's root is the site's gradlab/ folder, where this bundle is
// gradlab/dist/worker.js, so kernel/executor/errors.ts's "frames under REPO/dist/ are GradLab's own,
// never shown" holds in the browser as it does for the built kernel in Node.
export const FROM_SOURCE = false;
export const REPO: string = new URL("..", self.location.href).href.replace(/\/$/, "");
export const RUNTIME_MODULE = "gradlab";
