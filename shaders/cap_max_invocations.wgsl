// Capability rung max-invocations: one workgroup of the device's largest size (the probe writes
// it as __INVOCATIONS__, at most max-compute-workgroup-size-x); each invocation writes its index
// plus its workgroup's first index.
const WG: u32 = __INVOCATIONS__u;

@group(0) @binding(0) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    out[wid.x * WG + lid.x] = lid.x + wid.x * 1000003u;
}
