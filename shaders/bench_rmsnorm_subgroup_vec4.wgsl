// RMSNorm for throughput, reduced with subgroup operations: y = x * inverseSqrt(mean(x^2) + eps) * w.
// As bench_rmsnorm_vec4.wgsl (one workgroup per row, x read once into registers), but each
// subgroup sums its invocations with subgroupAdd and only the per-subgroup sums go through
// workgroup memory: one barrier instead of log2(WG) + 1. Needs the `subgroup` device feature.
// WG and VPT are substituted by the host before compilation ({{WG}}, {{VPT}}).
struct Params {
    rows: u32,
    d4: u32,
    eps: f32,
    rows_per_dim: u32,
}

const WG: u32 = {{WG}}u;
const VPT: u32 = {{VPT}}u;

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
    // row is uniform across the workgroup, so the early exit keeps the barrier in uniform control flow
    let row = wid.x + wid.y * p.rows_per_dim;
    if (row >= p.rows) {
        return;
    }
    let base = row * p.d4;
    var v: array<vec4<f32>, VPT>;
    var acc = 0.0;
    for (var k = 0u; k < VPT; k = k + 1u) {
        let i = lid + k * WG;
        if (i < p.d4) {
            v[k] = x[base + i];
            acc = acc + dot(v[k], v[k]);
        }
    }
    acc = subgroupAdd(acc);
    if (sg_lid == 0u) {
        partial[lid / sg_size] = acc;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var s = 0u; s < WG / sg_size; s = s + 1u) {
        total = total + partial[s];
    }
    let inv = inverseSqrt(total / f32(p.d4 * 4u) + p.eps);
    for (var k = 0u; k < VPT; k = k + 1u) {
        let i = lid + k * WG;
        if (i < p.d4) {
            y[base + i] = v[k] * inv * w[i];
        }
    }
}
