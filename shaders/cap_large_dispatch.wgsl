// Capability rung large-dispatch: more workgroups than one dimension allows, split over x and y
// as kernels must split them; each workgroup writes its linear index once. The host asks for a
// count that leaves the last row of the grid partly empty, so the kernel must skip those.
struct Params {
    count: u32,
    groups_x: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> p: Params;

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {
    let linear = wid.y * p.groups_x + wid.x;
    if (linear < p.count) {
        out[linear] = linear ^ 0x5a5a5a5au;
    }
}
