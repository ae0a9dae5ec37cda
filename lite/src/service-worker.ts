// GradLab Lite's service worker: the site works offline once it has been loaded. On install it copies
// every file of the site (the list `gradlab lite build` writes into it, __GRADLAB_PRECACHE__) into a
// cache named after the site's folder and the build's content hash; then it answers the site's
// requests (the page's, the kernel Worker's: worker.js, esbuild.wasm, check.ts) from that cache and
// goes to the network only for what the build did not make. A republished site has another hash, so
// the browser installs the new worker, which fetches the new files and drops the old cache.
// Every response it gives carries the headers of cross-origin isolation (see isolated()).
// The notebooks a student edits are not here: JupyterLite keeps them in IndexedDB.
// Hand-written rather than Workbox: a fixed list, cache-first, ~50 lines, no runtime dependency.

/** Site files, relative to the site's root (this file's folder); "" is the root's index.html. */
declare const __GRADLAB_PRECACHE__: string[];
/** A hash of every file's path and content. */
declare const __GRADLAB_BUILD__: string;

// The service worker scope's types (lib "WebWorker" clashes with "DOM", which the rest of lite/ uses).
interface ExtendableEvent extends Event {
  waitUntil(p: Promise<unknown>): void;
}
interface FetchEvent extends ExtendableEvent {
  readonly request: Request;
  respondWith(r: Response | Promise<Response>): void;
}
interface ServiceWorkerScope {
  readonly registration: { readonly scope: string };
  skipWaiting(): Promise<void>;
  readonly clients: { claim(): Promise<void> };
  addEventListener(type: "install" | "activate", fn: (e: ExtendableEvent) => void): void;
  addEventListener(type: "fetch", fn: (e: FetchEvent) => void): void;
}
const sw = self as unknown as ServiceWorkerScope;

const scope = sw.registration.scope; // the site's root URL, ending in "/"
// caches are shared by the whole origin: two courses published in two folders keep theirs apart
const prefix = `gradlab-lite ${scope} `;
const cacheName = prefix + __GRADLAB_BUILD__;

sw.addEventListener("install", (e) => {
  // cache: "reload": the files themselves, not what the HTTP cache kept of a former version
  const requests = __GRADLAB_PRECACHE__.map((p) => new Request(new URL(p, scope), { cache: "reload" }));
  e.waitUntil(
    caches
      .open(cacheName)
      .then((c) => c.addAll(requests))
      .then(() => sw.skipWaiting()),
  );
});

sw.addEventListener("activate", (e) => {
  e.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith(prefix) && k !== cacheName).map((k) => caches.delete(k))))
      .then(() => sw.clients.claim()), // the page that installed it is served offline too, without a reload
  );
});

/** Cross-origin isolation, which a plain static host does not give and a service worker can: with it
 *  the page and the kernel's Worker share memory (SharedArrayBuffer), so an interrupt reaches a
 *  synchronous loop and input() can wait for the student's answer, as in the server kernel. The site
 *  loads nothing from other origins, so requiring CORP costs nothing. A document is isolated when it
 *  loads, so the page that installed this worker is not: the next visit (or a reload) is. */
function isolated(res: Response): Response {
  if (res.type === "opaque" || res.status === 0) return res;
  const headers = new Headers(res.headers);
  headers.set("Cross-Origin-Opener-Policy", "same-origin");
  headers.set("Cross-Origin-Embedder-Policy", "require-corp");
  headers.set("Cross-Origin-Resource-Policy", "same-origin");
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

sw.addEventListener("fetch", (e) => {
  const req = e.request;
  if (req.method !== "GET" || !req.url.startsWith(scope)) return;
  e.respondWith(
    // the query is not part of a static file's name (lab/index.html?path=01_dynamic_graph.ipynb)
    caches
      .match(req, { cacheName, ignoreSearch: true })
      .then((hit) => hit ?? fetch(req))
      .then(isolated),
  );
});
