// Node names as Python shows them. name() keeps PyTorch's C++ namespace for the hand-written nodes
// (torch::autograd::AccumulateGrad, CopySlices, ...), as torch's name() does; their Python class
// names (str(), graphs, leak chains) drop it. A leaf module: autograd, viz and utils all read it.

/** The Python class name of a node from its name(): `torch::autograd::AccumulateGrad` -> `AccumulateGrad`. */
export const pyName = (name: string): string => name.replace(/^torch::autograd::/, "");
