// Capability rung subgroups: subgroupAdd and subgroupMin over u32, exact. Each invocation writes
// its subgroup's sum of v, the lowest local index in its subgroup (which names the subgroup, so the
// host needs no assumption about how invocations are grouped), subgroupAdd(1) and the subgroup
// size the hardware reports.
// requires: subgroup
// (no `enable subgroups;`: naga in wgpu 0.32 rejects it and takes the builtins with the feature)

const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> v: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<u32>>;

@compute @workgroup_size(WG)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(subgroup_size) size: u32,
) {
    let value = v[gid.x];
    let sum = subgroupAdd(value);
    let leader = subgroupMin(gid.x);
    let members = subgroupAdd(1u);
    out[gid.x] = vec4<u32>(sum, leader, members, size);
}
