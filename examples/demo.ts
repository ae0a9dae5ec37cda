// GradLab in a plain Node script: the device, a few ops, and the allocator's view of memory.
// Run: npm run demo   (node bin/gradlab.js run examples/demo.ts)
import * as torch from "gradlab";

const props = await torch.cuda.get_device_properties();
console.log(`device: ${props.name} (backend ${props.backend}, ${props.feature_level} feature level)`);
console.log(`capacity: ${(props.total_memory / 2 ** 30).toFixed(2)} GiB, max binding ${(props.limits.maxStorageBufferBindingSize / 2 ** 20).toFixed(0)} MiB`);

torch.manual_seed(0);
const x = torch.randn(64, 128);
const w = torch.randn(128, 256);
const b = torch.zeros(256);
console.log(`\nafter x, w, b:        memory_allocated = ${torch.cuda.memory_allocated()} B, reserved = ${torch.cuda.memory_reserved()} B`);

const h = torch.scope(() => x.matmul(w).add(b).relu()); // temporaries die with the scope
console.log(`after h = relu(xw+b): memory_allocated = ${torch.cuda.memory_allocated()} B`);
const probs = h.softmax(-1);
// The sums and views made just for printing are temporaries too.
await torch.scope(async () => {
  await torch.print("row sums of softmax(h):", probs.sum(-1).getitem(":4"));
  await torch.print("h[:2, :4] =", h.getitem(":2, :4"));
});

torch.del(h, probs);
console.log(`\nafter del h, probs:   memory_allocated = ${torch.cuda.memory_allocated()} B, reserved = ${torch.cuda.memory_reserved()} B (cached)`);
torch.cuda.empty_cache();
console.log(`after empty_cache():  reserved = ${torch.cuda.memory_reserved()} B`);
console.log(`peak: max_memory_allocated = ${torch.cuda.max_memory_allocated()} B\n`);
console.log(torch.cuda.memory_summary());
