// The GradLab Lite application: JupyterLab 4 with JupyterLite's in-browser services and the GradLab
// kernel, started from the extensions `gradlab lite build` bundles (kernel/cli/lite.ts generates the
// entry that imports them and calls main). Plugins are registered first, the service manager resolved
// from them (JupyterLite's services-extension provides it), then the application starts.
import { JupyterLab } from "@jupyterlab/application";
import { PageConfig } from "@jupyterlab/coreutils";
import { IServiceManager } from "@jupyterlab/services";
import { PluginRegistry } from "@lumino/coreutils";

type Plugin = { id: string; [k: string]: unknown };
type Extension = { default?: Plugin | Plugin[] } | Plugin | Plugin[];

function plugins(ext: Extension): Plugin[] {
  const exp = ext && typeof ext === "object" && "default" in ext && ext.default !== undefined ? ext.default : ext;
  const all = (Array.isArray(exp) ? exp : [exp]) as Plugin[];
  return all.filter((p) => p && typeof p.id === "string" && !PageConfig.Extension.isDisabled(p.id));
}

export async function main(extensions: Extension[], mimeExtensions: Extension[]): Promise<void> {
  const registry = new PluginRegistry();
  const all = extensions.flatMap(plugins);
  registry.registerPlugins(all as never);
  const serviceManager = await registry.resolveRequiredService(IServiceManager);
  const app = new JupyterLab({
    pluginRegistry: registry,
    serviceManager,
    mimeExtensions: mimeExtensions.flatMap(plugins) as never,
    availablePlugins: all as never,
  });
  // the browser tier and a curious teacher reach the app from the console
  (window as unknown as { jupyterapp: unknown }).jupyterapp = app;
  await app.start({ bubblingKeydown: true });
  await app.restored;
}
