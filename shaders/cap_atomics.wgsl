// Capability rung atomics: atomicAdd on storage from many workgroups at once; the count of
// invocations and the sum of their local indices must be exact.
const WG: u32 = 64u;

@group(0) @binding(0) var<storage, read_write> counters: array<atomic<u32>, 2>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    atomicAdd(&counters[0], 1u);
    atomicAdd(&counters[1], lid.x);
}
