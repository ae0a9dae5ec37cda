// PyTorch raises RuntimeError/IndexError/TypeError from C++; GradLab keeps the same class names so that
// a learner reading an error recognises it, and `name` shows in Jupyter tracebacks as ename.

export class RuntimeError extends Error {
  override name = "RuntimeError";
}
export class IndexError extends Error {
  override name = "IndexError";
}
export class TypeError_ extends Error {
  override name = "TypeError";
}
export class ValueError extends Error {
  override name = "ValueError";
}

/** torch.OutOfMemoryError (torch.cuda.OutOfMemoryError is the same class in PyTorch 2). */
export class OutOfMemoryError extends RuntimeError {
  override name = "OutOfMemoryError";
}
