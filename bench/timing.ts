// Timing shared by the GFLOP/s benchmarks (bench/matmul.ts, bench/matmul-tiles.ts): lavapipe's threads run in
// this process, so its CPU time is the device's as well as the host's.

/** Best wall-clock ms of `reps` runs, and the least CPU ms (all threads of this process) of one. */
export async function timeIt(reps: number, run: () => Promise<void>): Promise<{ wall: number; cpu: number }> {
  await run(); // warm-up: compile, allocate
  let wall = Infinity;
  let cpu = Infinity;
  for (let i = 0; i < reps; i++) {
    const u0 = process.cpuUsage();
    const t0 = performance.now();
    await run();
    wall = Math.min(wall, performance.now() - t0);
    const u = process.cpuUsage(u0);
    cpu = Math.min(cpu, (u.user + u.system) / 1000);
  }
  return { wall, cpu };
}
