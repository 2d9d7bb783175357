// RMSNorm for throughput, with the per-invocation loop unrolled by the host (probes/bench.py,
// unrolled_source) into named vec4 values v0, v1, ...: on an H200 a loop over an array of 8 vec4
// ran at under half the bandwidth of one over 4 (docs/gpu-h200.md, the kernel variants).
// A workgroup of WG invocations normalises WG / TPR rows, TPR invocations per row, reduced with
// subgroupAdd (TPR must be a multiple of the subgroup size). The host writes the loads and the
// stores in place of the two marker lines.
struct Params {
    rows: u32,
    d4: u32,
    eps: f32,
    groups_x: u32,
}

const WG: u32 = {{WG}}u;
const TPR: u32 = {{TPR}}u;
const RPW: u32 = WG / TPR;

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> partial: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lid: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let r = lid / TPR;
    let t = lid % TPR;
    let row = (wid.x + wid.y * p.groups_x) * RPW + r;
    let live = row < p.rows;
    let base = row * p.d4;
    var acc = 0.0;
    // LOADS
    acc = subgroupAdd(acc);
    if (sg_lid == 0u) {
        partial[lid / sg_size] = acc;
    }
    workgroupBarrier();
    let per = TPR / sg_size;
    var total = 0.0;
    for (var s = r * per; s < (r + 1u) * per; s = s + 1u) {
        total = total + partial[s];
    }
    let inv = inverseSqrt(total / f32(p.d4 * 4u) + p.eps);
    // STORES
}
