// PyTorch's format_size (c10/cuda/CUDACachingAllocator.cpp): bytes, KiB, MiB or GiB with two decimals.
export function formatBytes(n: number): string {
  if (n <= 1024) return `${n} bytes`;
  if (n <= 1048576) return `${(n / 1024).toFixed(2)} KiB`;
  if (n <= 1073741824) return `${(n / 1048576).toFixed(2)} MiB`;
  return `${(n / 1073741824).toFixed(2)} GiB`;
}
