export async function runNotebookCli(_a: string[]): Promise<number> { return 1; }
